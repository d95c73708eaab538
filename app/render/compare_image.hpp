// Two inputs' attention as a figure: the same head over input A and input B side by side, and
// B − A on a two-sided scale where their tokens line up (hatched where they do not), A and B in one
// colour scale so that equal colours are equal weights (core::sharedWeightTop). Drawn without a window: PNG and SVG from
// one layout.
#pragma once

#include "core/attention/colormap.hpp"
#include "core/base/matrix.hpp"

#include <string>
#include <vector>

namespace attnviz::render {

struct CompareFigure {
    core::Mat a, b;                              // the two maps [T_q, T_k] (weights in 0 … 1)
    core::MaskMat aBlocked, bBlocked;            // masked cells (empty: none)
    core::Mat difference;                        // [a's shape]: b − a where `lined`
    core::MaskMat lined;                         // [a's shape]: the cell has a partner in b
    std::vector<std::string> aLabels, bLabels;   // the tokens (rows, and columns for self-attention); empty = numbered
    std::string aCaption = "A", bCaption = "B";  // drawn above each map
    std::string subtitle;                        // e.g. the alignment and how far the head moved
    std::string title;                           // drawn above; "" = none
    core::ColormapKind colormap = core::ColormapKind::Viridis;
};

// The most tokens a side a figure takes (the image stays under Canvas::kMaxSide).
inline constexpr int kMaxCompareTokens = 4096;

// The encoded files. Throw core::InputError on empty maps, shapes that do not match, a value that
// is not finite, or more tokens than the limit.
std::string renderComparePng(const CompareFigure& figure);
std::string renderCompareSvg(const CompareFigure& figure);
// The file for OUT.png or OUT.svg (chosen by the extension); InputError names the path.
std::string encodeCompare(const std::string& path, const CompareFigure& figure);

}  // namespace attnviz::render
