// Heatmap figures drawn without a window or GL: PNG (for slides) and SVG (vector, for papers).
// Same colormap tables and rounding as the window's heatmap textures (core/attention/colormap.hpp).
#pragma once

#include "core/attention/colormap.hpp"
#include "core/base/matrix.hpp"

#include <string>
#include <vector>

namespace attnviz::render {

struct HeatmapFigure {
    std::vector<std::string> rowLabels;  // [T_q] queries (rows)
    std::vector<std::string> colLabels;  // [T_k] keys (columns)
    core::Mat weights;                   // [T_q, T_k], values in [0, 1]
    long long keys = 0;                  // the map's keys when weights are its blocks' means; 0: weights.cols()
    core::MaskMat blocked;               // [T_q, T_k] true = masked; empty = nothing masked
    std::string title;                   // drawn above the matrix; "" = none
    core::ColormapKind colormap = core::ColormapKind::Viridis;
    core::ColourScale scale = core::ColourScale::Fixed;  // how weights become colours (the window's choice)
    float clipQuantile = 0.0f;     // Auto's quantile of the whole map (core::referenceQuantile, PooledMap's); 0: the cells' own
    int cellSize = 0;              // pixels per cell; 0 = automatic (about 720 px for the matrix, 2..64 per cell)
    bool showValues = true;        // print weights inside cells that are big enough
    bool showRowSums = true;       // a Σ column right of the matrix
    long long generatedFrom = -1;  // the first token a model generated (a row and a column): an amber line before it (−1: none)
};

// The encoded files. Throw core::InputError on impossible sizes.
std::string renderHeatmapPng(const HeatmapFigure& figure);
std::string renderHeatmapSvg(const HeatmapFigure& figure);

// The figure's format from the path's extension (.png or .svg, any case): true for PNG; an
// InputError naming the path for any other.
bool heatmapIsPng(const std::string& path);
// The file for OUT.png or OUT.svg (chosen by the extension); InputError names the path.
std::string encodeHeatmap(const std::string& path, const HeatmapFigure& figure);
// Writes it atomically.
void exportHeatmap(const std::string& path, const HeatmapFigure& figure);

}  // namespace attnviz::render
