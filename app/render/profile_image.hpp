// Line plots side by side as a figure: a head's profile (attention by distance on log–log axes, the
// mass on the first tokens across positions), the selected head over the layer's other heads and a
// reference curve, a legend below. Drawn without a window: PNG and SVG from one layout. The axes'
// ticks are shared with the window's plot of the same curves.
#pragma once

#include "core/attention/colormap.hpp"

#include <string>
#include <utility>
#include <vector>

namespace attnviz::render {

struct PlotAxis {
    std::string caption;
    bool log = false;
    double lo = 0, hi = 1;  // the axis' span; on a log axis powers of ten, lo > 0
    // Where v falls along the axis, 0 (lo) … 1 (hi), clamped; v ≤ 0 on a log axis is 0.
    double at(double v) const;
};

struct PlotCurve {
    // The points, in order; a point not finite, or not > 0 on a log axis, breaks the line there.
    std::vector<double> x, y;
    core::Rgb colour{0, 0, 0};
    float width = 1.5f, opacity = 1.0f;
    bool dashed = false;
    bool dots = false;  // a dot at each point
};
struct PlotMarker {  // a dashed vertical line across the plot, its label at the top
    double x = 0;
    std::string label;
};
struct LinePlot {
    std::string title;
    PlotAxis x, y;
    std::vector<PlotCurve> curves;  // drawn in order: the one on top last
    std::vector<PlotMarker> markers;
};
struct LegendEntry {
    std::string label;
    core::Rgb colour{0, 0, 0};
    float width = 1.5f, opacity = 1.0f;
    bool dashed = false;
};
struct LinePlotsFigure {
    std::string title, subtitle;
    std::vector<LinePlot> plots;  // side by side, 1 to 3
    std::vector<LegendEntry> legend;
    std::string note;  // a line under the legend (the rule), cut to the figure's width
};

// The most points a figure takes, over every curve (the image and the SVG stay bounded).
inline constexpr std::size_t kMaxPlotPoints = 1u << 20;

// Throw core::InputError on no plot or more than 3, an axis that is empty or a log axis from 0 or
// below, curves whose x and y differ in length, or more than kMaxPlotPoints points.
std::string renderLinePlotsPng(const LinePlotsFigure& figure);
std::string renderLinePlotsSvg(const LinePlotsFigure& figure);
// The file for OUT.png or OUT.svg (chosen by the extension); InputError names the path.
std::string encodeLinePlots(const std::string& path, const LinePlotsFigure& figure);

}  // namespace attnviz::render
