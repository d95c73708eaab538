// Value-weighted attention as a figure: one head's map of ‖α_ij v_j W_O^h‖ (what key j writes into
// query i's residual through the head), coloured on its own scale from 0 to its largest value, with
// the tokens on both axes, a colour bar in the map's units and a note that rows do not sum to 1.
// Drawn without a window: PNG and SVG from one layout.
#pragma once

#include "core/attention/colormap.hpp"
#include "core/base/matrix.hpp"

#include <string>
#include <vector>

namespace attnviz::render {

struct ValueWeightedFigure {
    core::Mat map;                       // [T_q, T_k] ‖α_ij v_j W_O‖ ≥ 0
    core::MaskMat blocked;               // [T_q, T_k] true = masked (hatched); empty = none
    std::vector<std::string> rowLabels;  // [T_q] queries; empty = numbered
    std::vector<std::string> colLabels;  // [T_k] keys; empty = numbered
    std::string title;                   // drawn above; "" = none
    std::string subtitle;                // what the values are, under the title
    core::ColormapKind colormap = core::ColormapKind::Viridis;
};

// The most tokens a side the figure takes (a cell is at least a pixel; the image stays under the
// canvas's limit).
inline constexpr int kMaxValueWeightedTokens = 4096;

// Throw core::InputError on an empty map, labels or a mask that do not match, values that are
// negative or not finite, or more tokens than kMaxValueWeightedTokens.
std::string renderValueWeightedPng(const ValueWeightedFigure& figure);
std::string renderValueWeightedSvg(const ValueWeightedFigure& figure);
// The file for OUT.png or OUT.svg (chosen by the extension); InputError names the path.
std::string encodeValueWeighted(const std::string& path, const ValueWeightedFigure& figure);

}  // namespace attnviz::render
