// Small-multiple figures of every head: the tiles are pooled and coloured once, in one scale
// decided over all of them, then the raster (PNG) and SVG back ends draw the same boxes.
#include "app/render/heads_image.hpp"

#include "app/render/figure_parts.hpp"
#include "app/render/heatmap_image.hpp"
#include "core/attention/attention.hpp"
#include "core/base/error.hpp"
#include "core/text/tokenizer.hpp"

#include <algorithm>
#include <cmath>

namespace attnviz::render {
namespace {

using figure::Anchor;
using figure::Line;
using figure::TextItem;

// ---- 1. Sizes and style -----------------------------------------------------------------------

constexpr int kMaxImageSide = 2400;
constexpr int kTargetTile = 240, kMaxTile = 360, kMinTile = 48, kMaxCell = 48;
constexpr int kGapX = 18, kGapY = 14, kBarW = 16;
constexpr int kMergeAbove = 64;  // tiles wider than this many cells merge runs of one colour in SVG
constexpr float kLabelPx = 13;

struct Tile {
    std::string label;
    core::Mat colours;  // [rows, cols] positions 0 … 1 on the colour bar, or kMaskedTexel
    int x = 0, y = 0;   // top-left pixel of the map
};

struct Layout {
    std::vector<Tile> tiles;
    int cell = 1, factor = 1;  // pixels per drawn cell; weights per drawn cell along each side
    int stripe = 2;
    int width = 0, height = 0;
    int barX = 0, barY = 0, barH = 0;
    std::vector<TextItem> texts;
    std::vector<Line> lines;
};

bool isBlocked(const HeadsFigure& f, Eigen::Index i, Eigen::Index j) { return f.blocked.size() != 0 && f.blocked(i, j); }

int tileCount(const HeadsFigure& f) {
    const int h = static_cast<int>(f.heads.size());
    return h + (f.includeMean && h > 1 ? 1 : 0);  // one head's mean is itself
}

// ---- 2. Validation ----------------------------------------------------------------------------

void validate(const HeadsFigure& f) {
    if (f.heads.empty()) throw core::InputError("heads", "no heads; nothing to draw");
    const Eigen::Index rows = f.heads.front().rows(), cols = f.heads.front().cols();
    if (rows == 0 || cols == 0) throw core::InputError("head 1", "empty matrix (" + core::shapeString(rows, cols) + "); nothing to draw");
    for (std::size_t h = 0; h < f.heads.size(); ++h) {
        const core::Mat& m = f.heads[h];
        const std::string where = "head " + std::to_string(h + 1);
        if (m.rows() != rows || m.cols() != cols)
            throw core::InputError(
                where, "expected " + core::shapeString(rows, cols) + " like head 1, got " + core::shapeString(m.rows(), m.cols()));
        if (!m.allFinite()) throw core::InputError(where, "has a weight that is not a finite number");
    }
    if (!f.headLabels.empty() && f.headLabels.size() != f.heads.size())
        throw core::InputError(
            "head labels", "expected " + std::to_string(f.heads.size()) + " (one per head), got " + std::to_string(f.headLabels.size()));
    if (f.blocked.size() != 0 && (f.blocked.rows() != rows || f.blocked.cols() != cols))
        throw core::InputError(
            "mask", "expected " + core::shapeString(rows, cols) + ", got " + core::shapeString(f.blocked.rows(), f.blocked.cols()));
    if (f.columns < 0)
        throw core::InputError("columns", "must be 0 (automatic) or a number of tiles per row, got " + std::to_string(f.columns));
}

// ---- 3. Tiles: mean, pooling, one colour scale ------------------------------------------------

// Block means over the readable cells of factor × factor blocks (clipped at the edges):
// [⌈T_q/f⌉, ⌈T_k/f⌉], kMaskedTexel where the whole block is masked. A mean, not a maximum, so
// that a stretched or per-row scale still shows the pattern of a long sentence.
core::Mat pooledMeans(const HeadsFigure& f, const core::Mat& w, int factor) {
    const Eigen::Index rows = core::pooledSize(w.rows(), factor), cols = core::pooledSize(w.cols(), factor);
    core::Mat out(rows, cols);
    for (Eigen::Index r = 0; r < rows; ++r)
        for (Eigen::Index c = 0; c < cols; ++c) {
            double sum = 0.0;
            int readable = 0;
            for (Eigen::Index i = r * factor; i < std::min(w.rows(), (r + 1) * factor); ++i)
                for (Eigen::Index j = c * factor; j < std::min(w.cols(), (c + 1) * factor); ++j)
                    if (!isBlocked(f, i, j)) sum += w(i, j), ++readable;
            out(r, c) = readable > 0 ? static_cast<float>(sum / readable) : core::kMaskedTexel;
        }
    return out;
}

// The drawn tiles in the figure's scale, resolved once over all of them (the largest readable
// cell of any tile, or Auto's quantile of all their cells), so the one colour bar reads true for each.
std::vector<Tile> colouredTiles(const HeadsFigure& f, int factor, core::ScaleChoice& choice, float& floor) {
    std::vector<Tile> tiles;
    if (tileCount(f) > static_cast<int>(f.heads.size())) {
        core::Mat mean = core::Mat::Zero(f.heads.front().rows(), f.heads.front().cols());
        for (const core::Mat& h : f.heads) mean += h;
        mean /= static_cast<float>(f.heads.size());
        tiles.push_back({"mean", pooledMeans(f, mean, factor)});
    }
    for (std::size_t h = 0; h < f.heads.size(); ++h)
        tiles.push_back({f.headLabels.empty() ? "head " + std::to_string(h + 1) : f.headLabels[h], pooledMeans(f, f.heads[h], factor)});
    // One scale for every tile, made definite by all of their cells.
    std::vector<float> all;
    for (const Tile& t : tiles) all.insert(all.end(), t.colours.data(), t.colours.data() + t.colours.size());
    choice = core::chooseScale(f.scale, all.data(), all.size(), f.heads.front().cols());
    floor = core::logFloor(f.heads.front().cols());
    for (Tile& t : tiles) core::toScalePositions(choice.resolved, t.colours.data(), t.colours.rows(), t.colours.cols(), choice.top, floor);
    return tiles;
}

// ---- 4. Layout --------------------------------------------------------------------------------
// Top to bottom: title | subtitle | rows of (label over tile). Right of the grid: the colour bar.

Layout layOut(const HeadsFigure& f, const figure::FigureFonts& fonts) {
    const Font& font = fonts.regular;
    Layout L;
    const int n = tileCount(f);
    const int columns = f.columns > 0 ? std::min(f.columns, n) : static_cast<int>(std::ceil(std::sqrt(static_cast<double>(n))));
    const int gridRows = (n + columns - 1) / columns;
    const int tq = static_cast<int>(f.heads.front().rows()), tk = static_cast<int>(f.heads.front().cols()), longest = std::max(tq, tk);

    // The largest tile that keeps the image within kMaxImageSide; below kMinTile, too many tiles.
    const int labelH = figure::lineHeight(font, kLabelPx) + 4;
    const int titleH =
        (f.title.empty() ? 0 : figure::lineHeight(font, figure::kTitlePx) + 6) + figure::lineHeight(font, figure::kSubtitlePx) + 12;
    const int roomW = kMaxImageSide - 2 * figure::kMargin - 110 - (columns - 1) * kGapX;  // 110: the colour bar, its ticks, caption
    const int roomH = kMaxImageSide - 2 * figure::kMargin - titleH - gridRows * labelH - (gridRows - 1) * kGapY;
    const int maxTile = std::min({kMaxTile, roomW / columns, roomH / gridRows});
    if (maxTile < kMinTile)
        throw core::InputError("heads", std::to_string(n) + " tiles in " + std::to_string(columns) +
                                            " columns do not fit in one image at " + std::to_string(kMinTile) + " px each");
    L.cell = std::clamp(kTargetTile / longest, 1, kMaxCell);
    if (longest * L.cell > maxTile) L.cell = std::max(1, maxTile / longest);
    if (longest > maxTile) L.factor = (longest + maxTile - 1) / maxTile;
    L.stripe = std::clamp(L.cell / 6, 2, 8);

    core::ScaleChoice choice;
    float floor = 0.0f;
    L.tiles = colouredTiles(f, L.factor, choice, floor);
    const int tileW = static_cast<int>(L.tiles.front().colours.cols()) * L.cell;
    const int tileH = static_cast<int>(L.tiles.front().colours.rows()) * L.cell;
    const int slotW = std::max(tileW, kMinTile);

    // Title and subtitle.
    int y = figure::kMargin;
    if (!f.title.empty()) {
        L.texts.push_back({core::sanitizeUtf8(f.title), static_cast<float>(figure::kMargin),
                           static_cast<float>(y) + font.ascent(figure::kTitlePx), figure::kTitlePx, Anchor::Start, figure::kText, false,
                           true});
        y += figure::lineHeight(font, figure::kTitlePx) + 6;
    }
    std::string subtitle = std::to_string(f.heads.size()) + (f.heads.size() == 1 ? " head" : " heads") + " · " + core::shapeString(tq, tk) +
                           " · rows: queries, columns: keys";
    if (L.factor > 1) subtitle += " · each cell the mean of " + std::to_string(L.factor) + " × " + std::to_string(L.factor) + " weights";
    L.texts.push_back({subtitle, static_cast<float>(figure::kMargin), static_cast<float>(y) + font.ascent(figure::kSubtitlePx),
                       figure::kSubtitlePx, Anchor::Start, figure::kCaption});
    y += figure::lineHeight(font, figure::kSubtitlePx) + 12;

    // Tiles, each with its label centred above it.
    const int gridTop = y;
    for (int t = 0; t < n; ++t) {
        Tile& tile = L.tiles[static_cast<std::size_t>(t)];
        const int col = t % columns, row = t / columns;
        tile.x = figure::kMargin + col * (slotW + kGapX) + (slotW - tileW) / 2;
        const int top = gridTop + row * (labelH + tileH + kGapY);
        tile.y = top + labelH;
        const std::string label = font.ellipsize(core::sanitizeUtf8(tile.label), kLabelPx, static_cast<float>(slotW));
        L.texts.push_back({label, static_cast<float>(tile.x) + static_cast<float>(tileW) / 2.0f,
                           static_cast<float>(top) + font.ascent(kLabelPx), kLabelPx, Anchor::Middle, figure::kText});
        figure::frameBox(L.lines, tile.x, tile.y, tileW, tileH, figure::kFrame);
    }
    const int gridW = columns * slotW + (columns - 1) * kGapX;
    const int gridBottom = gridTop + gridRows * (labelH + tileH) + (gridRows - 1) * kGapY;

    // The colour bar beside the grid, from the first row of tiles down.
    figure::ColourBarScale bar = figure::colourBarScale(choice, floor);
    if (choice.resolved == core::ColourScale::Rows) bar.caption = "per row: weight ÷ the row's largest";
    L.barX = figure::kMargin + gridW + 28;
    L.barY = gridTop + labelH;
    L.barH = std::max({gridBottom - L.barY, 160, figure::ceilPx(font.textWidth(bar.caption, figure::kTickPx + 1)) + 20});
    L.width = figure::colourBarTicks(L.lines, L.texts, font, bar, L.barX, L.barY, kBarW, L.barH) + figure::kMargin;
    const float titleW = f.title.empty() ? 0 : fonts.bold.textWidth(core::sanitizeUtf8(f.title), figure::kTitlePx);
    L.width = std::max(L.width,
                       figure::kMargin + figure::ceilPx(std::max(titleW, font.textWidth(subtitle, figure::kSubtitlePx))) + figure::kMargin);
    L.height = std::max(gridBottom, L.barY + L.barH + figure::lineHeight(font, figure::kTickPx) / 2) + figure::kMargin;
    return L;
}

core::Rgb cellColour(const HeadsFigure& f, float position) { return core::colormapColor(f.colormap, position, 0.0f, 1.0f); }

// ---- 5. PNG -----------------------------------------------------------------------------------

std::string drawPng(const HeadsFigure& f, const Layout& L, const figure::FigureFonts& fonts) {
    Canvas canvas(L.width, L.height);
    for (const Tile& t : L.tiles)
        for (Eigen::Index i = 0; i < t.colours.rows(); ++i)
            for (Eigen::Index j = 0; j < t.colours.cols(); ++j) {
                const int x = t.x + static_cast<int>(j) * L.cell, y = t.y + static_cast<int>(i) * L.cell;
                const float v = t.colours(i, j);
                if (core::isMaskedTexel(v)) canvas.hatchRect(x, y, L.cell, L.cell, L.stripe);
                else canvas.fillRect(x, y, L.cell, L.cell, cellColour(f, v));
            }
    figure::drawColourBar(canvas, f.colormap, L.barX, L.barY, kBarW, L.barH);
    figure::drawLines(canvas, L.lines);
    figure::drawTexts(canvas, L.texts, fonts);
    return canvas.encodePng();
}

// ---- 6. SVG -----------------------------------------------------------------------------------

std::string drawSvg(const HeadsFigure& f, const Layout& L) {
    std::string s = figure::svgOpen(L.width, L.height);
    if (f.blocked.size() != 0 && f.blocked.any()) s += figure::svgMaskedPattern(L.stripe);
    // One group per tile, one rect per cell row-major; wide tiles merge runs of one colour.
    for (std::size_t k = 0; k < L.tiles.size(); ++k) {
        const Tile& t = L.tiles[k];
        const auto cols = static_cast<int>(t.colours.cols());
        const bool merge = cols > kMergeAbove;
        const auto fill = [&](Eigen::Index i, int j) {
            const float v = t.colours(i, j);
            return core::isMaskedTexel(v) ? std::string("url(#masked)") : figure::hex(cellColour(f, v));
        };
        s += "<g id=\"tile-" + std::to_string(k) + "\" shape-rendering=\"crispEdges\">\n";
        for (Eigen::Index i = 0; i < t.colours.rows(); ++i)
            figure::appendCellRowSvg(s, t.x, t.y + static_cast<int>(i) * L.cell, L.cell, cols, merge, [&](int j) { return fill(i, j); });
        s += "</g>\n";
    }
    figure::appendColourBarSvg(s, f.colormap, L.barX, L.barY, kBarW, L.barH);
    return s;
}

constexpr figure::Drawing<HeadsFigure, Layout> kDrawing{validate, layOut, drawPng, drawSvg};

}  // namespace

std::string renderHeadsPng(const HeadsFigure& f) { return kDrawing.draw(f, figure::FileType::Png); }

std::string renderHeadsSvg(const HeadsFigure& f) { return kDrawing.draw(f, figure::FileType::Svg); }

std::string encodeHeads(const std::string& path, const HeadsFigure& f) { return kDrawing.encode(path, f); }

}  // namespace attnviz::render
