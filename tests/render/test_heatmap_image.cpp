// Heatmap PNG/SVG figures, checked on decoded pixels and on the SVG text: exact cell colours
// from the colormap table, hatching only on masked cells, labels that exist and do not overlap,
// escaping, and exports that fail without touching an existing file.
#include "app/fonts/font_files.hpp"
#include "app/render/heatmap_image.hpp"
#include "app/render/raster.hpp"
#include "core/base/error.hpp"
#include "core/base/prng.hpp"
#include "figure_checks.hpp"

#include <gtest/gtest.h>

#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>

using namespace attnviz;
using core::Rgb;
using namespace figurecheck;
namespace fs = std::filesystem;

namespace {

bool isHatch(Rgb c) { return c == core::kMaskedInk || c == core::kMaskedPaper; }
bool isDark(Rgb c) { return c.r < 110 && c.g < 110 && c.b < 110; }

// [T, T] causal attention: row i spreads over keys 0..i, the rest is masked. Row 0 puts all
// its weight on key 0, so cell (0, 0) is the colormap's top colour.
render::HeatmapFigure causalFigure(int T) {
    render::HeatmapFigure f;
    f.weights = core::Mat::Zero(T, T);
    f.blocked = core::MaskMat::Constant(T, T, false);
    for (int i = 0; i < T; ++i) {
        float sum = 0;
        for (int j = 0; j <= i; ++j) sum += static_cast<float>(j + 1);
        for (int j = 0; j <= i; ++j) f.weights(i, j) = static_cast<float>(j + 1) / sum;
        for (int j = i + 1; j < T; ++j) f.blocked(i, j) = true;
        f.rowLabels.push_back("w" + std::to_string(i));
        f.colLabels.push_back("w" + std::to_string(i));
    }
    return f;
}

Rgb cellColour(const render::HeatmapFigure& f, int i, int j) { return core::colormapColor(f.colormap, f.weights(i, j), 0.0f, 1.0f); }

// Where the matrix of a causal figure is: the first hatch pixel in reading order is the top-left
// corner of cell (0, 1); the run of cell (0, 0)'s colour left of it gives the cell size.
struct MatrixBox {
    int left = -1, top = -1, cell = 0;
};

MatrixBox locateCausalMatrix(const Image& img, Rgb cell00) {
    for (int y = 0; y < img.height; ++y)
        for (int x = 0; x < img.width; ++x)
            if (isHatch(img.at(x, y))) {
                int left = x;
                while (left > 0 && img.at(left - 1, y) == cell00) --left;
                return {left, y, x - left};
            }
    return {};
}

// Groups of consecutive indices where present[k] is true: {start, length}.
std::vector<std::pair<int, int>> runs(const std::vector<bool>& present) {
    std::vector<std::pair<int, int>> out;
    for (int k = 0; k < static_cast<int>(present.size()); ++k)
        if (present[static_cast<std::size_t>(k)]) {
            if (out.empty() || out.back().first + out.back().second != k) out.emplace_back(k, 0);
            ++out.back().second;
        }
    return out;
}

std::string readFile(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A fresh folder per test under the system temp folder, removed afterwards.
class HeatmapImage : public ::testing::Test {
protected:
    void SetUp() override {
        static std::atomic<int> counter{0};
        m_dir = fs::temp_directory_path() / ("attnviz-render-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
        fs::remove_all(m_dir);
        ASSERT_TRUE(fs::create_directories(m_dir));
    }
    void TearDown() override {
        std::error_code ec;
        fs::remove_all(m_dir, ec);
    }
    fs::path m_dir;
};

}  // namespace

TEST_F(HeatmapImage, CausalCellsAreExactColoursAndMaskedCellsOnlyHatch) {
    render::HeatmapFigure f = causalFigure(4);
    f.cellSize = 40;
    f.showValues = false;  // values sit on cell centres; checked in their own test
    f.title = "Head 1";
    const Image img = decodePng(render::renderHeatmapPng(f));
    const MatrixBox m = locateCausalMatrix(img, cellColour(f, 0, 0));
    ASSERT_EQ(m.cell, 40);

    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) {
            const int x0 = m.left + j * m.cell, y0 = m.top + i * m.cell;
            const Rgb centre = img.at(x0 + m.cell / 2, y0 + m.cell / 2);
            if (f.blocked(i, j)) EXPECT_TRUE(isHatch(centre)) << "cell " << i << "," << j;
            else EXPECT_EQ(centre, cellColour(f, i, j)) << "cell " << i << "," << j;
            bool ink = false, paper = false, other = false;
            for (int y = y0; y < y0 + m.cell; ++y)
                for (int x = x0; x < x0 + m.cell; ++x) {
                    const Rgb c = img.at(x, y);
                    ink |= c == core::kMaskedInk;
                    paper |= c == core::kMaskedPaper;
                    other |= f.blocked(i, j) ? !isHatch(c) : c != cellColour(f, i, j);
                }
            EXPECT_FALSE(other) << "cell " << i << "," << j << " has a stray pixel";
            EXPECT_EQ(ink, f.blocked(i, j)) << "cell " << i << "," << j;
            EXPECT_EQ(paper, f.blocked(i, j)) << "cell " << i << "," << j;
        }

    // Row labels left of each row, column labels below each column, and a colour bar to the right
    // that runs from the table's top colour down to its bottom colour.
    for (int i = 0; i < 4; ++i) {
        bool dark = false;
        for (int y = m.top + i * m.cell; y < m.top + (i + 1) * m.cell; ++y)
            for (int x = m.left - 30; x < m.left - 2; ++x) dark |= isDark(img.at(x, y));
        EXPECT_TRUE(dark) << "no row label for row " << i;
    }
    const int bottom = m.top + 4 * m.cell;
    for (int j = 0; j < 4; ++j) {
        bool dark = false;
        for (int y = bottom + 1; y < bottom + 24; ++y)
            for (int x = m.left + j * m.cell; x < m.left + (j + 1) * m.cell; ++x) dark |= isDark(img.at(x, y));
        EXPECT_TRUE(dark) << "no column label for column " << j;
    }
    const core::ColormapTable& table = core::colormapTable(f.colormap);
    bool top = false, low = false;
    for (int y = m.top; y < img.height; ++y)
        for (int x = m.left + 4 * m.cell + 2; x < img.width; ++x) {
            top |= y == m.top && img.at(x, y) == table[255];
            low |= img.at(x, y) == table[0];
        }
    EXPECT_TRUE(top && low) << "colour bar missing";
    EXPECT_GT(img.width, m.left + 4 * m.cell + 60);
}

TEST_F(HeatmapImage, ValuesContrastWithTheirCell) {
    render::HeatmapFigure f = causalFigure(4);  // automatic cells: 64 px for 4 tokens
    f.colormap = core::ColormapKind::Grayscale;
    const Image img = decodePng(render::renderHeatmapPng(f));
    const MatrixBox m = locateCausalMatrix(img, cellColour(f, 0, 0));
    ASSERT_GE(m.cell, 28);
    // Cell (0, 0) is white (weight 1): black text. Cell (3, 0) is dark (0.1): white text.
    const auto extremes = [&](int i, int j, bool wantBlack) {
        bool found = false;
        for (int y = m.top + i * m.cell; y < m.top + (i + 1) * m.cell; ++y)
            for (int x = m.left + j * m.cell; x < m.left + (j + 1) * m.cell; ++x) {
                const Rgb c = img.at(x, y);
                found |= wantBlack ? (c.r < 40 && c.g < 40 && c.b < 40) : (c.r > 220 && c.g > 220 && c.b > 220);
            }
        return found;
    };
    EXPECT_TRUE(extremes(0, 0, true));
    EXPECT_TRUE(extremes(3, 0, false));
    // The text stays in the middle: the cell's corners keep the exact colour.
    EXPECT_EQ(img.at(m.left + 2, m.top + 3 * m.cell + 2), cellColour(f, 3, 0));
    EXPECT_EQ(img.at(m.left + m.cell - 3, m.top + 4 * m.cell - 3), cellColour(f, 3, 0));
}

TEST_F(HeatmapImage, GrayscaleCellCentresAreGrey) {
    render::HeatmapFigure f;
    f.colormap = core::ColormapKind::Grayscale;
    f.showValues = false;
    f.weights = core::Mat(3, 5);
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 5; ++j) f.weights(i, j) = static_cast<float>(i * 5 + j) / 14.0f;
    f.blocked = core::MaskMat::Constant(3, 5, false);
    f.blocked(0, 4) = true;  // a hatch marks the corner of cell (0, 4)
    f.cellSize = 30;
    const Image img = decodePng(render::renderHeatmapPng(f));
    MatrixBox m;
    for (int y = 0; y < img.height && m.left < 0; ++y)
        for (int x = 0; x < img.width && m.left < 0; ++x)
            if (isHatch(img.at(x, y))) m = {x - 4 * 30, y, 30};
    ASSERT_GE(m.left, 0);
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 5; ++j) {
            if (f.blocked(i, j)) continue;
            const Rgb c = img.at(m.left + j * 30 + 15, m.top + i * 30 + 15);
            EXPECT_TRUE(c.r == c.g && c.g == c.b) << i << "," << j;
            EXPECT_EQ(c, cellColour(f, i, j)) << i << "," << j;
        }
}

