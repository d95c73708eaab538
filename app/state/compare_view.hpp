// Comparing two inputs: the state's pass beside the same model's (or scenario's) pass over another
// sentence (ViewState::compareText), their tokens lined up, each head's map side by side with their
// difference, and how far every head moved (the model view's "moved" score). Made once per pass
// and text by refreshCompare, never per frame.
#pragma once

#include "app/state/app_state.hpp"
#include "core/attention/attention_maps.hpp"

#include <string>

namespace attnviz::app {

// The longest input either side of a comparison may have: both passes and every head's maps of
// both are made on the window's thread, which a longer one would keep waiting for seconds.
inline constexpr long long kCompareMostTokens = 2048;

CompareView::Key compareKey(const AppState& state);
bool compareCurrent(const AppState& state);
// Makes state.compare when it is not current, the view asks for one (a non-empty compareText) and
// the state's heads are ready; returns whether it is current now. An input that cannot be compared
// (a scenario of given vectors, a sentence the limits refuse, either input past kCompareMostTokens)
// leaves the reason in state.compare.why.
bool refreshCompare(AppState& state);
// The other input's maps (every layer × head of a model's pass, or a scenario's heads as one layer),
// viewing state.compare: empty when there is no comparison.
core::AttentionMaps compareMaps(const AppState& state);
// The layer of the maps the heatmap's layer is (a model's selected layer; a scenario's only one).
int compareLayer(const AppState& state);
// The other input's tokens as a scenario (the state's scenario with the sentence replaced); throws
// core::InputError(where, …) when the state's input is not a sentence it can replace.
core::Scenario compareScenario(const core::Scenario& scenario, const std::string& text, const std::string& where = "compare");

}  // namespace attnviz::app
