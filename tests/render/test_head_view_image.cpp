// The head view figure (head_view_image.hpp): a line's colour and opacity in decoded pixels, the
// SVG's <line> elements against the rule, the raster's anti-aliased line, and bad input.
#include "app/render/head_view_image.hpp"
#include "app/render/raster.hpp"
#include "core/base/error.hpp"
#include "tests/render/figure_checks.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace attnviz::render {
namespace {

using figurecheck::countOf;
using figurecheck::decodePng;
using figurecheck::svgGroup;

// The colour over white at opacity a, as blendPixel rounds it.
core::Rgb over(core::Rgb c, float a) {
    const int k = static_cast<int>(std::lround(255.0f * a));
    const auto mix = [k](int fg) { return static_cast<std::uint8_t>((fg * k + 255 * (255 - k) + 127) / 255); };
    return {mix(c.r), mix(c.g), mix(c.b)};
}

HeadViewFigure oneLine(float weight) {
    HeadViewFigure f;
    f.tokens = 4;
    f.labels = {"The", " cat", " sat", "."};
    f.heads = {0, 3};
    f.lines = {{3, 2, 2, weight}};  // head 4: query 2 to key 2, a horizontal line
    f.readable = 1;
    f.rule = "every line";
    f.title = "test";
    return f;
}

TEST(HeadViewImage, ALinesPixelsAreItsHeadsColourAtItsWeight) {
    for (const float w : {0.25f, 0.6f, 1.0f}) {
        const HeadViewFigure f = oneLine(w);
        const HeadViewGeometry g = headViewGeometry(f);
        const auto img = decodePng(renderHeadViewPng(f));
        ASSERT_EQ(img.width, g.width);
        ASSERT_EQ(img.height, g.height);
        const int y = static_cast<int>(std::floor(g.rowY(2)));
        const int mid = static_cast<int>((g.queryX + g.keyX) / 2);
        EXPECT_EQ(img.at(mid, y), over(core::headColour(3), w)) << "weight " << w;
        // A 1-px line: the rows above and below stay white.
        EXPECT_EQ(img.at(mid, y - 1), (core::Rgb{255, 255, 255}));
        EXPECT_EQ(img.at(mid, y + 1), (core::Rgb{255, 255, 255}));
        // Nothing between other rows.
        EXPECT_EQ(img.at(mid, static_cast<int>(g.rowY(0))), (core::Rgb{255, 255, 255}));
    }
}

TEST(HeadViewImage, TwoHeadsBlendInWeightOrder) {
    HeadViewFigure f = oneLine(0.5f);
    f.lines.push_back({0, 2, 2, 0.2f});  // the weaker drawn first, then head 4's over it
    f.readable = 2;
    const HeadViewGeometry g = headViewGeometry(f);
    const auto img = decodePng(renderHeadViewPng(f));
    const core::Rgb first = over(core::headColour(0), 0.2f);
    const int k = static_cast<int>(std::lround(255.0f * 0.5f));
    const core::Rgb top = core::headColour(3);
    const auto mix = [k](int fg, int bg) { return static_cast<std::uint8_t>((fg * k + bg * (255 - k) + 127) / 255); };
    const core::Rgb expected{mix(top.r, first.r), mix(top.g, first.g), mix(top.b, first.b)};
    EXPECT_EQ(img.at(static_cast<int>((g.queryX + g.keyX) / 2), static_cast<int>(std::floor(g.rowY(2)))), expected);
}

TEST(HeadViewImage, SvgHasOneLineElementPerLineWithItsOpacity) {
    HeadViewFigure f = oneLine(0.375f);
    f.lines.push_back({0, 3, 0, 0.125f});
    f.lines.push_back({0, 1, 0, 0.5f});
    f.readable = 5;
    f.rule = "the 8 strongest keys of each query and head (T > 24)";
    const std::string svg = renderHeadViewSvg(f);
    const std::string lines = svgGroup(svg, "lines");
    EXPECT_EQ(countOf(lines, "<line "), 3u);
    EXPECT_EQ(countOf(lines, "stroke=\"" + figurecheck::hexOf(core::headColour(3)) + "\" stroke-opacity=\"0.3750\""), 1u);
    EXPECT_EQ(countOf(lines, "stroke-opacity=\"0.1250\""), 1u);
    // The legend names both heads; the rule and the dropped count are in the text.
    EXPECT_EQ(countOf(svgGroup(svg, "legend"), "<rect "), 2u);
    EXPECT_NE(svg.find(">head 1<"), std::string::npos);
    EXPECT_NE(svg.find(">head 4<"), std::string::npos);
    EXPECT_NE(svg.find("the 8 strongest keys of each query and head (T &gt; 24) (3 of 5, 2 weaker dropped)"), std::string::npos);
    EXPECT_EQ(countOf(svgGroup(svg, "tokens"), "<text "), 8u);  // each token twice
}

TEST(HeadViewImage, RasterLineCoverage) {
    Canvas c(20, 20);
    c.blendLine(2.5f, 10.5f, 17.5f, 10.5f, {0, 0, 0}, 1.0f);  // on pixel centres: full coverage, one row
    for (int x = 2; x <= 17; ++x) EXPECT_EQ(c.at(x, 10), (core::Rgb{0, 0, 0})) << x;
    EXPECT_EQ(c.at(10, 9), (core::Rgb{255, 255, 255}));
    EXPECT_EQ(c.at(10, 11), (core::Rgb{255, 255, 255}));
    Canvas d(20, 20);
    d.blendLine(10.0f, 2.5f, 10.0f, 17.5f, {0, 0, 0}, 1.0f);  // between two columns: half each
    EXPECT_EQ(d.at(9, 10), over({0, 0, 0}, 0.5f));
    EXPECT_EQ(d.at(10, 10), over({0, 0, 0}, 0.5f));
    EXPECT_EQ(d.at(8, 10), (core::Rgb{255, 255, 255}));
    Canvas e(40, 40);
    e.blendLine(0.5f, 0.5f, 39.5f, 39.5f, {0, 0, 0}, 1.0f);  // the diagonal passes through every (i, i)
    for (int i = 0; i < 40; ++i) EXPECT_EQ(e.at(i, i), (core::Rgb{0, 0, 0})) << i;
    EXPECT_EQ(e.at(30, 5), (core::Rgb{255, 255, 255}));
}

TEST(HeadViewImage, BadInputIsRefusedWithWhatIsWrong) {
    HeadViewFigure f = oneLine(0.5f);
    f.lines.push_back({2, 0, 0, 0.5f});  // head 3 is not in the legend
    EXPECT_THROW(renderHeadViewPng(f), core::InputError);
    f = oneLine(1.5f);
    EXPECT_THROW(renderHeadViewSvg(f), core::InputError);
    f = oneLine(0.5f);
    f.lines.push_back({0, 0, 4, 0.5f});
    EXPECT_THROW(renderHeadViewSvg(f), core::InputError);
    f = oneLine(0.5f);
    f.labels.pop_back();
    EXPECT_THROW(renderHeadViewSvg(f), core::InputError);
    f = oneLine(0.5f);
    f.tokens = kMaxHeadViewTokens + 1;
    f.labels.clear();
    EXPECT_THROW(renderHeadViewSvg(f), core::InputError);
    try {
        encodeHeadView("out.jpg", oneLine(0.5f));
        FAIL();
    } catch (const core::InputError& e) {
        EXPECT_EQ(e.message().rfind("out.jpg: ", 0), 0u);
    }
}

}  // namespace
}  // namespace attnviz::render