TEST_F(HeatmapImage, AutomaticCellsForThreeHundredTokensKeepLabelsApart) {
    render::HeatmapFigure f = causalFigure(300);
    const Image img = decodePng(render::renderHeatmapPng(f));
    const MatrixBox m = locateCausalMatrix(img, cellColour(f, 0, 0));
    ASSERT_GE(m.cell, 2);
    EXPECT_LE(img.width, 1600);
    const int side = 300 * m.cell;

    // Row labels end a few pixels left of the matrix (ticks are closer); each drawn label is a
    // separate band of rows, one line tall, with white space between neighbours.
    std::vector<bool> rowInk(static_cast<std::size_t>(side), false);
    for (int y = 0; y < side; ++y)
        for (int x = m.left - 30; x < m.left - 8; ++x)
            rowInk[static_cast<std::size_t>(y)] = rowInk[static_cast<std::size_t>(y)] || isDark(img.at(x, m.top + y));
    const auto rowRuns = runs(rowInk);
    EXPECT_GE(rowRuns.size(), 10u);
    EXPECT_LT(rowRuns.size(), 300u);
    for (const auto& [start, length] : rowRuns) EXPECT_LE(length, 20) << "row labels overlap at y = " << start;

    // Column labels below the matrix, likewise separated along x.
    std::vector<bool> colInk(static_cast<std::size_t>(side), false);
    for (int x = 0; x < side; ++x)
        for (int y = m.top + side + 12; y < m.top + side + 30; ++y)
            colInk[static_cast<std::size_t>(x)] = colInk[static_cast<std::size_t>(x)] || isDark(img.at(m.left + x, y));
    const auto colRuns = runs(colInk);
    EXPECT_GE(colRuns.size(), 10u);
    for (const auto& [start, length] : colRuns) EXPECT_LE(length, 20) << "column labels overlap at x = " << start;
}

