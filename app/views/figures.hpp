// Each view's figure, made from the state as the window shows it: the one builder the window's
// Export dialog and the command line's --export-… both call, so that a figure exported from
// either is the same file. A builder brings the view's derived data up to date (the summary of
// every head, the comparison, the query–key map) and throws core::InputError, named by the
// request's `where`, when the view has nothing to draw.
#pragma once

#include "app/render/bars_image.hpp"
#include "app/render/compare_image.hpp"
#include "app/render/head_view_image.hpp"
#include "app/render/heads_image.hpp"
#include "app/render/heatmap_image.hpp"
#include "app/render/model_view_image.hpp"
#include "app/render/qk_map_image.hpp"
#include "app/state/app_state.hpp"

#include <string>
#include <vector>

namespace attnviz::app {

// What an export asks beyond the state's view.
struct FigureRequest {
    std::string where;      // what an error is named by: the command line's flag, or the view's title
    int cellSize = 0;       // the heatmap's pixels per cell (0: about 720 px for the matrix)
    bool markQuery = true;  // the query–key map: the selected query ringed and joined to its strongest keys
};

// "The cat sat · head 1 of 4 · τ = 1.00 · causal": how every figure names what it shows, `heads`
// being the heads' part ("head 2 of 4", "layer 3 · all 12 heads"). A checkpoint's own pass and an
// import's maps are named as such (their softmax is not the scenario's).
std::string figureTitle(const AppState& state, const std::string& heads, bool ownPass = false);

// A long map's figure: at most this many cells a side, each a block's mean.
inline constexpr Eigen::Index kLongFigureCells = 1024;
// The round factor (the least of 1, 2, 5, 10, 20, 25, 50, 100, … at least the factor needed, so
// that the labels every 10 cells fall on round positions: 0, 200, 400, …) that pools a [queries, keys] map to at most kLongFigureCells a side.
int longFigureFactor(Eigen::Index queries, Eigen::Index keys);
// A pooled map's cells made ready for a figure: the masked texels (core::kMaskedTexel) set to 0
// and returned as the mask (empty when none is masked).
core::MaskMat takeMaskedTexels(core::Mat& cells);
// The labels of n cells that are blocks of `factor` tokens: each block's first position.
std::vector<std::string> blockLabels(Eigen::Index n, int factor);

render::HeatmapFigure heatmapFigure(const AppState& state, const FigureRequest& request);
render::BarsFigure barsFigure(const AppState& state, const FigureRequest& request);
render::HeadsFigure headsFigure(const AppState& state, const FigureRequest& request);
render::ModelViewFigure modelViewFigure(AppState& state, const FigureRequest& request);
render::HeadViewFigure headViewFigure(const AppState& state, const FigureRequest& request);
render::CompareFigure compareFigure(AppState& state, const FigureRequest& request);
render::QkMapFigure qkMapFigure(AppState& state, const FigureRequest& request);

}  // namespace attnviz::app
