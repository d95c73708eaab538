// Every head's attention map side by side (small multiples), drawn without a window: PNG and
// SVG, with one colour bar that holds for every tile, as the heatmap figure's does for its map.
#pragma once

#include "core/attention/colormap.hpp"
#include "core/base/matrix.hpp"

#include <string>
#include <vector>

namespace attnviz::render {

struct HeadsFigure {
    std::vector<core::Mat> heads;         // [h] each [T_q, T_k], weights in [0, 1]
    bool includeMean = true;              // a first tile "mean", the elementwise mean over heads (when h > 1)
    std::vector<std::string> headLabels;  // [h] above each head's tile; empty = "head 1" … "head h"
    core::MaskMat blocked;                // [T_q, T_k] true = masked, hatched in every tile; empty = none
    std::string title;                    // drawn above the grid; "" = none
    core::ColormapKind colormap = core::ColormapKind::Viridis;
    core::ColourScale scale = core::ColourScale::Fixed;  // as in HeatmapFigure, one decision for all tiles
    int columns = 0;                                     // tiles per row; 0 = automatic (a near-square grid)
};

// The encoded files. Throw core::InputError on no heads, heads of different shapes, values that
// are not finite, labels or a mask that do not match, or more tiles than fit in one image.
std::string renderHeadsPng(const HeadsFigure& figure);
std::string renderHeadsSvg(const HeadsFigure& figure);
// The file for OUT.png or OUT.svg (chosen by the extension); InputError names the path.
std::string encodeHeads(const std::string& path, const HeadsFigure& figure);

}  // namespace attnviz::render