TEST_F(HeatmapImage, SvgHasOneRectPerCellWithTheTableColours) {
    render::HeatmapFigure f = causalFigure(4);
    f.rowLabels = {"a<b&c", "it's", "\"q\"", "x>y"};
    const std::string svg = render::renderHeatmapSvg(f);
    const std::string cells = svgGroup(svg, "cells");
    EXPECT_EQ(countOf(cells, "<rect"), 16u);
    const std::regex fillRe("fill=\"([^\"]+)\"");
    std::vector<std::string> fills;
    for (auto it = std::sregex_iterator(cells.begin(), cells.end(), fillRe); it != std::sregex_iterator(); ++it) fills.push_back((*it)[1]);
    ASSERT_EQ(fills.size(), 16u);
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j)
            EXPECT_EQ(fills[static_cast<std::size_t>(i * 4 + j)], f.blocked(i, j) ? "url(#masked)" : hexOf(cellColour(f, i, j)));

    EXPECT_NE(svg.find("<pattern id=\"masked\""), std::string::npos);
    EXPECT_NE(svg.find(hexOf(core::kMaskedInk)), std::string::npos);
    EXPECT_NE(svg.find(hexOf(core::kMaskedPaper)), std::string::npos);
    EXPECT_NE(svg.find(">a&lt;b&amp;c</text>"), std::string::npos);
    EXPECT_NE(svg.find(">it&apos;s</text>"), std::string::npos);
    EXPECT_NE(svg.find(">&quot;q&quot;</text>"), std::string::npos);
    EXPECT_NE(svg.find(">x&gt;y</text>"), std::string::npos);
    EXPECT_EQ(svg.find("a<b"), std::string::npos);
    EXPECT_NE(svg.find("font-family=\"DejaVu Sans, Droid Sans Fallback, "), std::string::npos);
    for (const char* caption : {">query (attending)<", ">key (attended-to)<", ">attention weight<", ">1.00<"})
        EXPECT_NE(svg.find(caption), std::string::npos) << caption;

    // The colour bar is the table itself, 256 bands from 1 at the top to 0 at the bottom.
    const std::string bar = svgGroup(svg, "colour-bar");
    EXPECT_EQ(countOf(bar, "<rect"), 256u);
    const core::ColormapTable& table = core::colormapTable(f.colormap);
    EXPECT_LT(bar.find(hexOf(table[255])), bar.find(hexOf(table[128])));
    EXPECT_LT(bar.find(hexOf(table[128])), bar.find(hexOf(table[0])));

    // Nothing masked: no pattern at all.
    f.blocked.resize(0, 0);
    const std::string open = render::renderHeatmapSvg(f);
    EXPECT_EQ(open.find("<pattern"), std::string::npos);
    EXPECT_EQ(open.find("url(#masked)"), std::string::npos);
    EXPECT_EQ(countOf(svgGroup(open, "cells"), "<rect"), 16u);
}

