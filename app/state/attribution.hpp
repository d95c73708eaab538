// Direct logit attribution's data (core/models/decoder/attribution.hpp) for the state's pass at
// its view's position and target: made once for what it depends on, read by the attribution
// view (app/views/attribution.hpp) and by the model view when it sorts or tints heads by it.
#pragma once

#include "app/state/app_state.hpp"
#include "app/state/derived.hpp"
#include "core/models/decoder/attribution.hpp"

#include <string>

namespace attnviz::app {

struct AttributionKey {
    PassKey pass;
    int query = -1;
    std::string target;
    bool operator==(const AttributionKey&) const = default;
};
struct AttributionData {
    core::decoder::LogitAttribution terms;
    std::string position, target, minus;  // the labels of the position's token and the target's (minus "": none)
    bool defaultTarget = false;           // the target is the token the model ranks first there
    bool capped = false;                  // the model soft-caps its logits: the terms are of the logit before the cap
    float probability = 0;                // the target's probability there (softmax of the pass's logits at τ = 1)
};
using AttributionView = Derived<AttributionKey, AttributionData>;

// The view's row's refresh: makes the attribution when it is not current and the pass is ready.
bool refreshAttribution(AppState& state);
// The attribution when current (made, or with its reason why not); else null.
const AttributionView* shownAttribution(const AppState& state);
// The attribution of the state's pass at its view's position and target, made here. Throws
// core::InputError naming `where`.
AttributionData makeAttribution(const AppState& state, const std::string& where);

}  // namespace attnviz::app
