// One query's attention over the keys as a bar chart, drawn without a window: PNG and SVG, in
// the style of the heatmap figure (same fonts, captions, masked-key hatching idea).
#pragma once

#include <string>
#include <vector>

namespace attnviz::render {

struct BarsFigure {
    std::vector<std::string> keyLabels;  // [T] keys (x axis); empty = numbered
    std::vector<float> weights;          // [T] one row of attention weights, in [0, 1]
    std::vector<bool> blocked;           // [T] true = masked key; empty = none masked
    std::string queryLabel;              // the query token, shown in the subtitle
    int query = 0;                       // its position (0-based), shown counted from 1 as the window does: query 3 "cat"
    std::string title;                   // drawn above the chart; "" = none
    bool logScale = false;               // log y axis from a decade floor (the subtitle names it)
    int generatedFrom = -1;              // the first key a model generated: it and those after in amber (−1: none)
};

// The largest number of keys a bar chart takes: a row of 4 MiB. The chart draws a bar a pixel
// column past its width (the largest weight of that column's keys), so its size does not grow
// with the keys.
inline constexpr int kMaxBarsKeys = 1 << 20;

// The encoded files. Throw core::InputError on sizes that disagree, no keys, more than
// kMaxBarsKeys keys, or weights that are not finite numbers in 0 … 1.
std::string renderBarsPng(const BarsFigure& figure);
std::string renderBarsSvg(const BarsFigure& figure);
// The file for OUT.png or OUT.svg (chosen by the extension); InputError names the path.
std::string encodeBars(const std::string& path, const BarsFigure& figure);

}  // namespace attnviz::render