TEST_F(HeatmapImage, TheColourScaleDecidesTheCellsColoursAndTheBarSaysWhich) {
    // 64 keys, every weight 1/64 but one row's first key at 0.1: far below 1 everywhere.
    const int T = 64;
    render::HeatmapFigure f;
    f.weights = core::Mat::Constant(T, T, 1.0f / T);
    f.weights(0, 0) = 0.1f;
    for (int i = 0; i < T; ++i) f.rowLabels.push_back("t" + std::to_string(i)), f.colLabels.push_back("t" + std::to_string(i));
    f.showValues = false;
    const core::ColormapTable& table = core::colormapTable(f.colormap);
    const auto fills = [&](core::ColourScale scale) {
        f.scale = scale;
        const std::string svg = render::renderHeatmapSvg(f);
        return std::pair{svgGroup(svg, "cells"), svg};
    };
    // Fixed: 1/64 is entry 4 of 255, and the bar reads "attention weight".
    const auto [fixedCells, fixedSvg] = fills(core::ColourScale::Fixed);
    EXPECT_NE(fixedCells.find(hexOf(table[4])), std::string::npos);
    EXPECT_NE(fixedSvg.find(">attention weight<"), std::string::npos);
    // Auto, on a map of 4,096 weights (a long map: kAutoClipFrom), stretches to their 99th
    // percentile, 1/64, whatever the one outlier does: the outlier (1 of 4,096) is clipped, and
    // the flat rest is at the top of the bar with it.
    const auto [autoCells, autoSvg] = fills(core::ColourScale::Auto);
    EXPECT_NE(autoCells.find(hexOf(table[255])), std::string::npos);
    EXPECT_EQ(autoCells.find(hexOf(table[40])), std::string::npos);
    EXPECT_EQ(autoCells.find(hexOf(table[4])), std::string::npos);
    EXPECT_NE(autoSvg.find(">attention weight (top 0.02 % of weights clipped at 0.016)<"), std::string::npos);
    EXPECT_NE(autoSvg.find(">0.0156<"), std::string::npos);  // the top tick is the percentile
    {
        // A shorter map (32 keys, 1,024 weights) keeps the rule by the largest weight: stretched to
        // 0.1, 1/32 ÷ 0.1 is entry 80, and 0.1 the top.
        render::HeatmapFigure small;
        small.weights = core::Mat::Constant(32, 32, 1.0f / 32);
        small.weights(0, 0) = 0.1f;
        small.showValues = false;
        small.scale = core::ColourScale::Auto;
        const std::string svg = render::renderHeatmapSvg(small);
        const std::string cells = svgGroup(svg, "cells");
        EXPECT_NE(cells.find(hexOf(table[80])), std::string::npos);
        EXPECT_NE(cells.find(hexOf(table[255])), std::string::npos);
        EXPECT_NE(svg.find(">attention weight (stretched)<"), std::string::npos);
        EXPECT_NE(svg.find(">0.1<"), std::string::npos);
    }
    // Per row: every row but the first is uniform, so at the top of the bar.
    const auto [rowCells, rowSvg] = fills(core::ColourScale::Rows);
    EXPECT_NE(rowCells.find(hexOf(table[255])), std::string::npos);
    EXPECT_NE(rowSvg.find(">weight ÷ its row&apos;s largest<"), std::string::npos);
    // Log from 1e-3 (0.1 / 64 → 1e-3): 1/64 sits at (log10(1/64) + 3) / 3 = 0.398, entry 101.
    const auto [logCells, logSvg] = fills(core::ColourScale::Log);
    EXPECT_NE(logCells.find(hexOf(table[core::colormapIndex((std::log10(1.0f / T) + 3.0f) / 3.0f, 0.0f, 1.0f)])), std::string::npos);
    for (const char* tick : {">1e-3<", ">1e-2<", ">1e-1<", ">1<", ">attention weight (log scale)<"})
        EXPECT_NE(logSvg.find(tick), std::string::npos) << tick;
}

