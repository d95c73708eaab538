// The model view's figure on decoded pixels and SVG text: each tile's texels in the colormap's
// colour of the pooled value, one scale over all tiles, tiles in their slots, labels and rule.
#include "app/render/model_view_image.hpp"
#include "core/attention/attention.hpp"
#include "core/base/error.hpp"
#include "figure_checks.hpp"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

namespace attnviz {
namespace {

using figurecheck::decodePng;

// 2 layers × 3 heads of 2 × 2 texels; head index k holds the constant value (k + 1) / 10 except
// its top-right texel, which is masked (a causal map's block).
render::ModelViewFigure smallFigure() {
    render::ModelViewFigure f;
    f.layers = 2;
    f.heads = 3;
    f.side = f.sideKeys = 2;
    f.keys = 8;
    for (int k = 0; k < 6; ++k) {
        const float v = static_cast<float>(k + 1) / 10.0f;
        f.thumbnails.insert(f.thumbnails.end(), {v, core::kMaskedTexel, v, v});
    }
    f.title = "tiny";
    f.scale = core::ColourScale::Fixed;
    return f;
}

// The colour at the centre of texel (i, j) of slot k.
core::Rgb texel(const render::ModelViewFigure& f, const figurecheck::Image& img, int slot, int i, int j) {
    const render::TileBox b = render::modelViewTile(f, slot);
    return img.at(b.x + j * b.cell + b.cell / 2, b.y + i * b.cell + b.cell / 2);
}

TEST(ModelViewFigure, EachTileIsTheColourOfItsPooledValueOnTheFixedScale) {
    const render::ModelViewFigure f = smallFigure();
    const figurecheck::Image img = decodePng(render::renderModelViewPng(f));
    for (int k = 0; k < 6; ++k) {
        const core::Rgb want = core::colormapColor(f.colormap, static_cast<float>(k + 1) / 10.0f, 0.0f, 1.0f);
        for (const auto& [i, j] : {std::pair{0, 0}, std::pair{1, 0}, std::pair{1, 1}}) {
            const core::Rgb got = texel(f, img, k, i, j);
            EXPECT_EQ(figurecheck::hexOf(got), figurecheck::hexOf(want)) << "slot " << k << " texel " << i << "," << j;
        }
        // The masked texel is hatched: one of the two hatch colours, never a colormap colour.
        const core::Rgb masked = texel(f, img, k, 0, 1);
        EXPECT_TRUE(masked == core::kMaskedInk || masked == core::kMaskedPaper) << figurecheck::hexOf(masked);
    }
}

TEST(ModelViewFigure, OneStretchedScaleOverAllTiles) {
    render::ModelViewFigure f = smallFigure();
    f.scale = core::ColourScale::Stretch;  // largest texel 0.6: every value over 0.6
    const figurecheck::Image img = decodePng(render::renderModelViewPng(f));
    for (int k = 0; k < 6; ++k) {
        const core::Rgb want = core::colormapColor(f.colormap, (static_cast<float>(k + 1) / 10.0f) / 0.6f, 0.0f, 1.0f);
        EXPECT_EQ(figurecheck::hexOf(texel(f, img, k, 1, 0)), figurecheck::hexOf(want)) << "slot " << k;
    }
    // Per row would mix the heads of a row: it is drawn as the same stretched scale.
    f.scale = core::ColourScale::Rows;
    EXPECT_EQ(render::renderModelViewPng(f), render::renderModelViewPng([&] {
                  render::ModelViewFigure g = f;
                  g.scale = core::ColourScale::Stretch;
                  return g;
              }()));
}

TEST(ModelViewFigure, SlotsPlaceEachHeadsTileWhereTheOrderSays) {
    render::ModelViewFigure f = smallFigure();
    f.order = core::TileOrder::Ranked;
    f.slots = {5, 4, 3, 2, 1, 0};  // largest value first
    f.rule = "every head ranked by previous-token mass, largest first";
    const figurecheck::Image img = decodePng(render::renderModelViewPng(f));
    for (int k = 0; k < 6; ++k) {
        const int index = f.slots[static_cast<std::size_t>(k)];
        const core::Rgb want = core::colormapColor(f.colormap, static_cast<float>(index + 1) / 10.0f, 0.0f, 1.0f);
        EXPECT_EQ(figurecheck::hexOf(texel(f, img, k, 1, 0)), figurecheck::hexOf(want)) << "slot " << k;
    }
}

TEST(ModelViewFigure, SvgNamesLayersHeadsTheRuleAndTheScale) {
    render::ModelViewFigure f = smallFigure();
    f.order = core::TileOrder::WithinLayer;
    f.slots = {2, 1, 0, 5, 4, 3};
    f.tint = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6};
    f.rule = "sorted by previous-token mass within each layer; tint = previous";
    const std::string svg = render::renderModelViewSvg(f);
    EXPECT_NE(svg.find(">L1<"), std::string::npos);
    EXPECT_NE(svg.find(">L2<"), std::string::npos);
    EXPECT_NE(svg.find("sorted by previous-token mass within each layer; tint = previous"), std::string::npos);
    EXPECT_NE(svg.find(">tiny<"), std::string::npos);
    EXPECT_NE(svg.find("2 layers × 3 heads"), std::string::npos);
    EXPECT_EQ(figurecheck::countOf(svg, "class=\"tint\""), 6u);
    // Layer 2's head 3 (value 0.6) is drawn first in its row: its group comes before head 1's.
    EXPECT_LT(svg.find("id=\"tile-2-3\""), svg.find("id=\"tile-2-1\""));
    // The strongest tint is the largest score's, fully opaque.
    const std::string group = figurecheck::svgGroup(svg, "tile-2-3");
    EXPECT_NE(group.find("fill-opacity=\"1\""), std::string::npos) << group;
    const std::string texelColour = figurecheck::hexOf(core::colormapColor(f.colormap, 0.6f, 0.0f, 1.0f));
    EXPECT_NE(group.find(texelColour), std::string::npos);
}

TEST(ModelViewFigure, SignedTintIsAsLongAsItsSizeOrangeForAndBlueAgainst) {
    render::ModelViewFigure f = smallFigure();
    f.tint = {1.0, -4.0, 2.0, 0.0, -1.0, 4.0};
    const std::string svg = render::renderModelViewSvg(f);
    const int tileW = render::modelViewTile(f, 1).x - render::modelViewTile(f, 0).x - 3;  // the pitch less the gap
    ASSERT_GT(tileW, 8);
    const auto bar = [&](int layer, int head) {
        const std::string group = figurecheck::svgGroup(svg, "tile-" + std::to_string(layer) + "-" + std::to_string(head));
        const std::size_t at = group.find("class=\"tint\"");
        return at == std::string::npos ? std::string() : group.substr(at, group.find("/>", at) - at);
    };
    const auto width = [&](int size) { return "width=\"" + std::to_string(size) + "\""; };
    // −4 and 4 the longest, −1 and 1 a quarter; negative blue, positive orange; 0 no length
    EXPECT_NE(bar(1, 2).find(width(tileW)), std::string::npos) << bar(1, 2);
    EXPECT_NE(bar(1, 2).find("#3b82f6"), std::string::npos);
    EXPECT_NE(bar(2, 3).find(width(tileW)), std::string::npos);
    EXPECT_NE(bar(2, 3).find("#ff8c00"), std::string::npos);
    EXPECT_NE(bar(1, 1).find(width(static_cast<int>(std::lround(tileW / 4.0)))), std::string::npos) << bar(1, 1);
    EXPECT_NE(bar(2, 2).find("#3b82f6"), std::string::npos);
    EXPECT_NE(bar(2, 1).find(width(0)), std::string::npos);
}

TEST(ModelViewFigure, GeneratedTokensStartAtTheirTexelInEveryTile) {
    render::ModelViewFigure f = smallFigure();  // 8 keys in 2 texels a side: 4 tokens a texel
    f.generatedFrom = 6;
    const std::string svg = render::renderModelViewSvg(f);
    EXPECT_NE(svg.find("amber: generated from token 7"), std::string::npos);
    EXPECT_EQ(figurecheck::countOf(svg, "fill=\"#d97706\""), 12u);  // a line across and down each of 6 tiles
    const render::TileBox box = render::modelViewTile(f, 4);
    const int x = box.x + static_cast<int>(std::lround(1.5 * box.cell));  // token 6 of 8: 1.5 texels in
    EXPECT_NE(svg.find("<rect x=\"" + std::to_string(x) + "\" y=\"" + std::to_string(box.y) + "\" width=\"1\""), std::string::npos);
    f.generatedFrom = -1;
    EXPECT_EQ(figurecheck::countOf(render::renderModelViewSvg(f), "#d97706"), 0u);
}

TEST(ModelViewFigure, RefusesThumbnailsOfTheWrongSizeAndOrdersThatAreNotPermutations) {
    render::ModelViewFigure f = smallFigure();
    f.thumbnails.pop_back();
    EXPECT_THROW(render::renderModelViewPng(f), core::InputError);
    f = smallFigure();
    f.slots = {0, 0, 1, 2, 3, 4};
    EXPECT_THROW(render::renderModelViewSvg(f), core::InputError);
    f = smallFigure();
    f.thumbnails[0] = std::numeric_limits<float>::quiet_NaN();
    EXPECT_THROW(render::renderModelViewPng(f), core::InputError);
    try {
        render::encodeModelView("out.jpg", smallFigure());
        FAIL();
    } catch (const core::InputError& e) {
        EXPECT_NE(e.message().find("out.jpg"), std::string::npos);
    }
}

TEST(ModelViewFigure, GptTwoXlSizedGridFitsOneImage) {
    render::ModelViewFigure f;
    f.layers = 48;
    f.heads = 25;
    f.side = f.sideKeys = 48;
    f.thumbnails.assign(static_cast<std::size_t>(48 * 25 * 48 * 48), 0.02f);
    const figurecheck::Image img = decodePng(render::renderModelViewPng(f));
    const render::TileBox last = render::modelViewTile(f, 48 * 25 - 1);
    EXPECT_LE(last.x + 48 * last.cell, img.width);
    EXPECT_LE(last.y + 48 * last.cell, img.height);
}

}  // namespace
}  // namespace attnviz
