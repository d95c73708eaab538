// The maps the views of many heads read (the model view, the head statistics, the head view,
// rollout): a model's own pass, every layer × head (causal, τ = 1: what the model computes, not
// the shown layer's edits), or a scenario's forward pass, its heads as one layer; and their
// summary, made once per pass.
#pragma once

#include "app/state/app_state.hpp"
#include "app/state/source.hpp"

namespace attnviz::app {

// The layer of those maps that the views of one layer show (the heatmap's, the head view's, the
// comparison's, the query–key map's, rollout's last): a model's or an import's selected layer, or
// the scenario's one layer (0). The one rule every view of one layer follows.
int shownMapLayer(const AppState& state);

// The pass the maps are of.
PassKey headSummaryKey(const AppState& state);
// Whether state.headSummary is of the current pass.
bool headSummaryCurrent(const AppState& state);
// Thumbnails at most this many texels a side (a few dozen: 1,200 tiles of GPT-2 XL stay small).
inline constexpr int kThumbnailTexels = 48;
// Makes state.headSummary for the current pass when it is not current and the maps are ready;
// returns whether it is current now.
bool summarizeHeads(AppState& state);

}  // namespace attnviz::app
