// What the model view and its figure show of the state's summary: each head's score of a
// statistic, and the order of the tiles (ModelViewOptions).
#pragma once

#include "app/state/app_state.hpp"

#include <optional>
#include <vector>

namespace attnviz::app {

// Every head's `score`, [layers × heads] layer-major, from the summary (which must be current), the
// induction test's scores when that test has finished on this model, or how far each head moved
// against the compared input when that comparison is made; nullopt when the test or comparison is
// not.
std::optional<std::vector<double>> summaryScores(const AppState& state, core::HeadScore score);

// The tiles' order and rule for the view's options: slot k shows head index order[k]. The
// natural order (and no rule about it) when the options' score is not available.
struct TileLayout {
    std::vector<int> order;
    std::optional<std::vector<double>> scores;  // of the options' score, when it is available
    std::string rule;                           // core::orderRule in words; "" for the natural order untinted
};
TileLayout modelViewLayout(const AppState& state, const ModelViewOptions& options);

// Every thumbnail of the summary in one [layers · side, heads · sideKeys] row-major block of
// texels (one texture for the whole view): slot k (row k / heads, column k % heads) holds the
// thumbnail of head index order[k], by `pooling`.
std::vector<float> thumbnailAtlas(const HeadSummary& summary, const std::vector<int>& order, core::BlockPooling pooling);

}  // namespace attnviz::app