TEST_F(HeatmapImage, LargeSvgMergesRunsButCoversEveryCell) {
    const int T = 600;
    render::HeatmapFigure f = causalFigure(T);
    const std::string cells = svgGroup(render::renderHeatmapSvg(f), "cells");
    const std::regex rectRe("<rect x=\"(\\d+)\" y=\"(\\d+)\" width=\"(\\d+)\" height=\"(\\d+)\" fill=\"([^\"]+)\"");
    long long area = 0, rects = 0, masked = 0;
    int cell = 0;
    for (auto it = std::sregex_iterator(cells.begin(), cells.end(), rectRe); it != std::sregex_iterator(); ++it) {
        cell = std::stoi((*it)[4]);
        area += std::stoll((*it)[3]) * cell;
        masked += (*it)[5] == "url(#masked)" ? std::stoll((*it)[3]) / cell : 0;
        ++rects;
    }
    ASSERT_GT(cell, 0);
    EXPECT_EQ(area, static_cast<long long>(T) * T * cell * cell);
    EXPECT_EQ(masked, static_cast<long long>(T) * (T - 1) / 2);
    EXPECT_LT(rects, static_cast<long long>(T) * T / 2);
}

TEST_F(HeatmapImage, ExportChoosesByExtensionAndFailsCleanly) {
    const render::HeatmapFigure f = causalFigure(3);
    render::exportHeatmap((m_dir / "fig.PNG").string(), f);
    EXPECT_EQ(readFile(m_dir / "fig.PNG").substr(0, 8), "\x89PNG\r\n\x1a\n");
    render::exportHeatmap((m_dir / "fig.Svg").string(), f);
    EXPECT_EQ(readFile(m_dir / "fig.Svg").substr(0, 5), "<?xml");

    const std::string gif = (m_dir / "x.gif").string();
    try {
        render::exportHeatmap(gif, f);
        ADD_FAILURE() << "a .gif was accepted";
    } catch (const core::InputError& e) {
        EXPECT_EQ(e.message(), gif + ": unknown image type; use .png or .svg");
    }
    EXPECT_FALSE(fs::exists(gif));

    const std::string missing = (m_dir / "no-such-folder" / "fig.png").string();
    try {
        render::exportHeatmap(missing, f);
        ADD_FAILURE() << "wrote into a missing folder";
    } catch (const core::InputError& e) {
        EXPECT_NE(e.message().find(missing), std::string::npos) << e.message();
    }

    // A figure that cannot be drawn leaves the existing file byte for byte, with no stray files.
    const fs::path keep = m_dir / "keep.png";
    render::exportHeatmap(keep.string(), f);
    const std::string before = readFile(keep);
    render::HeatmapFigure bad = f;
    bad.rowLabels.pop_back();
    try {
        render::exportHeatmap(keep.string(), bad);
        ADD_FAILURE() << "a figure with 2 labels for 3 rows was drawn";
    } catch (const core::InputError& e) {
        EXPECT_NE(e.message().find(keep.string()), std::string::npos) << e.message();
        EXPECT_NE(e.message().find("expected 3"), std::string::npos) << e.message();
    }
    EXPECT_EQ(readFile(keep), before);
    EXPECT_EQ(std::distance(fs::directory_iterator(m_dir), fs::directory_iterator()), 3);
}

