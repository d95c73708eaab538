// The model view as a figure, drawn without a window: every layer × head as a thumbnail (rows =
// layers, columns = heads, or a grid ranked by a statistic), one colour bar for all tiles, the
// ordering rule. PNG and SVG.
#pragma once

#include "core/attention/colormap.hpp"
#include "core/attention/head_order.hpp"

#include <string>
#include <vector>

namespace attnviz::render {

struct ModelViewFigure {
    int layers = 0, heads = 0, firstLayer = 0;  // firstLayer: the number (from 0) of the first layer shown
    int side = 0, sideKeys = 0;                 // a thumbnail's texels: rows (queries) × columns (keys)
    std::vector<float> thumbnails;              // [layers × heads] thumbnails, layer-major, each side × sideKeys weights
                                                // (a block's mean or maximum; core::kMaskedTexel where all of it is masked)
    core::TileOrder order = core::TileOrder::Natural;
    std::vector<int> slots;        // slot k (row-major) shows head index slots[k]; empty = layer-major order
    std::vector<double> tint;      // [layers × heads] scores a bar under each tile shows (its width at the largest); empty = none
    std::string title;             // drawn above the grid; "" = none
    std::string pooling;           // what a texel is, for the subtitle ("block means of 6 × 6 weights"); "" = one weight
    std::string rule;              // the ordering and tint rule ("sorted by …"); "" = none
    long long keys = 0;            // the maps' keys (the log scale's floor)
    long long generatedFrom = -1;  // the first token a model generated: an amber line before it in each tile (−1: none)
    core::ColormapKind colormap = core::ColormapKind::Viridis;
    core::ColourScale scale = core::ColourScale::Auto;  // one decision for all tiles; per row is drawn stretched
};

// The encoded files. Throw core::InputError on no heads, thumbnails of the wrong size, values
// that are not finite, slots that are not a permutation, or more tiles than fit in one image.
std::string renderModelViewPng(const ModelViewFigure& figure);
std::string renderModelViewSvg(const ModelViewFigure& figure);
// The file for OUT.png or OUT.svg (chosen by the extension); InputError names the path.
std::string encodeModelView(const std::string& path, const ModelViewFigure& figure);

// The pixel box of slot k's thumbnail in the figure (tests read colours there).
struct TileBox {
    int x = 0, y = 0, cell = 1;  // top-left pixel and pixels per texel
};
TileBox modelViewTile(const ModelViewFigure& figure, int slot);

}  // namespace attnviz::render
