// The query–key map as a figure (AttentionViz's joint view, core/attention/query_key_map.hpp): one
// head's queries (diamonds, orange) and keys (squares, blue) on PC1 and PC2, equal units on both
// axes, lighter for earlier positions; the selected query ringed and joined to its strongest keys,
// their tokens named. Drawn without a window: PNG and SVG from one layout; JSON holds the numbers.
#pragma once

#include "core/attention/colormap.hpp"
#include "core/attention/query_key_map.hpp"

#include <string>
#include <vector>

namespace attnviz::render {

// Query and key colours: a light shade for the first position to a deep one for the last
// (ColorBrewer Oranges and Blues, 3 → 7). The window draws with the same.
core::Rgb qkMapColour(bool key, long long position, long long count);

struct QkMapFigure {
    core::QueryKeyMap map;
    std::vector<std::string> queryLabels, keyLabels;  // [T_q], [T_k]; empty = numbered
    int query = -1;                                   // the selected query, ringed (-1 = none)
    std::vector<int> strongest;                       // its strongest keys, joined to it
    std::vector<float> strongestWeights;              // their weights (0 … 1)
    std::string title;                                // drawn above; "" = none
};

// The most points a figure takes (an SVG stays a few MB).
inline constexpr long long kMaxQkMapPoints = 65536;

// The encoded files. Throw core::InputError on no points, more than the limit, labels that do not
// match, or a selected query or key outside the map.
std::string renderQkMapPng(const QkMapFigure& figure);
std::string renderQkMapSvg(const QkMapFigure& figure);
// {"scale", "shift", "mean_norm", "explained", "components" [d][2], "centre", "queries": [{"position",
// "token", "pc1", "pc2"}], "keys": [...], "query", "strongest"}.
std::string renderQkMapJson(const QkMapFigure& figure);
// Throws InputError naming the path unless it ends in .png, .svg or .json.
void checkQkMapPath(const std::string& path);
// The file for OUT.png, OUT.svg or OUT.json (by the extension); InputError names the path.
std::string encodeQkMap(const std::string& path, const QkMapFigure& figure);

}  // namespace attnviz::render