TEST_F(HeatmapImage, RejectsInconsistentFigures) {
    const auto fails = [](const render::HeatmapFigure& f, const std::string& where) {
        try {
            (void)render::renderHeatmapPng(f);
        } catch (const core::InputError& e) {
            EXPECT_EQ(e.where(), where) << e.message();
            EXPECT_THROW((void)render::renderHeatmapSvg(f), core::InputError);
            return;
        }
        ADD_FAILURE() << "accepted a figure with bad " << where;
    };
    render::HeatmapFigure empty;
    fails(empty, "weights");
    render::HeatmapFigure f = causalFigure(3);
    f.colLabels.push_back("extra");
    fails(f, "column labels");
    f = causalFigure(3);
    f.blocked = core::MaskMat::Constant(2, 3, false);
    fails(f, "mask");
    f = causalFigure(3);
    f.cellSize = 5000;
    fails(f, "cell size");
    f.cellSize = -1;
    fails(f, "cell size");

    // No labels at all is fine: rows and columns are numbered.
    f = causalFigure(3);
    f.rowLabels.clear();
    f.colLabels.clear();
    EXPECT_NE(render::renderHeatmapSvg(f).find(">2</text>"), std::string::npos);
}

TEST_F(HeatmapImage, DrawsAnyUtf8WithoutCrashing) {
    render::HeatmapFigure f = causalFigure(8);
    f.rowLabels = {"\u03b1", "\u03c4", "\u221ad", "\u03a3", "t\u2081", "\U0001F980", "bad\xff\xfe", "e\u0301"};
    f.colLabels = f.rowLabels;
    f.title = "Head 1 \u00b7 \u03c4 = 1.00 \u00b7 causal \U0001F980";
    EXPECT_GT(decodePng(render::renderHeatmapPng(f)).width, 0);
    const std::string svg = render::renderHeatmapSvg(f);
    EXPECT_NE(svg.find(">\u03b1</text>"), std::string::npos);
    EXPECT_NE(svg.find(">bad\uFFFD\uFFFD</text>"), std::string::npos);  // invalid bytes never reach the XML
    EXPECT_EQ(svg.find('\xff'), std::string::npos);
}

