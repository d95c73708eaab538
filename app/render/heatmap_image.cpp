// Heatmap figures: one layout pass measures everything with the real font, then two back ends
// draw the same boxes: a raster (PNG) and vector SVG. The pieces every figure shares (text and
// line items, fonts, colour bar, SVG groups) are in figure_parts; each part here is a numbered section.
#include "app/render/heatmap_image.hpp"

#include "app/render/figure_parts.hpp"
#include "app/render/raster.hpp"
#include "core/attention/attention.hpp"
#include "core/base/error.hpp"
#include "core/base/files.hpp"
#include "core/base/format.hpp"
#include "core/text/tokenizer.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>

namespace attnviz::render {
namespace {

using figure::Anchor;
using figure::FigureFonts;
using figure::Line;
using figure::TextItem;

// ---- 1. Sizes and style -----------------------------------------------------------------------

constexpr int kTargetMatrixSide = 720;  // automatic cells aim for a matrix about this wide
constexpr int kMinAutoCell = 2, kMaxAutoCell = 64;
// Automatic cells drop to 1 px only above 4096 tokens, where 2 px would pass this side.
constexpr int kMaxMatrixSide = 8192;
constexpr int kMinLabelPitch = 12;     // px between drawn labels; below, every k-th label
constexpr int kMinValueCell = 28;      // cells at least this big print their weight
constexpr float kMaxLabelWidth = 150;  // longer labels end in "…"

constexpr float kMaxLabelPx = 15, kMaxValuePx = 14;
constexpr const char* kRowCaption = "query (attending)";
constexpr const char* kColCaption = "key (attended-to)";

struct Layout {
    core::Mat colours;  // [rows, cols] each cell's position on the colour bar, 0 … 1 (the figure's scale)
    core::ColourScale scale = core::ColourScale::Fixed;  // resolved
    float logFloor = 0.01f;
    int rows = 0, cols = 0, cell = 0;
    int width = 0, height = 0;
    int matrixX = 0, matrixY = 0;
    int stripe = 2;  // hatch stripe width along x
    int barX = 0, barY = 0, barW = 16, barH = 0;
    std::vector<TextItem> texts;
    std::vector<Line> lines;
};

bool isBlocked(const HeatmapFigure& f, int i, int j) { return f.blocked.size() != 0 && f.blocked(i, j); }

// ---- 2. Validation and cell size --------------------------------------------------------------

void validate(const HeatmapFigure& f) {
    const auto rows = f.weights.rows(), cols = f.weights.cols();
    if (rows == 0 || cols == 0) throw core::InputError("weights", "empty matrix (" + core::shapeString(rows, cols) + "); nothing to draw");
    if (!f.rowLabels.empty() && static_cast<Eigen::Index>(f.rowLabels.size()) != rows)
        throw core::InputError("row labels",
                               "expected " + std::to_string(rows) + " (one per query row), got " + std::to_string(f.rowLabels.size()));
    if (!f.colLabels.empty() && static_cast<Eigen::Index>(f.colLabels.size()) != cols)
        throw core::InputError("column labels",
                               "expected " + std::to_string(cols) + " (one per key column), got " + std::to_string(f.colLabels.size()));
    if (f.blocked.size() != 0 && (f.blocked.rows() != rows || f.blocked.cols() != cols))
        throw core::InputError(
            "mask", "expected " + core::shapeString(rows, cols) + ", got " + core::shapeString(f.blocked.rows(), f.blocked.cols()));
    const auto longest = std::max(rows, cols);
    if (longest > kMaxMatrixSide)
        throw core::InputError("weights", core::shapeString(rows, cols) + " is too large for an image (at most " +
                                              std::to_string(kMaxMatrixSide) + " rows and columns)");
    if (f.cellSize < 0)
        throw core::InputError("cell size", "must be 0 (automatic) or a number of pixels, got " + std::to_string(f.cellSize));
    if (f.cellSize > 0 && longest * f.cellSize > kMaxMatrixSide)
        throw core::InputError("cell size", std::to_string(f.cellSize) + " px makes the matrix too large (at most " +
                                                std::to_string(kMaxMatrixSide) + " px per side)");
}

int chooseCell(const HeatmapFigure& f) {
    if (f.cellSize > 0) return f.cellSize;
    const int longest = static_cast<int>(std::max(f.weights.rows(), f.weights.cols()));
    const int cell = std::clamp(kTargetMatrixSide / longest, kMinAutoCell, kMaxAutoCell);
    return longest * cell <= kMaxMatrixSide ? cell : std::max(1, kMaxMatrixSide / longest);
}

// 1 when every label fits; else the smallest of 2, 5, 10, 20, 50, … that spaces labels readably.
int labelStride(int cell) {
    if (cell >= kMinLabelPitch) return 1;
    for (int decade = 1;; decade *= 10)
        for (const int k : {2 * decade, 5 * decade, 10 * decade})
            if (cell * k >= kMinLabelPitch) return k;
}

// ---- 3. Layout --------------------------------------------------------------------------------
// Left to right: row caption | row labels | matrix | Σ column | colour bar, ticks, caption.
// Top to bottom: title | matrix | column labels | column caption.

Layout layOut(const HeatmapFigure& f, const FigureFonts& fonts) {
    const Font& font = fonts.regular;
    Layout L;
    L.rows = static_cast<int>(f.weights.rows());
    L.cols = static_cast<int>(f.weights.cols());
    // The cells' colours under the figure's scale, masked cells left out of the largest weight.
    float largest = 0.0f;
    std::vector<float> positions(static_cast<std::size_t>(L.rows) * static_cast<std::size_t>(L.cols));
    for (int i = 0; i < L.rows; ++i)
        for (int j = 0; j < L.cols; ++j) {
            const bool masked = isBlocked(f, i, j);
            if (!masked) largest = std::max(largest, f.weights(i, j));
            positions[static_cast<std::size_t>(i) * static_cast<std::size_t>(L.cols) + static_cast<std::size_t>(j)] =
                masked ? core::kMaskedTexel : f.weights(i, j);
        }
    const long long keys = f.keys > 0 ? f.keys : L.cols;
    const core::ScaleChoice choice = core::chooseScale(f.scale, positions.data(), positions.size(), keys, f.clipQuantile);
    L.scale = choice.resolved;
    L.logFloor = core::logFloor(keys);
    core::toScalePositions(L.scale, positions.data(), L.rows, L.cols, choice.top, L.logFloor);
    L.colours = Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(positions.data(), L.rows, L.cols);
    const figure::ColourBarScale bar = figure::colourBarScale(choice, L.logFloor);
    L.cell = chooseCell(f);
    L.stripe = std::clamp(L.cell / 6, 2, 8);
    const int cell = L.cell, matrixW = L.cols * cell, matrixH = L.rows * cell;
    const int stride = labelStride(cell), pitch = stride * cell;
    const float labelPx = std::clamp(std::floor(static_cast<float>(pitch) * 0.8f), 10.0f, kMaxLabelPx);

    // Labels: every stride-th row and column; columns turn upright when any is too wide.
    std::vector<int> rowIdx, colIdx;
    for (int i = 0; i < L.rows; i += stride) rowIdx.push_back(i);
    for (int j = 0; j < L.cols; j += stride) colIdx.push_back(j);
    std::vector<std::string> rowText, colText, sumText;
    float rowLabelW = 0, colLabelW = 0, sumW = f.showRowSums ? font.textWidth("\u03A3", labelPx) : 0;
    for (const int i : rowIdx) {
        rowText.push_back(figure::labelText(f.rowLabels, i, font, labelPx, kMaxLabelWidth));
        rowLabelW = std::max(rowLabelW, font.textWidth(rowText.back(), labelPx));
        if (f.showRowSums) {
            sumText.push_back(core::formatFixed(f.weights.row(i).sum(), 2));
            sumW = std::max(sumW, font.textWidth(sumText.back(), labelPx));
        }
    }
    for (const int j : colIdx) {
        colText.push_back(figure::labelText(f.colLabels, j, font, labelPx, kMaxLabelWidth));
        colLabelW = std::max(colLabelW, font.textWidth(colText.back(), labelPx));
    }
    const bool colsUp = colLabelW > static_cast<float>(pitch - 4);
    const int colLabelExtent = colsUp ? figure::ceilPx(colLabelW) : figure::lineHeight(font, labelPx);
    const int tickLen = stride > 1 ? 4 : 0;  // ticks show which row a sparse label belongs to

    // Horizontal positions.
    int x = figure::kMargin;
    const int rowCaptionBaseline = x + figure::ceilPx(font.ascent(figure::kCaptionPx));
    x += figure::lineHeight(font, figure::kCaptionPx) + 10;
    const int rowLabelRight = x + figure::ceilPx(rowLabelW);
    L.matrixX = rowLabelRight + 6 + tickLen;
    x = L.matrixX + matrixW;
    const int sumRight = f.showRowSums ? x + 12 + figure::ceilPx(sumW) : x;
    L.barX = sumRight + 28;
    const float barTickX = static_cast<float>(L.barX + L.barW + 8);
    float tickW = font.textWidth("0.00", figure::kTickPx);
    for (const auto& tick : bar.ticks) tickW = std::max(tickW, font.textWidth(tick.second, figure::kTickPx));
    x = static_cast<int>(barTickX) + figure::ceilPx(tickW) + 10;
    const int barCaptionBaseline = x + figure::ceilPx(font.ascent(figure::kTickPx + 1));
    L.width = x + figure::lineHeight(font, figure::kTickPx + 1) + figure::kMargin;

    // Vertical positions; the matrix moves down if the row caption is taller than it.
    const float titleW = f.title.empty() ? 0 : fonts.bold.textWidth(core::sanitizeUtf8(f.title), figure::kTitlePx);
    const int titleH = f.title.empty() ? 0 : figure::lineHeight(font, figure::kTitlePx) + 14;
    const int rowCaptionW = figure::ceilPx(font.textWidth(kRowCaption, figure::kCaptionPx));
    L.matrixY = figure::kMargin + titleH + std::max(0, rowCaptionW / 2 - matrixH / 2);
    L.barY = L.matrixY;
    L.barH = std::max(matrixH, std::max(160, figure::ceilPx(font.textWidth(bar.caption, figure::kTickPx + 1)) + 20));
    int y = L.matrixY + matrixH + 6 + tickLen;
    const int colLabelTop = y;
    y += colLabelExtent + 10;
    const int colCaptionBaseline = y + figure::ceilPx(font.ascent(figure::kCaptionPx));
    y += figure::lineHeight(font, figure::kCaptionPx);
    L.height = std::max({y + figure::kMargin, L.barY + L.barH + figure::lineHeight(font, figure::kTickPx) / 2 + figure::kMargin,
                         L.matrixY + matrixH / 2 + rowCaptionW / 2 + figure::kMargin});

    // Title centred over the matrix, shifted or widened so it never leaves the figure.
    if (!f.title.empty()) {
        float cx = static_cast<float>(L.matrixX) + static_cast<float>(matrixW) / 2.0f;
        cx = std::max(cx, static_cast<float>(figure::kMargin) + titleW / 2.0f);
        L.width = std::max(L.width, figure::ceilPx(cx + titleW / 2.0f) + figure::kMargin);
        L.texts.push_back({core::sanitizeUtf8(f.title), cx, static_cast<float>(figure::kMargin) + font.ascent(figure::kTitlePx),
                           figure::kTitlePx, Anchor::Middle, figure::kText, false, true});
    }

    // Captions.
    const float matrixMidY = static_cast<float>(L.matrixY) + static_cast<float>(matrixH) / 2.0f;
    L.texts.push_back(
        {kRowCaption, static_cast<float>(rowCaptionBaseline), matrixMidY, figure::kCaptionPx, Anchor::Middle, figure::kCaption, true});
    L.texts.push_back({kColCaption, static_cast<float>(L.matrixX) + static_cast<float>(matrixW) / 2.0f,
                       static_cast<float>(colCaptionBaseline), figure::kCaptionPx, Anchor::Middle, figure::kCaption});

    // Row labels (right-aligned), row sums, column labels.
    for (std::size_t n = 0; n < rowIdx.size(); ++n) {
        const float cy = static_cast<float>(L.matrixY + rowIdx[n] * cell) + static_cast<float>(cell) / 2.0f;
        L.texts.push_back(
            {rowText[n], static_cast<float>(rowLabelRight), figure::centredBaseline(cy, labelPx), labelPx, Anchor::End, figure::kText});
        if (f.showRowSums)
            L.texts.push_back(
                {sumText[n], static_cast<float>(sumRight), figure::centredBaseline(cy, labelPx), labelPx, Anchor::End, figure::kText});
        if (tickLen) L.lines.push_back({L.matrixX - 1 - tickLen, static_cast<int>(cy), tickLen, 1, figure::kFrame});
    }
    if (f.showRowSums)
        L.texts.push_back({"\u03A3", static_cast<float>(sumRight) - sumW / 2.0f, static_cast<float>(colLabelTop) + font.ascent(labelPx),
                           labelPx, Anchor::Middle, figure::kText});
    for (std::size_t n = 0; n < colIdx.size(); ++n) {
        const float cx = static_cast<float>(L.matrixX + colIdx[n] * cell) + static_cast<float>(cell) / 2.0f;
        if (colsUp)
            L.texts.push_back({colText[n], figure::centredBaseline(cx, labelPx), static_cast<float>(colLabelTop), labelPx, Anchor::End,
                               figure::kText, true});
        else
            L.texts.push_back(
                {colText[n], cx, static_cast<float>(colLabelTop) + font.ascent(labelPx), labelPx, Anchor::Middle, figure::kText});
        if (tickLen) L.lines.push_back({static_cast<int>(cx), L.matrixY + matrixH + 1, 1, tickLen, figure::kFrame});
    }

    // Weights printed inside big enough cells, sized so "0.00" leaves a margin.
    const float valuePx = std::clamp(static_cast<float>(cell - 6) / font.textWidth("0.00", 1.0f), 8.0f, kMaxValuePx);
    if (f.showValues && cell >= kMinValueCell)
        for (int i = 0; i < L.rows; ++i)
            for (int j = 0; j < L.cols; ++j) {
                if (isBlocked(f, i, j)) continue;
                const float w = f.weights(i, j);
                const core::Rgb c = core::colormapColor(f.colormap, L.colours(i, j), 0.0f, 1.0f);
                L.texts.push_back({core::formatFixed(w, 2), static_cast<float>(L.matrixX + j * cell) + cell / 2.0f,
                                   figure::centredBaseline(static_cast<float>(L.matrixY + i * cell) + cell / 2.0f, valuePx), valuePx,
                                   Anchor::Middle, figure::contrastingText(c)});
            }

    // Colour bar ticks and caption; frames just outside the matrix and the bar.
    for (const auto& [v, label] : bar.ticks) {
        const int ty = std::min(L.barY + L.barH - 1, L.barY + static_cast<int>(std::lround((1.0f - v) * L.barH)));
        L.lines.push_back({L.barX + L.barW, ty, 5, 1, figure::kFrame});
        L.texts.push_back({label, barTickX, figure::centredBaseline(static_cast<float>(ty), figure::kTickPx), figure::kTickPx,
                           Anchor::Start, figure::kText});
    }
    L.texts.push_back({bar.caption, static_cast<float>(barCaptionBaseline), static_cast<float>(L.barY) + static_cast<float>(L.barH) / 2.0f,
                       figure::kTickPx + 1, Anchor::Middle, figure::kCaption, true});
    // Where generated tokens start, on both axes (a pooled map's cells each ⌈keys / columns⌉ tokens a
    // side: at from / that many cells).
    if (const long long keys = f.keys > 0 ? f.keys : L.cols; f.generatedFrom > 0 && f.generatedFrom < keys && L.rows == L.cols) {
        const long long factor = (keys + L.cols - 1) / L.cols;
        const int at = static_cast<int>(std::lround(static_cast<double>(f.generatedFrom) * cell / static_cast<double>(factor)));
        L.lines.push_back({L.matrixX + at - 1, L.matrixY, 2, matrixH, figure::kGenerated});
        L.lines.push_back({L.matrixX, L.matrixY + at - 1, matrixW, 2, figure::kGenerated});
    }
    figure::frameBox(L.lines, L.matrixX, L.matrixY, matrixW, matrixH, figure::kFrame);
    figure::frameBox(L.lines, L.barX, L.barY, L.barW, L.barH, figure::kFrame);
    return L;
}

// ---- 4. PNG -----------------------------------------------------------------------------------

std::string drawPng(const HeatmapFigure& f, const Layout& L, const FigureFonts& fonts) {
    Canvas canvas(L.width, L.height);
    for (int i = 0; i < L.rows; ++i)
        for (int j = 0; j < L.cols; ++j) {
            const int x = L.matrixX + j * L.cell, y = L.matrixY + i * L.cell;
            if (isBlocked(f, i, j)) canvas.hatchRect(x, y, L.cell, L.cell, L.stripe);
            else canvas.fillRect(x, y, L.cell, L.cell, core::colormapColor(f.colormap, L.colours(i, j), 0.0f, 1.0f));
        }
    figure::drawColourBar(canvas, f.colormap, L.barX, L.barY, L.barW, L.barH);
    figure::drawLines(canvas, L.lines);
    figure::drawTexts(canvas, L.texts, fonts);
    return canvas.encodePng();
}

// ---- 5. SVG -----------------------------------------------------------------------------------

std::string drawSvg(const HeatmapFigure& f, const Layout& L) {
    const bool anyBlocked = f.blocked.size() != 0 && f.blocked.any();
    std::string s = figure::svgOpen(L.width, L.height, anyBlocked ? figure::svgMaskedPattern(L.stripe) : std::string());
    s.reserve(static_cast<std::size_t>(L.rows) * static_cast<std::size_t>(L.cols) * 64 + 4096);

    // One rect per cell, row-major; above 512 columns, runs of equal colour merge into one rect.
    s += "<g id=\"cells\" shape-rendering=\"crispEdges\">\n";
    const bool merge = L.cols > 512;
    const auto fill = [&](int i, int j) {
        return isBlocked(f, i, j) ? std::string("url(#masked)") : figure::hex(core::colormapColor(f.colormap, L.colours(i, j), 0.0f, 1.0f));
    };
    for (int i = 0; i < L.rows; ++i)
        figure::appendCellRowSvg(s, L.matrixX, L.matrixY + i * L.cell, L.cell, L.cols, merge, [&](int j) { return fill(i, j); });
    s += "</g>\n";

    figure::appendColourBarSvg(s, f.colormap, L.barX, L.barY, L.barW, L.barH);
    return s;
}

constexpr figure::Drawing<HeatmapFigure, Layout> kDrawing{validate, layOut, drawPng, drawSvg};

}  // namespace

std::string renderHeatmapPng(const HeatmapFigure& f) { return kDrawing.draw(f, figure::FileType::Png); }

std::string renderHeatmapSvg(const HeatmapFigure& f) { return kDrawing.draw(f, figure::FileType::Svg); }

bool heatmapIsPng(const std::string& path) { return figure::fileType(path) == figure::FileType::Png; }

std::string encodeHeatmap(const std::string& path, const HeatmapFigure& figure) { return kDrawing.encode(path, figure); }

void exportHeatmap(const std::string& path, const HeatmapFigure& figure) { core::writeFileAtomic(path, encodeHeatmap(path, figure)); }

}  // namespace attnviz::render
