// Bar chart and small-multiple figures, checked on the SVG's numbers (bar heights read back
// against the weights, tile colours against the colormap table) and on decoded PNG pixels.
#include "app/render/bars_image.hpp"
#include "app/render/heads_image.hpp"
#include "app/render/raster.hpp"
#include "core/base/error.hpp"
#include "figure_checks.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <regex>

using namespace attnviz;
using core::Rgb;
using namespace figurecheck;

namespace {

constexpr Rgb kBarColour{79, 70, 229};
constexpr Rgb kPaper{255, 255, 255};

struct Rect {
    double x, y, w, h;
    std::string fill;
};

std::vector<Rect> rectsOf(const std::string& group) {
    static const std::regex re(R"re(<rect x="([-\d.]+)" y="([-\d.]+)" width="([-\d.]+)" height="([-\d.]+)" fill="([^"]+)")re");
    std::vector<Rect> out;
    for (auto it = std::sregex_iterator(group.begin(), group.end(), re); it != std::sregex_iterator(); ++it)
        out.push_back({std::stod((*it)[1]), std::stod((*it)[2]), std::stod((*it)[3]), std::stod((*it)[4]), (*it)[5]});
    return out;
}

struct Text {
    double x, y, px;
    std::string text;
};

std::vector<Text> textsOf(const std::string& group) {
    static const std::regex re(R"re(<text x="([-\d.]+)" y="([-\d.]+)"[^>]*font-size="([\d.]+)"[^>]*>([^<]*)</text>)re");
    std::vector<Text> out;
    for (auto it = std::sregex_iterator(group.begin(), group.end(), re); it != std::sregex_iterator(); ++it)
        out.push_back({std::stod((*it)[1]), std::stod((*it)[2]), std::stod((*it)[3]), (*it)[4]});
    return out;
}

// "the cat sat on the mat", query 3 ("on", the fourth) under a causal mask: keys 4 and 5 are masked.
render::BarsFigure causalRow() {
    render::BarsFigure f;
    f.keyLabels = {"the", "cat", "sat", "on", "the", "mat"};
    f.weights = {0.12f, 0.31f, 0.16f, 0.41f, 0.0f, 0.0f};
    f.blocked = {false, false, false, false, true, true};
    f.query = 3;
    f.queryLabel = "on";
    return f;
}

render::BarsFigure flatRow(int T) {
    render::BarsFigure f;
    for (int j = 0; j < T; ++j) f.keyLabels.push_back("tok" + std::to_string(j)), f.weights.push_back(1.0f / static_cast<float>(T));
    f.query = T - 1;
    f.queryLabel = f.keyLabels.back();
    return f;
}

// h heads of [T, T] causal attention; head k puts weight on the key k back, row 0 on key 0.
render::HeadsFigure causalHeads(int h, int T) {
    render::HeadsFigure f;
    f.blocked = core::MaskMat::Constant(T, T, false);
    for (int i = 0; i < T; ++i)
        for (int j = i + 1; j < T; ++j) f.blocked(i, j) = true;
    for (int k = 0; k < h; ++k) {
        core::Mat m = core::Mat::Zero(T, T);
        for (int i = 0; i < T; ++i) {
            float sum = 0;
            for (int j = 0; j <= i; ++j) sum += m(i, j) = std::exp(-std::abs(static_cast<float>(i - j - k)));
            m.row(i) /= sum;
        }
        f.heads.push_back(m);
    }
    return f;
}

template <typename Render, typename Figure>
void expectInputError(Render render, const Figure& f, const std::string& where) {
    try {
        (void)render(f);
        ADD_FAILURE() << "accepted a figure with bad " << where;
    } catch (const core::InputError& e) {
        EXPECT_EQ(e.where(), where) << e.message();
    }
}

}  // namespace

// ---- Bars -------------------------------------------------------------------------------------

TEST(BarsImage, OneBarPerReadableKeyWithHeightsProportionalToTheWeights) {
    const render::BarsFigure f = causalRow();
    const std::string svg = render::renderBarsSvg(f);
    const std::vector<Rect> bars = rectsOf(svgGroup(svg, "bars")), masked = rectsOf(svgGroup(svg, "masked"));
    ASSERT_EQ(bars.size(), 4u);
    ASSERT_EQ(masked.size(), 2u);
    // 0 … 1 axis (max 0.41 ≥ 0.25): the top grid line is weight 1, the bars stand on the axis.
    const std::vector<Rect> grid = rectsOf(svgGroup(svg, "grid"));
    ASSERT_FALSE(grid.empty());
    double top = grid.front().y;
    for (const Rect& g : grid) top = std::min(top, g.y);
    const double base = bars.front().y + bars.front().h;
    for (std::size_t j = 0; j < bars.size(); ++j) {
        EXPECT_EQ(bars[j].fill, hexOf(kBarColour));
        EXPECT_NEAR(bars[j].y + bars[j].h, base, 0.01) << "key " << j;
        EXPECT_NEAR(bars[j].h / (base - top), f.weights[j], 0.002) << "key " << j;
        if (j > 0) {
            EXPECT_GT(bars[j].x, bars[j - 1].x + bars[j - 1].w);
        }
    }
    // Masked keys: hatched cells the plot's full height, right of the bars, never a bar.
    for (const Rect& m : masked) {
        EXPECT_EQ(m.fill, "url(#masked-key)");
        EXPECT_NEAR(m.h, base - top, 0.01);
        EXPECT_GT(m.x, bars.back().x + bars.back().w);
    }
    EXPECT_NE(svg.find("<pattern id=\"masked-key\""), std::string::npos);
    EXPECT_NE(svg.find(">masked key (no weight)<"), std::string::npos);
    // Every bar is wide enough for its value, two decimals.
    const std::string values = svgGroup(svg, "values");
    for (const char* v : {">0.12<", ">0.31<", ">0.16<", ">0.41<"}) EXPECT_NE(values.find(v), std::string::npos) << v;
    EXPECT_EQ(countOf(values, "<text"), 4u);
    // Every key labelled with its token.
    const std::vector<Text> labels = textsOf(svgGroup(svg, "key-labels"));
    ASSERT_EQ(labels.size(), 6u);
    EXPECT_EQ(labels[1].text, "cat");
    EXPECT_EQ(labels[5].text, "mat");
}

TEST(BarsImage, YAxisIsZeroToOneOrANiceValueJustAboveTheLargestWeight) {
    const auto topTick = [](const render::BarsFigure& f) {
        const std::string svg = render::renderBarsSvg(f);
        std::vector<Text> ticks;
        for (const Text& t : textsOf(svgGroup(svg, "text")))
            if (t.px == 13 && std::isdigit(static_cast<unsigned char>(t.text.front()))) ticks.push_back(t);
        EXPECT_GE(ticks.size(), 4u);
        const auto highest = std::min_element(ticks.begin(), ticks.end(), [](const Text& a, const Text& b) { return a.y < b.y; });
        return std::pair{highest->text, svg};
    };
    EXPECT_EQ(topTick(causalRow()).first, "1.00");
    render::BarsFigure quarter = causalRow();
    quarter.weights = {0.25f, 0.25f, 0.25f, 0.25f, 0.0f, 0.0f};
    EXPECT_EQ(topTick(quarter).first, "1.00");

    // A flat row of 1/512: the axis ends at 0.002, the subtitle says so, and the bars are
    // (1/512) / 0.002 of the plot's height.
    const auto [flatTop, svg] = topTick(flatRow(512));
    EXPECT_EQ(flatTop, "0.0020");
    EXPECT_NE(svg.find("y axis 0 to 0.0020"), std::string::npos);
    EXPECT_EQ(svg.find(">1.00<"), std::string::npos);
    const std::vector<Rect> bars = rectsOf(svgGroup(svg, "bars")), grid = rectsOf(svgGroup(svg, "grid"));
    ASSERT_EQ(bars.size(), 512u);
    double top = grid.front().y;
    for (const Rect& g : grid) top = std::min(top, g.y);
    for (const Rect& b : bars) ASSERT_NEAR(b.h / (b.y + b.h - top), (1.0 / 512) / 0.002, 0.002);

    render::BarsFigure small = causalRow();
    small.weights = {0.03f, 0.04f, 0.02f, 0.01f, 0.0f, 0.0f};
    EXPECT_EQ(topTick(small).first, "0.05");
    small.weights[1] = 0.15f;
    EXPECT_EQ(topTick(small).first, "0.20");
    EXPECT_EQ(svgGroup(render::renderBarsSvg(causalRow()), "text").find("y axis"), std::string::npos);
}

TEST(BarsImage, SubtitleHasTheRowsStatisticsWithEntropyOverTheAllowedKeys) {
    render::BarsFigure f;
    f.keyLabels = {"a", "b", "c"};
    f.weights = {0.5f, 0.5f, 0.0f};
    f.blocked = {false, false, true};
    f.query = 1;
    f.queryLabel = "b";
    // -2 · 0.5 ln 0.5 = ln 2 = 0.693; at most ln(2 allowed keys).
    EXPECT_NE(render::renderBarsSvg(f).find(">query 2 &quot;b&quot; · Σ = 1.00 · max = 0.50 · entropy 0.69 of 0.69 nats<"),
              std::string::npos);
    f.weights = {0.5f, 0.25f, 0.25f};
    f.blocked.clear();
    // 0.5 ln 2 + 2 · 0.25 ln 4 = 1.5 ln 2 = 1.040; at most ln 3 = 1.099.
    EXPECT_NE(render::renderBarsSvg(f).find("· entropy 1.04 of 1.10 nats<"), std::string::npos);
}

TEST(BarsImage, ThousandsOfKeysKeepTheImageAndTheLabelsBounded) {
    const render::Font font("DejaVuSans.ttf");
    for (const int T : {300, 4096, render::kMaxBarsKeys}) {
        const render::BarsFigure f = flatRow(T);
        const std::string svg = render::renderBarsSvg(f);
        std::smatch size;
        ASSERT_TRUE(std::regex_search(svg, size, std::regex(R"re(<svg [^>]*width="(\d+)" height="(\d+)")re")));
        EXPECT_LE(std::stoi(size[1]), 2400) << T;
        const std::vector<Text> labels = textsOf(svgGroup(svg, "key-labels"));
        EXPECT_GE(labels.size(), 5u) << T;
        EXPECT_LE(labels.size(), 60u) << T;
        // Neighbouring labels (centred) leave white space between them; thinned ones name the key
        // by position and token.
        for (std::size_t n = 1; n < labels.size(); ++n) {
            const double halves = (font.textWidth(labels[n - 1].text, 12) + font.textWidth(labels[n].text, 12)) / 2;
            EXPECT_GT(labels[n].x - labels[n - 1].x, halves + 4) << T << ": " << labels[n - 1].text << " / " << labels[n].text;
        }
        EXPECT_EQ(labels[0].text, "1 tok0") << T;  // key 0, counted from 1
        EXPECT_EQ(countOf(svgGroup(svg, "values"), "<text"), 0u) << T;
    }
    // 4096 keys: a bar is the largest of several keys, and the subtitle says so.
    EXPECT_NE(render::renderBarsSvg(flatRow(4096)).find("each bar the largest of 3 keys"), std::string::npos);
    // Few short labels: every key keeps its own.
    render::BarsFigure twelve = flatRow(12);
    EXPECT_EQ(textsOf(svgGroup(render::renderBarsSvg(twelve), "key-labels")).size(), 12u);
}

TEST(BarsImage, PngBarsHaveTheBarColourAndMaskedKeysDoNot) {
    render::BarsFigure f;
    f.keyLabels = {"a", "b", "c", "d"};
    f.weights = {0.6f, 0.0f, 0.3f, 0.0f};  // key 1 weighs 0, key 3 is masked
    f.blocked = {false, false, false, true};
    const Image img = decodePng(render::renderBarsPng(f));
    // The lowest row with bar colour is just above the axis; the legend's swatch is far above.
    int row = -1;
    for (int y = img.height - 1; y >= 0 && row < 0; --y)
        for (int x = 0; x < img.width && row < 0; ++x)
            if (img.at(x, y) == kBarColour) row = y;
    ASSERT_GE(row, 0);
    std::vector<std::pair<int, int>> runs;  // bar colour along that row: {first x, length}
    for (int x = 0; x < img.width; ++x)
        if (img.at(x, row) == kBarColour) {
            if (runs.empty() || runs.back().first + runs.back().second != x) runs.emplace_back(x, 0);
            ++runs.back().second;
        }
    ASSERT_EQ(runs.size(), 2u);  // keys 0 and 2
    const int slot = (runs[1].first - runs[0].first) / 2;
    // Bar heights in pixels: 0.6 and 0.3 of the same plot.
    const auto height = [&](int x) {
        int h = 0;
        while (img.at(x, row - h) == kBarColour) ++h;
        return h;
    };
    const int h0 = height(runs[0].first + runs[0].second / 2), h2 = height(runs[1].first + runs[1].second / 2);
    EXPECT_NEAR(h0, 2 * h2, 2);
    // Key 1 (weight 0) is paper; key 3 (masked) is hatched: neither white nor bar colour, whole height.
    const int x1 = runs[0].first + slot + runs[0].second / 2, x3 = runs[1].first + slot + runs[1].second / 2;
    EXPECT_EQ(img.at(x1, row), kPaper);
    EXPECT_EQ(img.at(x1, row - h2), kPaper);
    bool hatched = false;
    for (int y = row - h0; y <= row; ++y) {
        ASSERT_NE(img.at(x3, y), kBarColour);
        hatched |= img.at(x3, y) != kPaper;
    }
    EXPECT_TRUE(hatched);
    EXPECT_NE(img.at(x3, row), kPaper);
}

TEST(BarsImage, LogAxisNamesItsFloor) {
    render::BarsFigure f = causalRow();
    f.logScale = true;
    const std::string svg = render::renderBarsSvg(f);
    EXPECT_NE(svg.find("· log y axis from 1e-4<"), std::string::npos);
    for (const char* tick : {">1<", ">1e-1<", ">1e-4<"}) EXPECT_NE(svg.find(tick), std::string::npos) << tick;
    f.weights = {0.999f, 1e-6f, 0.0f, 0.000999f, 0.0f, 0.0f};
    EXPECT_NE(render::renderBarsSvg(f).find("log y axis from 1e-7 (below half the smallest weight)"), std::string::npos);
}

TEST(BarsImage, RejectsInconsistentRows) {
    const auto png = [](const render::BarsFigure& f) { return render::renderBarsPng(f); };
    render::BarsFigure f;
    expectInputError(png, f, "weights");
    f = causalRow();
    f.keyLabels.pop_back();
    expectInputError(png, f, "key labels");
    f = causalRow();
    f.blocked.push_back(false);
    expectInputError(png, f, "mask");
    for (const float bad : {std::nanf(""), INFINITY, -0.1f, 1.5f}) {
        f = causalRow();
        f.weights[2] = bad;
        expectInputError(png, f, "weights");
    }
    f = flatRow(render::kMaxBarsKeys + 1);
    expectInputError([](const render::BarsFigure& g) { return render::renderBarsSvg(g); }, f, "weights");

    EXPECT_EQ(render::encodeBars("out.PNG", causalRow()).substr(0, 8), "\x89PNG\r\n\x1a\n");
    EXPECT_EQ(render::encodeBars("out.svg", causalRow()).substr(0, 5), "<?xml");
    try {
        (void)render::encodeBars("out.gif", causalRow());
        ADD_FAILURE() << "a .gif was accepted";
    } catch (const core::InputError& e) {
        EXPECT_EQ(e.message(), "out.gif: unknown image type; use .png or .svg");
    }
}

// ---- Heads ------------------------------------------------------------------------------------

TEST(HeadsImage, OneLabelledTilePerHeadAfterTheMeanWithTableColours) {
    render::HeadsFigure f = causalHeads(3, 5);
    f.headLabels = {"h<1>", "second", "third"};
    const std::string svg = render::renderHeadsSvg(f);
    EXPECT_EQ(countOf(svg, "<g id=\"tile-"), 4u);
    EXPECT_TRUE(svgGroup(svg, "tile-4").empty());
    for (const char* label : {">mean<", ">h&lt;1&gt;<", ">second<", ">third<", ">attention weight<"})
        EXPECT_NE(svg.find(label), std::string::npos) << label;
    const core::Mat mean = (f.heads[0] + f.heads[1] + f.heads[2]) / 3.0f;
    for (int t = 0; t < 4; ++t) {
        const core::Mat& w = t == 0 ? mean : f.heads[static_cast<std::size_t>(t - 1)];
        const std::vector<Rect> cells = rectsOf(svgGroup(svg, "tile-" + std::to_string(t)));
        ASSERT_EQ(cells.size(), 25u) << t;
        for (int i = 0; i < 5; ++i)
            for (int j = 0; j < 5; ++j)
                EXPECT_EQ(cells[static_cast<std::size_t>(i * 5 + j)].fill,
                          f.blocked(i, j) ? "url(#masked)" : hexOf(core::colormapColor(f.colormap, w(i, j))))
                    << "tile " << t << " cell " << i << "," << j;
    }
    EXPECT_NE(svg.find("<pattern id=\"masked\""), std::string::npos);
    // Fixed: the bar's top label is 1.00. One head alone has no mean tile.
    EXPECT_NE(svgGroup(svg, "text").find(">1.00<"), std::string::npos);
    f = causalHeads(1, 5);
    EXPECT_EQ(countOf(render::renderHeadsSvg(f), "<g id=\"tile-"), 1u);
}

TEST(HeadsImage, OneColourScaleHoldsForEveryTile) {
    // Two heads over 16 keys, no mask: 0.24 and 0.12 on key 0 (each row's largest), the rest
    // shared equally.
    render::HeadsFigure f;
    for (const float first : {0.24f, 0.12f}) {
        core::Mat m = core::Mat::Constant(16, 16, (1.0f - first) / 15.0f);
        m.col(0).setConstant(first);
        f.heads.push_back(m);
    }
    f.includeMean = false;
    const core::ColormapTable& table = core::colormapTable(f.colormap);
    const auto tileFills = [&](core::ColourScale scale, int tile) {
        f.scale = scale;
        const std::string svg = render::renderHeadsSvg(f);
        return std::pair{rectsOf(svgGroup(svg, "tile-" + std::to_string(tile))), svg};
    };
    // Auto resolves to stretch over both tiles (largest 0.24): head 2's key 0 is half-way up,
    // and the bar's top label is the largest weight.
    for (const core::ColourScale scale : {core::ColourScale::Auto, core::ColourScale::Stretch}) {
        const auto [cells, svg] = tileFills(scale, 1);
        EXPECT_EQ(cells[0].fill, hexOf(table[static_cast<std::size_t>(core::colormapIndex(0.12f / 0.24f, 0.0f, 1.0f))]));
        EXPECT_EQ(rectsOf(svgGroup(svg, "tile-0"))[0].fill, hexOf(table[255]));
        EXPECT_NE(svgGroup(svg, "text").find(">0.24<"), std::string::npos);
        EXPECT_EQ(svgGroup(svg, "text").find(">1.00<"), std::string::npos);
        EXPECT_NE(svg.find(">attention weight (stretched)<"), std::string::npos);
    }
    // Rows: every row of every tile reaches the top colour, and the bar says per row.
    const auto [rowCells, rowSvg] = tileFills(core::ColourScale::Rows, 1);
    for (int i = 0; i < 16; ++i) EXPECT_EQ(rowCells[static_cast<std::size_t>(i * 16)].fill, hexOf(table[255])) << i;
    EXPECT_NE(rowSvg.find("per row"), std::string::npos);
    // Fixed: colours are the weights themselves.
    const auto [fixedCells, fixedSvg] = tileFills(core::ColourScale::Fixed, 1);
    EXPECT_EQ(fixedCells[0].fill, hexOf(core::colormapColor(f.colormap, 0.12f)));
}

TEST(HeadsImage, PngTilesHaveExactCellColoursAndHatchedMaskedCells) {
    const render::HeadsFigure f = causalHeads(2, 4);
    const Image img = decodePng(render::renderHeadsPng(f));
    const core::Mat mean = (f.heads[0] + f.heads[1]) / 2.0f;
    // The first hatch pixel in reading order is cell (0, 1) of the mean's tile.
    int left = -1, top = -1, cell = 0;
    for (int y = 0; y < img.height && left < 0; ++y)
        for (int x = 0; x < img.width && left < 0; ++x)
            if (img.at(x, y) == core::kMaskedInk || img.at(x, y) == core::kMaskedPaper) {
                left = x;
                while (left > 0 && img.at(left - 1, y) == core::colormapColor(f.colormap, mean(0, 0))) --left;
                top = y, cell = x - left;
            }
    ASSERT_GE(cell, 24);
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) {
            const Rgb c = img.at(left + j * cell + cell / 2, top + i * cell + cell / 2);
            if (f.blocked(i, j)) EXPECT_TRUE(c == core::kMaskedInk || c == core::kMaskedPaper) << i << "," << j;
            else EXPECT_EQ(c, core::colormapColor(f.colormap, mean(i, j))) << i << "," << j;
        }
}

TEST(HeadsImage, LongSentencesArePooledToBlockMeansInABoundedImage) {
    // 1080 keys in tiles of at most 360 px: 3 × 3 blocks. Weight 0.3 on every third key, 0 on
    // the others: every block means 0.1 (a maximum would give 0.3, a sample 0 or 0.3).
    render::HeadsFigure f;
    core::Mat m(1080, 1080);
    for (int j = 0; j < 1080; ++j) m.col(j).setConstant(j % 3 == 1 ? 0.3f : 0.0f);
    f.heads = {m, m};
    const std::string svg = render::renderHeadsSvg(f);
    EXPECT_NE(svg.find("each cell the mean of 3 × 3 weights"), std::string::npos);
    EXPECT_EQ(rectsOf(svgGroup(svg, "tile-1")).size(), 360u);  // one run of one colour per row
    for (const Rect& r : rectsOf(svgGroup(svg, "tile-1"))) ASSERT_EQ(r.fill, hexOf(core::colormapColor(f.colormap, 0.1f)));
    const Image img = decodePng(render::renderHeadsPng(f));
    EXPECT_LE(img.width, 2400);
    EXPECT_LE(img.height, 2400);

    render::HeadsFigure many;
    many.heads.assign(63, core::Mat::Constant(64, 64, 1.0f / 64));
    const Image grid = decodePng(render::renderHeadsPng(many));
    EXPECT_LE(grid.width, 2400);
    EXPECT_LE(grid.height, 2400);
}

TEST(HeadsImage, RejectsInconsistentHeads) {
    const auto png = [](const render::HeadsFigure& f) { return render::renderHeadsPng(f); };
    render::HeadsFigure f;
    expectInputError(png, f, "heads");
    f = causalHeads(3, 4);
    f.heads[2] = core::Mat::Zero(4, 5);
    expectInputError(png, f, "head 3");
    f = causalHeads(3, 4);
    f.heads[1](2, 0) = std::nanf("");
    expectInputError(png, f, "head 2");
    f = causalHeads(3, 4);
    f.headLabels = {"a", "b"};
    expectInputError(png, f, "head labels");
    f = causalHeads(3, 4);
    f.blocked = core::MaskMat::Constant(4, 3, false);
    expectInputError(png, f, "mask");
    f = causalHeads(3, 4);
    f.columns = -1;
    expectInputError(png, f, "columns");
    f = render::HeadsFigure{};
    f.heads.assign(3000, core::Mat::Constant(2, 2, 0.5f));
    expectInputError([](const render::HeadsFigure& g) { return render::renderHeadsSvg(g); }, f, "heads");
    try {
        (void)render::encodeHeads("fig.jpg", causalHeads(2, 3));
        ADD_FAILURE() << "a .jpg was accepted";
    } catch (const core::InputError& e) {
        EXPECT_EQ(e.message(), "fig.jpg: unknown image type; use .png or .svg");
    }
    EXPECT_EQ(render::encodeHeads("fig.Svg", causalHeads(2, 3)).substr(0, 5), "<?xml");
}
