// The query–key map as a view of the selected head: its queries and keys as the head reads them
// (a checkpoint's kept q and k of the selected layer, after bias, q/k norm and rotary positions; a
// scenario's projected and rotated q and k), made once per pass, layer and head (never per frame).
#pragma once

#include "app/state/app_state.hpp"

#include <vector>

namespace attnviz::app {

// What state.queryKey must be of now (the selected head; -1 for the mean, which has no map).
QueryKeyView::Key queryKeyKey(const AppState& state);
bool queryKeyCurrent(const AppState& state);
// Makes state.queryKey when it is not current and the head's projections are ready (a scenario's
// heads are finished a frame each); returns whether it is current now. A head the map cannot be
// made of (the mean over heads, values that are not finite) leaves no points and says why.
bool refreshQueryKeyMap(AppState& state);
// The map when it is current and made; else null.
const core::QueryKeyMap* shownQueryKeyMap(const AppState& state);
// The selected head's weights row of `query`, from the same pass as the map (empty when there is
// none): what the map's lines from that query to its strongest keys read.
core::RowVec queryKeyWeights(const AppState& state, int query);
// The `count` keys `query` weighs most, strongest first (core::strongestKeys).
std::vector<int> queryKeyLines(const AppState& state, int query, int count);
// "Layer 3 · head 2" / "Head 2", for the panel and the figure.
std::string queryKeyCaption(const AppState& state);

}  // namespace attnviz::app
