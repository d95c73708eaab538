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

// Whether the options sort or tint the tiles by their score (so that it is needed).
bool scoresTiles(const ModelViewOptions& options);

// The tiles' order and rule for the view's options: slot k shows head index order[k]. The
// natural order (and no rule about it) when the options' score is not available.
struct TileLayout {
    std::vector<int> order;
    std::optional<std::vector<double>> scores;  // of the options' score, when it is available
    std::string rule;                           // core::orderRule in words; "" for the natural order untinted
};
TileLayout modelViewLayout(const AppState& state, const ModelViewOptions& options);

// The texels of each thumbnail a sentence pair's filter keeps (pairBlock): rows [r0, r1) and
// columns [c0, c1), every texel that pools a weight of the block (one on the boundary between the
// sentences pools weights of both); the whole thumbnail for one text or the filter All.
struct TileCrop {
    Eigen::Index r0 = 0, r1 = 0, c0 = 0, c1 = 0;
    Eigen::Index rows() const { return r1 - r0; }
    Eigen::Index cols() const { return c1 - c0; }
    bool operator==(const TileCrop&) const = default;
};
TileCrop tileCrop(const AppState& state);

// Where a panel puts the tiles: the layers wrap into `groups` columns of `perGroup` layers each
// (the last may hold fewer), side by side, each with its own layer labels `labelW` wide and `gap`
// apart, when that makes the tiles at least a quarter larger than fewer groups do: a model of few
// heads over many layers (Gemma 3 270M's 4 × 18) fills a wide panel instead of a strip at its
// left. `tile` is a tile's width and `tileH` its height (`aspect` = height / width), whole pixels,
// at least 2; `roomW` × `roomH` holds every group with its labels.
struct TileGrid {
    int groups = 1, perGroup = 0;
    float tile = 2.0f, tileH = 2.0f;
    bool operator==(const TileGrid&) const = default;
};
TileGrid tileGrid(int layers, int heads, float aspect, float roomW, float roomH, float labelW, float gap);

// Every thumbnail of the summary, cropped to `crop`, in one [layers · rows, heads · cols] row-major
// block of texels (one texture for the whole view): slot k (row k / heads, column k % heads)
// holds the thumbnail of head index order[k], by `pooling`.
std::vector<float> thumbnailAtlas(const HeadSummary& summary, const std::vector<int>& order, core::BlockPooling pooling,
                                  const TileCrop& crop);
// Every head's thumbnail cropped to `crop`, [layers × heads] layer-major, each rows × cols.
std::vector<float> croppedThumbnails(const HeadSummary& summary, core::BlockPooling pooling, const TileCrop& crop);

}  // namespace attnviz::app
