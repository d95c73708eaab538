// Line plots as a figure (profile_image.hpp): points placed on log and linear axes as the axes say,
// a line broken where a point cannot be drawn, the same curve in the PNG's pixels, the axes' ticks,
// and every bad figure refused in one line.
#include "app/render/profile_image.hpp"
#include "core/base/error.hpp"
#include "core/base/format.hpp"
#include "tests/render/figure_checks.hpp"

#include <gtest/gtest.h>

#include <sstream>

using namespace attnviz;
using namespace attnviz::render;

namespace {

// The points of every <polyline> of the curves group, in order.
std::vector<std::vector<std::pair<double, double>>> polylines(const std::string& svg) {
    std::vector<std::vector<std::pair<double, double>>> out;
    const std::string group = figurecheck::svgGroup(svg, "curves");
    for (std::size_t at = group.find("<polyline points=\""); at != std::string::npos; at = group.find("<polyline points=\"", at + 1)) {
        const std::size_t begin = at + 18, end = group.find('"', begin);
        std::istringstream in(group.substr(begin, end - begin));
        std::vector<std::pair<double, double>> points;
        std::string pair;
        while (in >> pair) {
            const std::size_t comma = pair.find(',');
            points.emplace_back(std::stod(pair.substr(0, comma)), std::stod(pair.substr(comma + 1)));
        }
        out.push_back(points);
    }
    return out;
}

LinePlotsFigure diagonal() {
    LinePlotsFigure f;
    f.title = "a power law";
    LinePlot p;
    p.title = "log–log";
    p.x = {"x", true, 1, 100};
    p.y = {"y", true, 0.01, 1};
    p.curves.push_back({{1, 10, 100}, {1, 0.1, 0.01}, {220, 20, 20}, 3.0f});
    f.plots = {p};
    f.legend = {{"the curve", {220, 20, 20}}};
    return f;
}

TEST(LinePlots, PointsFallWhereTheLogAxesPutThem) {
    const std::string svg = renderLinePlotsSvg(diagonal());
    const auto lines = polylines(svg);
    ASSERT_EQ(lines.size(), 2u);  // the curve, then the legend's swatch
    const auto& c = lines[0];
    ASSERT_EQ(c.size(), 3u);
    EXPECT_NEAR(c[2].first - c[0].first, 470.0, 1e-9);             // the plot's width: two decades
    EXPECT_NEAR(c[2].second - c[0].second, 300.0, 1e-9);           // its height, downwards
    EXPECT_NEAR(c[1].first, (c[0].first + c[2].first) / 2, 1e-9);  // 10 halfway on a log axis
    EXPECT_NEAR(c[1].second, (c[0].second + c[2].second) / 2, 1e-9);

    // The PNG draws the same line: red at the middle point, white well off it.
    const figurecheck::Image img = figurecheck::decodePng(renderLinePlotsPng(diagonal()));
    const core::Rgb mid = img.at(static_cast<int>(c[1].first), static_cast<int>(c[1].second));
    EXPECT_GT(mid.r, 180);
    EXPECT_LT(mid.g, 120);
    const core::Rgb off = img.at(static_cast<int>(c[1].first) + 60, static_cast<int>(c[1].second) - 60);
    EXPECT_GT(off.g, 200);
}

TEST(LinePlots, ALineBreaksWhereAPointHasNoPlaceOnTheAxis) {
    LinePlotsFigure f = diagonal();
    f.legend.clear();
    f.plots[0].curves[0] = {{1, 2, 3, 5, 8}, {0.5, 0.0, 0.2, std::nan(""), 0.1}, {0, 0, 255}};
    const auto lines = polylines(renderLinePlotsSvg(f));
    ASSERT_EQ(lines.size(), 3u);  // 0 on a log axis and a NaN break it into three runs
    EXPECT_EQ(lines[0].size(), 1u);
    EXPECT_EQ(lines[1].size(), 1u);
    EXPECT_EQ(lines[2].size(), 1u);
    // On a linear axis 0 is a point like any other.
    f.plots[0].y = {"y", false, 0, 1};
    f.plots[0].curves[0].y[3] = 0.3;
    const auto linear = polylines(renderLinePlotsSvg(f));
    ASSERT_EQ(linear.size(), 1u);
    EXPECT_EQ(linear[0].size(), 5u);
}

TEST(LinePlots, AxisTicksAreDecadesOrRoundSteps) {
    std::vector<std::string> labels;
    for (const core::AxisTick& t : core::axisTicks(1e-3, 1000, true)) labels.push_back(t.label);
    EXPECT_EQ(labels, (std::vector<std::string>{"1e-3", "1e-2", "1e-1", "1", "10", "100", "1000"}));
    labels.clear();
    for (const core::AxisTick& t : core::axisTicks(0, 1, false)) labels.push_back(t.label);
    EXPECT_EQ(labels, (std::vector<std::string>{"0.0", "0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7", "0.8", "0.9", "1.0"}));
    labels.clear();
    for (const core::AxisTick& t : core::axisTicks(0, 72, false)) labels.push_back(t.label);
    EXPECT_EQ(labels, (std::vector<std::string>{"0", "10", "20", "30", "40", "50", "60", "70"}));
    EXPECT_TRUE(core::axisTicks(0, 1, true).empty());  // no log axis from 0
    EXPECT_TRUE(core::axisTicks(1, 1, false).empty());
    EXPECT_EQ(core::groupedNumber(1204), "1,204");
    EXPECT_EQ(core::groupedNumber(32768), "32,768");
    EXPECT_EQ(core::groupedNumber(999), "999");
    EXPECT_EQ(core::groupedNumber(1000000), "1,000,000");
    EXPECT_EQ(core::groupedNumber(-4096), "-4,096");
}

TEST(LinePlots, BadFiguresAreRefusedInOneLine) {
    LinePlotsFigure f = diagonal();
    f.plots[0].x.lo = 0;  // a log axis from 0
    EXPECT_THROW(renderLinePlotsSvg(f), core::InputError);
    f = diagonal();
    f.plots[0].curves[0].y.pop_back();
    EXPECT_THROW(renderLinePlotsPng(f), core::InputError);
    f = diagonal();
    f.plots.assign(4, f.plots[0]);
    EXPECT_THROW(renderLinePlotsSvg(f), core::InputError);
    f.plots.clear();
    EXPECT_THROW(renderLinePlotsSvg(f), core::InputError);
    try {
        encodeLinePlots("figure.jpg", diagonal());
        ADD_FAILURE() << "a .jpg was written";
    } catch (const core::InputError& e) {
        EXPECT_NE(std::string(e.what()).find(".png or .svg"), std::string::npos) << e.what();
        EXPECT_EQ(e.where(), "figure.jpg");
    }
}

}  // namespace