TEST_F(HeatmapImage, RasterTextBoxesMissingGlyphsAndRotates) {
    const render::Font font("DejaVuSans.ttf");
    // A code point DejaVu lacks still takes room and leaves ink (the box), like a letter does.
    EXPECT_GT(font.textWidth("\U0001F980", 20), 8.0f);
    render::Canvas canvas(200, 200);
    font.draw(canvas, "\U0001F980", 10, 40, 20, {0, 0, 0});
    int ink = 0;
    for (int y = 0; y < 50; ++y)
        for (int x = 0; x < 50; ++x) ink += isDark(canvas.at(x, y));
    EXPECT_GT(ink, 20);

    // Upright text is taller than wide and ends above its start point.
    render::Canvas up(200, 200);
    font.draw(up, "attention weight", 100, 190, 14, {0, 0, 0}, render::TextDirection::Up);
    int minX = 200, maxX = -1, minY = 200, maxY = -1;
    for (int y = 0; y < 200; ++y)
        for (int x = 0; x < 200; ++x)
            if (isDark(up.at(x, y))) {
                minX = std::min(minX, x), maxX = std::max(maxX, x);
                minY = std::min(minY, y), maxY = std::max(maxY, y);
            }
    ASSERT_GE(maxX, 0);
    EXPECT_GT(maxY - minY, 4 * (maxX - minX));
    EXPECT_LE(maxY, 190);
    EXPECT_LE(maxX, 104);  // glyph tops point left of the baseline; only descenders cross it
    EXPECT_NEAR(maxY - minY, font.textWidth("attention weight", 14), 3.0f);

    // Hatching is only ever the two mask colours, both present.
    render::Canvas hatch(40, 30);
    hatch.hatchRect(3, 2, 31, 25, 4);
    bool inkSeen = false, paperSeen = false;
    for (int y = 2; y < 27; ++y)
        for (int x = 3; x < 34; ++x) {
            ASSERT_TRUE(isHatch(hatch.at(x, y)));
            inkSeen |= hatch.at(x, y) == core::kMaskedInk;
            paperSeen |= hatch.at(x, y) == core::kMaskedPaper;
        }
    EXPECT_TRUE(inkSeen && paperSeen);
    EXPECT_EQ(hatch.at(2, 2), (Rgb{255, 255, 255}));
}

TEST_F(HeatmapImage, FindsFontsAndNamesThePackageWhenMissing) {
    const std::string path = fonts::findFont("DejaVuSans.ttf");
    EXPECT_TRUE(fs::is_regular_file(path)) << path;
    const std::string& bytes = fonts::fontBytes("DejaVuSans.ttf");
    EXPECT_EQ(&bytes, &fonts::fontBytes("DejaVuSans.ttf"));     // read once
    EXPECT_EQ(bytes.substr(0, 4), std::string("\0\1\0\0", 4));  // TrueType

    // $ATTNVIZ_FONT_DIR comes first.
    fs::copy_file(path, m_dir / "DejaVuSans.ttf");
    ::setenv("ATTNVIZ_FONT_DIR", m_dir.c_str(), 1);
    const std::string fromEnv = fonts::findFont("DejaVuSans.ttf");
    ::unsetenv("ATTNVIZ_FONT_DIR");
    EXPECT_EQ(fromEnv, (m_dir / "DejaVuSans.ttf").string());

    try {
        (void)fonts::findFont("NoSuchFont-attnviz.ttf");
        ADD_FAILURE() << "found a font that does not exist";
    } catch (const core::InputError& e) {
        EXPECT_EQ(e.message(), "fonts: NoSuchFont-attnviz.ttf not found; install fonts-dejavu-core");
    }
}

namespace {

// A long causal map: row i a softmax over keys 0 … i of Gaussian scores (σ = 1.5), so most weights
// are near 1/(i + 1), while the first rows, with few keys, are sharp (row 0 is 1 on key 0).
render::HeatmapFigure longCausalFigure(int T) {
    render::HeatmapFigure f;
    f.weights = core::Mat::Zero(T, T);
    f.blocked = core::MaskMat::Constant(T, T, false);
    core::Prng rng(2048);
    for (int i = 0; i < T; ++i) {
        for (int j = 0; j <= i; ++j) f.weights(i, j) = std::exp(1.5f * static_cast<float>(rng.normal()));
        f.weights.row(i) /= f.weights.row(i).sum();
        for (int j = i + 1; j < T; ++j) f.blocked(i, j) = true;
    }
    return f;
}

// The colormap entries of the readable cells' centres in the decoded PNG (-1: not a table colour).
std::vector<int> cellIndices(const render::HeatmapFigure& f) {
    const Image img = decodePng(render::renderHeatmapPng(f));
    const core::ColormapTable& table = core::colormapTable(f.colormap);
    const auto top = table[255];
    const MatrixBox m = locateCausalMatrix(img, top);  // row 0 is 1 on key 0: the top colour under any scale
    std::vector<int> out;
    if (m.cell < 1) return out;
    const auto t = static_cast<int>(f.weights.rows());
    for (int i = 0; i < t; ++i)
        for (int j = 0; j <= i; ++j) {
            const Rgb c = img.at(m.left + j * m.cell + m.cell / 2, m.top + i * m.cell + m.cell / 2);
            const auto it = std::find(table.begin(), table.end(), c);
            out.push_back(it == table.end() ? -1 : static_cast<int>(it - table.begin()));
        }
    return out;
}

}  // namespace

