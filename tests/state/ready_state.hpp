// A state on a preset with every head computed: where most state tests start.
#pragma once

#include "app/state/actions.hpp"
#include "core/scenario/presets.hpp"
#include "tests/tiny_gpt2.hpp"

#include <filesystem>
#include <string>

namespace attnviz::app::testing {

inline AppState ready(const std::string& preset = "default") {
    AppState s = makeState(core::loadPreset(preset));
    recompute(s);
    return s;
}

// The tiny GPT-2 checkpoint (seed 7) written into `dir`, on " the the he then", every head computed.
inline AppState readyTinyGpt2(const std::filesystem::path& dir) {
    tinygpt2::writeCheckpoint(dir, tinygpt2::weights(7));
    core::Scenario sc;
    sc.model = dir.string();
    sc.sentence = " the the he then";
    sc.causal = true;
    AppState state = makeState(sc);
    recompute(state);
    return state;
}

}  // namespace attnviz::app::testing
