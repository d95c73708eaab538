// A state on a preset with every head computed: where most state tests start.
#pragma once

#include "app/state/actions.hpp"
#include "core/scenario/presets.hpp"

#include <string>

namespace attnviz::app::testing {

inline AppState ready(const std::string& preset = "default") {
    AppState s = makeState(core::loadPreset(preset));
    recompute(s);
    return s;
}

}  // namespace attnviz::app::testing
