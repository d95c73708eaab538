// Attention rollout as a view of the heatmap and the per-query bars: R of the state's pass up to
// the selected layer under the view's rule, made once per pass, layer and rule (never per frame).
#pragma once

#include "app/state/app_state.hpp"

namespace attnviz::app {

// The rule the view asks for. The first key is never left out here: the view has no switch for it
// yet (core::RolloutOptions::skipFirstKey).
core::RolloutOptions rolloutOptions(const ViewState& view);
// The last layer multiplied in: a model's selected layer, a scenario's one layer (0).
int rolloutLayer(const AppState& state);
// What state.rollout must be of now.
RolloutView::Key rolloutKey(const AppState& state);
bool rolloutCurrent(const AppState& state);
// Makes state.rollout when it is not current and every head's weights are ready (a scenario's
// heads are finished a frame each); returns whether it is current now. A pass rollout cannot
// read (cross-attention) leaves the matrix empty and says why in state.rollout.why.
bool refreshRollout(AppState& state);
// R when the view shows rollout and it is current and made; else null.
const core::Mat* shownRollout(const AppState& state);
// The cells R cannot reach, as the view masks them: only the causal mask's future keys (a model's
// pass, or a causal scenario). A layer's window or padding is not R's: R reads past it through
// the layers below.
core::Settings rolloutMask(const AppState& state);
// The text the view shows beside the matrix: "rollout up to layer 3 · mean over heads".
std::string rolloutCaption(const AppState& state);
// What rollout leaves out, for a tooltip.
inline constexpr const char* kRolloutIgnores =
    "Attention rollout (Abnar & Zuidema 2020) multiplies each layer's heads, fused and mixed half-and-half with the "
    "identity, from the first layer up: row i says how much each input token flows into position i. It ignores the "
    "values (a head reading a token whose value is near zero still moves it), the MLPs, LayerNorm, and the residual's "
    "real weight against the attention's (½ is a guess, the same in every layer).";

}  // namespace attnviz::app
