// The head view as a figure (BertViz's head view on paper): the tokens twice, queries on the
// left and keys on the right, a line from query to key per head shown, its opacity the weight and
// its colour the head's; a legend of the heads, the rule that dropped lines, and the title.
// Drawn without a window: PNG and SVG from one layout.
#pragma once

#include "core/attention/head_lines.hpp"

#include <string>
#include <vector>

namespace attnviz::render {

struct HeadViewFigure {
    int tokens = 0;                       // T: the rows of each column (queries are the first keys)
    std::vector<std::string> labels;      // [T] the tokens; empty = numbered
    std::vector<int> heads;               // the heads shown (legend order); lines of other heads are refused
    std::vector<std::string> headLabels;  // [heads.size()] legend text; empty = "head 1" … (counted from 1)
    std::vector<core::HeadLine> lines;    // the lines to draw (core::headLines), weights in 0 … 1
    long long readable = 0;               // lines before the rule dropped any (HeadLines::readable)
    std::string rule;                     // the rule in words (HeadLineRule::describe)
    int query = -1;                       // a query isolated (its label bold, others dimmed); -1 = none
    int queryPosition = -1;               // that query's position when the rows are not the positions (a folded input); -1: query
    std::string title;                    // drawn above; "" = none
};

// The most tokens and lines a figure takes (an image stays under Canvas::kMaxSide, an SVG a few MB).
inline constexpr int kMaxHeadViewTokens = 2048;
inline constexpr int kMaxHeadViewLines = 100000;

// Geometry both back ends and the tests share: the row of token i is centred on y = rowY(i), a
// pixel centre; query anchors at x = queryX, key anchors at x = keyX.
struct HeadViewGeometry {
    int width = 0, height = 0;
    int top = 0, rowH = 0;
    float queryX = 0, keyX = 0;
    float rowY(int i) const { return static_cast<float>(top + i * rowH + rowH / 2) + 0.5f; }
};
// Throws core::InputError as the renderers do.
HeadViewGeometry headViewGeometry(const HeadViewFigure& figure);

// The encoded files. Throw core::InputError on no tokens or heads, more than the limits, labels
// that do not match, a line outside the tokens or heads, or a weight that is not in 0 … 1.
std::string renderHeadViewPng(const HeadViewFigure& figure);
std::string renderHeadViewSvg(const HeadViewFigure& figure);
// The file for OUT.png or OUT.svg (chosen by the extension); InputError names the path.
std::string encodeHeadView(const std::string& path, const HeadViewFigure& figure);

}  // namespace attnviz::render
