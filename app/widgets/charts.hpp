// Charts drawn with ImDrawList, all in one place: bars, lines, colour bars, axis labels.
#pragma once

#include "core/attention/colormap.hpp"

#include <imgui.h>

#include <string>
#include <utility>
#include <vector>

namespace attnviz::widgets {

struct BarChartStyle {
    ImU32 bar = IM_COL32(79, 70, 229, 255);        // indigo, as seed 000 §39.6
    ImU32 highlight = IM_COL32(239, 68, 68, 255);  // red: the query's own key
    ImU32 masked = IM_COL32(150, 150, 160, 110);   // the hatching of a masked key
    bool showValues = true;
    bool showLabels = true;
    float axisLargest = -1.0f;  // >= 0: the axis for this largest weight (charts side by side share one), not the bars' own
};

// Vertical bars of `values` (0..1) in [min, max] on an axis to 1, or to just above the largest
// weight when every weight is far below it (core::weightAxis); bar `highlight` in red; a blocked
// (masked) key has no bar, only a faint hatching. Returns the index of the bar under the mouse,
// or -1.
int barChart(ImDrawList* list, ImVec2 min, ImVec2 max, const std::vector<float>& values, const std::vector<std::string>& labels,
             int highlight, const std::vector<bool>& blocked, const BarChartStyle& style);

struct Series {
    std::vector<float> y;
    ImU32 color;
    std::string label;
};
// How a line plot's x-axis reads: the samples span x = 0 … xMax (n − 1 when xMax < 0), with a
// dot on each line at every whole x when `dotWholeX` (the token positions of a continuous curve),
// and the legend inside the plot at the top right, or nowhere (legend() draws it outside).
// With `unitSteps` sample i stands at x = i, on an axis to xMax however few samples there are yet
// (a run's loss as it trains).
struct LineAxes {
    float xMax = -1.0f;
    bool dotWholeX = false;
    bool legendInside = true;
    bool unitSteps = false;
};
// Lines over the x-axis with y in [yMin, yMax], light grid.
void linePlot(ImDrawList* list, ImVec2 min, ImVec2 max, const std::vector<Series>& series, float yMin, float yMax, const char* xCaption,
              const LineAxes& axes = {});
// The series' colours and names as a row of items that wraps, for a legend beside a plot rather
// than over its lines.
void legend(const std::vector<Series>& series);

// Points (x[i], y[i]) of each series on log–log axes, decades gridded and labelled (x and y
// must be > 0; the axes span every series). Dots at the points, lines between them.
struct LogSeries {
    std::vector<double> x, y;
    ImU32 color;
    std::string label;
};
void logLogPlot(ImDrawList* list, ImVec2 min, ImVec2 max, const std::vector<LogSeries>& series, const char* xCaption, const char* yCaption);

// Lines over axes that are linear or logarithmic each (ticks by core::axisTicks, light grid), the
// captions below and above; a line breaks where a point is not finite (or not > 0 on a log axis);
// dashed vertical markers with labels at the top. Returns the x under the mouse in the data's
// terms, NaN when the mouse is not over the plot. The caller bounds the points (a 16-bit index
// buffer): a few thousand.
struct PlotLine {
    const std::vector<double>* x = nullptr;
    const std::vector<double>* y = nullptr;
    ImU32 color = 0;
    float width = 1.5f;
    bool dashed = false;
    bool dots = false;
};
struct PlotFrame {
    std::string xCaption, yCaption;
    bool logX = false, logY = false;
    double x0 = 0, x1 = 1, y0 = 0, y1 = 1;
    std::vector<std::pair<double, std::string>> markers;
};
double curvePlot(ImDrawList* list, ImVec2 min, ImVec2 max, const std::vector<PlotLine>& lines, const PlotFrame& frame);

// A vertical colour bar of `kind` for lo (bottom) … hi (top) with tick labels on the right; with
// `log`, lo and hi are powers of ten and the ticks read 10^x ("1e-3", "1").
void colorBar(ImDrawList* list, ImVec2 min, ImVec2 max, core::ColormapKind kind, float lo, float hi, int ticks, bool log = false);

// The smallest of 1, 2, 5, 10, 20, 50, … at least `needed`: a step for thinned axis labels that
// counts positions plainly and rarely lines up with a sentence repeated to fill T.
int niceStep(float needed);

// How labels in slots `slot` pixels wide are thinned: tokens at a step of 1 to 4, each whole or
// cut to `width` with "…" (at most `maxTokenW`, at least a few letters), else 1-based positions at a niceStep their widest fits (a long
// sentence, where every few tokens would repeat a pattern rather than say where one is).
struct LabelThinning {
    int step = 1;
    bool tokens = true;
    float width = 0.0f;  // tokens: the width each is cut to
};
LabelThinning thinLabels(const std::vector<std::string>& labels, int first, int last, float slot, float maxTokenW);

// Labels of a matrix drawn at [min, max): each row's label right-aligned in the `labelW` pixels
// left of it, each column's above it (in the line over min.y). Where cells are smaller than the
// text, only every niceStep-th is labelled, as its 1-based position ("12 cat" for a row, "12" for
// a column); `highlightRow` (or -1) is always labelled, in `accent`.
void matrixLabels(ImDrawList* list, ImVec2 min, ImVec2 max, const std::vector<std::string>& rows, const std::vector<std::string>& cols,
                  float labelW, int highlightRow = -1, ImU32 accent = 0);

// A small grid of `values` [rows × cols], row-major, coloured by `kind` over lo … hi, each value
// written in its cell where it fits; row labels right-aligned left of the grid, column labels
// below it, captions above the rows' labels and under the columns'. For a handful of rows and
// columns (at most 64 × 64: the retrieval test's depths × lengths). Returns the cell under the
// mouse (row × cols + col), or -1.
struct GridLabels {
    std::vector<std::string> rows, cols;
    std::string rowCaption, colCaption;
};
int gridChart(ImDrawList* list, ImVec2 min, ImVec2 max, const std::vector<double>& values, int rows, int cols, const GridLabels& labels,
              core::ColormapKind kind, float lo, float hi);

ImU32 toImColor(core::Rgb c, int alpha = 255);
// Black or white, whichever reads better on `background`.
ImU32 contrastingText(core::Rgb background);

}  // namespace attnviz::widgets