TEST_F(HeatmapImage, AutoShowsALongMapsStructureAndSaysWhatItClipped) {
    render::HeatmapFigure f = longCausalFigure(256);
    const auto brightShare = [](const std::vector<int>& indices) {
        return static_cast<double>(std::count_if(indices.begin(), indices.end(), [](int k) { return k >= 64; })) /
               static_cast<double>(indices.size());
    };
    // Before (0 … 1, what Auto gave when the sharp first rows put the largest weight above 0.25):
    // nearly every cell in the bottom quarter of the bar.
    f.scale = core::ColourScale::Fixed;
    const std::vector<int> fixed = cellIndices(f);
    ASSERT_EQ(fixed.size(), 256u * 257u / 2u);
    EXPECT_LT(brightShare(fixed), 0.01);
    // Auto: stretched to the 99th percentile, a spread of colours over the whole bar.
    f.scale = core::ColourScale::Auto;
    const std::vector<int> automatic = cellIndices(f);
    ASSERT_EQ(automatic.size(), fixed.size());
    EXPECT_EQ(std::count(automatic.begin(), automatic.end(), -1), 0);
    // (On this map: 0.16 % of the cells above a quarter of the bar at 0 … 1, 6.9 % under Auto; the
    // upper quartile of the cells at entry 2 of 255 at 0 … 1, at 17 under Auto.)
    EXPECT_GT(brightShare(automatic), 0.05);
    EXPECT_GT(brightShare(automatic), 20.0 * brightShare(fixed));
    const auto upperQuartile = [](std::vector<int> indices) {
        std::nth_element(indices.begin(), indices.begin() + static_cast<std::ptrdiff_t>(3 * indices.size() / 4), indices.end());
        return indices[3 * indices.size() / 4];
    };
    EXPECT_LE(upperQuartile(fixed), 2);
    EXPECT_GE(upperQuartile(automatic), 12);
    std::vector<int> distinct = automatic;
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
    EXPECT_GT(distinct.size(), 200u);
    // At most 1 % of the cells at the top colour (the clipped ones, and the 99th percentile itself).
    const double atTop = static_cast<double>(std::count(automatic.begin(), automatic.end(), 255)) / static_cast<double>(automatic.size());
    EXPECT_GT(atTop, 0.002);
    EXPECT_LE(atTop, 0.0102);
    // The colour bar's caption says what share is clipped, and where.
    const std::string svg = render::renderHeatmapSvg(f);
    const std::regex caption(R"(>attention weight \(top ([0-9.]+) % of weights clipped at ([0-9.e-]+)\)<)");
    std::smatch match;
    ASSERT_TRUE(std::regex_search(svg, match, caption)) << "no clipping caption";
    const double percent = std::stod(match[1]), at = std::stod(match[2]);
    EXPECT_GT(percent, 0.0);
    EXPECT_LE(percent, 1.0);
    std::vector<float> readable;
    for (int i = 0; i < 256; ++i)
        for (int j = 0; j <= i; ++j) readable.push_back(f.weights(i, j));
    std::nth_element(readable.begin(), readable.begin() + static_cast<std::ptrdiff_t>(std::ceil(0.99 * readable.size())) - 1,
                     readable.end());
    const double q99 = readable[static_cast<std::size_t>(std::ceil(0.99 * readable.size())) - 1];
    EXPECT_NEAR(at, q99, 0.05 * q99);  // printed to two significant digits
    // A short map keeps its look: the seed-sized causal figure has no clipping caption.
    EXPECT_EQ(render::renderHeatmapSvg(causalFigure(6)).find("clipped"), std::string::npos);
}
