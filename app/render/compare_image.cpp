// The compare figure: three maps in a row (A, B, B − A), each pooled to at most kMaxTile pixels a
// side by block means, token labels where cells are large enough, and two colour bars (A and B's
// weights; the difference's ±range).
#include "app/render/compare_image.hpp"

#include "app/render/figure_parts.hpp"
#include "app/render/heatmap_image.hpp"
#include "core/attention/attention.hpp"
#include "core/attention/compare.hpp"
#include "core/base/error.hpp"
#include "core/text/tokenizer.hpp"

#include <algorithm>
#include <cmath>

namespace attnviz::render {
namespace {

using figure::Anchor;
using figure::Line;
using figure::TextItem;

constexpr int kTargetTile = 420, kMaxTile = 560, kMaxCell = 40, kGapX = 36, kBarW = 16;
constexpr float kLabelPx = 12;

struct Tile {
    core::Mat values;  // pooled: weights, or the difference; kMaskedTexel where nothing is readable
    bool signedScale = false;
    int x = 0, y = 0, cell = 1;
};

struct Layout {
    Tile tiles[3];
    int width = 0, height = 0, stripe = 2;
    int barY = 0, barH = 0, weightBarX = 0, diffBarX = 0;
    float top = 1.0f, range = 0.0f;
    std::vector<TextItem> texts;
    std::vector<Line> lines;
};

bool blocked(const core::MaskMat& m, Eigen::Index i, Eigen::Index j) { return m.size() != 0 && m(i, j); }

void validate(const CompareFigure& f) {
    const auto check = [](const core::Mat& m, const char* where) {
        if (m.rows() == 0 || m.cols() == 0) throw core::InputError(where, "empty map; nothing to draw");
        if (m.rows() > kMaxCompareTokens || m.cols() > kMaxCompareTokens)
            throw core::InputError(
                where, core::shapeString(m.rows(), m.cols()) + " is more than " + std::to_string(kMaxCompareTokens) + " tokens a side");
        if (!m.allFinite()) throw core::InputError(where, "has a value that is not a finite number");
    };
    check(f.a, "A");
    check(f.b, "B");
    if (f.difference.rows() != f.a.rows() || f.difference.cols() != f.a.cols() || f.lined.rows() != f.a.rows() ||
        f.lined.cols() != f.a.cols())
        throw core::InputError("difference", "expected A's shape " + core::shapeString(f.a.rows(), f.a.cols()));
    if (!f.difference.allFinite()) throw core::InputError("difference", "has a value that is not a finite number");
    if (f.aBlocked.size() != 0 && (f.aBlocked.rows() != f.a.rows() || f.aBlocked.cols() != f.a.cols()))
        throw core::InputError("A's mask", "expected " + core::shapeString(f.a.rows(), f.a.cols()));
    if (f.bBlocked.size() != 0 && (f.bBlocked.rows() != f.b.rows() || f.bBlocked.cols() != f.b.cols()))
        throw core::InputError("B's mask", "expected " + core::shapeString(f.b.rows(), f.b.cols()));
}

// Block means of the readable cells (readable(i, j)), kMaskedTexel for a block with none.
template <class Readable>
core::Mat pooled(const core::Mat& m, int factor, Readable readable) {
    const Eigen::Index rows = core::pooledSize(m.rows(), factor), cols = core::pooledSize(m.cols(), factor);
    core::Mat out(rows, cols);
    for (Eigen::Index r = 0; r < rows; ++r)
        for (Eigen::Index c = 0; c < cols; ++c) {
            double sum = 0.0;
            int n = 0;
            for (Eigen::Index i = r * factor; i < std::min(m.rows(), (r + 1) * factor); ++i)
                for (Eigen::Index j = c * factor; j < std::min(m.cols(), (c + 1) * factor); ++j)
                    if (readable(i, j)) sum += m(i, j), ++n;
            out(r, c) = n > 0 ? static_cast<float>(sum / n) : core::kMaskedTexel;
        }
    return out;
}

core::Rgb colourOf(const CompareFigure& f, const Layout& L, const Tile& t, float v) {
    if (t.signedScale) return core::colormapColor(core::ColormapKind::Diverging, v, -L.range, L.range);
    return core::colormapColor(f.colormap, v, 0.0f, L.top);
}

// Tick labels of a colour bar from lo to hi: the ends and the middle.
void colourBarTicks(Layout& L, const Font& font, int x, float lo, float hi, const std::string& caption, int& right) {
    float tickW = 0;
    for (int k = 0; k <= 2; ++k) {
        const float v = lo + (hi - lo) * static_cast<float>(k) / 2.0f;
        const int ty = std::min(L.barY + L.barH - 1,
                                L.barY + static_cast<int>(std::lround((1.0f - static_cast<float>(k) / 2.0f) * static_cast<float>(L.barH))));
        const std::string label = figure::significant(v);
        L.lines.push_back({x + kBarW, ty, 5, 1, figure::kFrame});
        L.texts.push_back({label, static_cast<float>(x + kBarW + 8), figure::centredBaseline(static_cast<float>(ty), figure::kTickPx),
                           figure::kTickPx, Anchor::Start, figure::kText});
        tickW = std::max(tickW, font.textWidth(label, figure::kTickPx));
    }
    const int captionX = x + kBarW + 8 + figure::ceilPx(tickW) + 8;
    L.texts.push_back({caption, static_cast<float>(captionX) + font.ascent(figure::kTickPx + 1),
                       static_cast<float>(L.barY) + static_cast<float>(L.barH) / 2.0f, figure::kTickPx + 1, Anchor::Middle,
                       figure::kCaption, true});
    figure::frameBox(L.lines, x, L.barY, kBarW, L.barH, figure::kFrame);
    right = captionX + figure::lineHeight(font, figure::kTickPx + 1);
}

Layout layOut(const CompareFigure& f, const figure::FigureFonts& fonts) {
    const Font& font = fonts.regular;
    Layout L;
    L.top = core::sharedWeightTop(f.a, f.b);  // masked cells hold 0: they never raise it
    for (Eigen::Index i = 0; i < f.difference.rows(); ++i)
        for (Eigen::Index j = 0; j < f.difference.cols(); ++j)
            if (f.lined(i, j)) L.range = std::max(L.range, std::abs(f.difference(i, j)));
    const float range = std::max(L.range, 1e-6f);
    L.range = range;

    const int longest = static_cast<int>(std::max({f.a.rows(), f.a.cols(), f.b.rows(), f.b.cols()}));
    int cell = std::clamp(kTargetTile / longest, 1, kMaxCell);
    int factor = 1;
    if (longest > kMaxTile) factor = (longest + kMaxTile - 1) / kMaxTile;
    L.stripe = std::clamp(cell / 6, 2, 8);
    const bool labels = factor == 1 && cell >= 10;
    const float labelPx = std::min(kLabelPx, static_cast<float>(cell) * 0.8f);
    const auto labelOf = [&](const std::vector<std::string>& names, int i, float width) {
        return figure::labelText(names, i, font, labelPx, width);
    };
    float rowLabelW = 0;
    if (labels) {
        for (int i = 0; i < static_cast<int>(f.a.rows()); ++i)
            rowLabelW = std::max(rowLabelW, font.textWidth(labelOf(f.aLabels, i, 90), labelPx));
        for (int i = 0; i < static_cast<int>(f.b.rows()); ++i)
            rowLabelW = std::max(rowLabelW, font.textWidth(labelOf(f.bLabels, i, 90), labelPx));
    }
    const int rowLabel = labels ? figure::ceilPx(rowLabelW) + 6 : 0;
    const int colLabel = labels ? figure::ceilPx(rowLabelW) + 6 : 0;

    L.tiles[0] = {pooled(f.a, factor, [&](Eigen::Index i, Eigen::Index j) { return !blocked(f.aBlocked, i, j); }), false};
    L.tiles[1] = {pooled(f.b, factor, [&](Eigen::Index i, Eigen::Index j) { return !blocked(f.bBlocked, i, j); }), false};
    L.tiles[2] = {pooled(f.difference, factor, [&](Eigen::Index i, Eigen::Index j) { return f.lined(i, j); }), true};

    int y = figure::kMargin;
    if (!f.title.empty()) {
        L.texts.push_back({core::sanitizeUtf8(f.title), static_cast<float>(figure::kMargin),
                           static_cast<float>(y) + font.ascent(figure::kTitlePx), figure::kTitlePx, Anchor::Start, figure::kText, false,
                           true});
        y += figure::lineHeight(font, figure::kTitlePx) + 6;
    }
    std::string subtitle = f.subtitle.empty() ? std::string("rows: queries, columns: keys") : core::sanitizeUtf8(f.subtitle);
    if (factor > 1) subtitle += " · each cell the mean of " + std::to_string(factor) + " × " + std::to_string(factor) + " values";
    L.texts.push_back({subtitle, static_cast<float>(figure::kMargin), static_cast<float>(y) + font.ascent(figure::kSubtitlePx),
                       figure::kSubtitlePx, Anchor::Start, figure::kCaption});
    y += figure::lineHeight(font, figure::kSubtitlePx) + 12;
    const int captionH = figure::lineHeight(font, figure::kCaptionPx) + 6;
    const int mapTop = y + captionH + colLabel;

    int x = figure::kMargin;
    const std::string captions[3] = {core::sanitizeUtf8(f.aCaption), core::sanitizeUtf8(f.bCaption), "B − A (lined-up tokens)"};
    int bottom = mapTop;
    for (int k = 0; k < 3; ++k) {
        Tile& t = L.tiles[k];
        const std::vector<std::string>& names = k == 1 ? f.bLabels : f.aLabels;
        t.cell = cell;
        t.x = x + rowLabel;
        t.y = mapTop;
        const int w = static_cast<int>(t.values.cols()) * cell, h = static_cast<int>(t.values.rows()) * cell;
        L.texts.push_back({fonts.bold.ellipsize(captions[k], figure::kCaptionPx, static_cast<float>(std::max(w + rowLabel, 120))),
                           static_cast<float>(x), static_cast<float>(y) + font.ascent(figure::kCaptionPx), figure::kCaptionPx,
                           Anchor::Start, figure::kText, false, true});
        if (labels) {
            for (int i = 0; i < static_cast<int>(t.values.rows()); ++i)
                L.texts.push_back({labelOf(names, i, 90), static_cast<float>(t.x - 4),
                                   figure::centredBaseline(static_cast<float>(t.y + i * cell) + static_cast<float>(cell) / 2.0f, labelPx),
                                   labelPx, Anchor::End, figure::kText});
            for (int j = 0; j < static_cast<int>(t.values.cols()); ++j)
                L.texts.push_back({labelOf(names, j, 90),
                                   static_cast<float>(t.x + j * cell) + static_cast<float>(cell) / 2.0f + font.ascent(labelPx) / 2.0f -
                                       font.descent(labelPx) / 2.0f,
                                   static_cast<float>(t.y - 4), labelPx, Anchor::Start, figure::kText, true});
        }
        figure::frameBox(L.lines, t.x, t.y, w, h, figure::kFrame);
        bottom = std::max(bottom, t.y + h);
        x = t.x + w + kGapX;
    }
    L.barY = mapTop;
    L.barH = std::max(bottom - mapTop, 160);
    L.weightBarX = x;
    int right = 0;
    colourBarTicks(L, font, L.weightBarX, 0.0f, L.top, "A and B: weight", right);
    L.diffBarX = right + 24;
    colourBarTicks(L, font, L.diffBarX, -range, range, "B − A", right);
    L.width = std::max(
        right + figure::kMargin,
        figure::kMargin * 2 +
            figure::ceilPx(std::max(font.textWidth(subtitle, figure::kSubtitlePx),
                                    f.title.empty() ? 0.0f : fonts.bold.textWidth(core::sanitizeUtf8(f.title), figure::kTitlePx))));
    L.height = std::max(bottom, L.barY + L.barH) + figure::kMargin;
    return L;
}

std::string drawPng(const CompareFigure& f, const Layout& L, const figure::FigureFonts& fonts) {
    Canvas canvas(L.width, L.height);
    for (const Tile& t : L.tiles)
        for (Eigen::Index i = 0; i < t.values.rows(); ++i)
            for (Eigen::Index j = 0; j < t.values.cols(); ++j) {
                const int x = t.x + static_cast<int>(j) * t.cell, y = t.y + static_cast<int>(i) * t.cell;
                const float v = t.values(i, j);
                if (core::isMaskedTexel(v)) canvas.hatchRect(x, y, t.cell, t.cell, L.stripe);
                else canvas.fillRect(x, y, t.cell, t.cell, colourOf(f, L, t, v));
            }
    figure::drawColourBar(canvas, f.colormap, L.weightBarX, L.barY, kBarW, L.barH);
    figure::drawColourBar(canvas, core::ColormapKind::Diverging, L.diffBarX, L.barY, kBarW, L.barH);
    figure::drawLines(canvas, L.lines);
    figure::drawTexts(canvas, L.texts, fonts);
    return canvas.encodePng();
}

std::string drawSvg(const CompareFigure& f, const Layout& L) {
    std::string s = figure::svgOpen(L.width, L.height, figure::svgMaskedPattern(L.stripe));
    const char* ids[3] = {"a", "b", "difference"};
    for (int k = 0; k < 3; ++k) {
        const Tile& t = L.tiles[k];
        const auto cols = static_cast<int>(t.values.cols());
        s += std::string("<g id=\"") + ids[k] + "\" shape-rendering=\"crispEdges\">\n";
        for (Eigen::Index i = 0; i < t.values.rows(); ++i)
            figure::appendCellRowSvg(s, t.x, t.y + static_cast<int>(i) * t.cell, t.cell, cols, cols > 64, [&](int j) {
                const float v = t.values(i, j);
                return core::isMaskedTexel(v) ? std::string("url(#masked)") : figure::hex(colourOf(f, L, t, v));
            });
        s += "</g>\n";
    }
    figure::appendColourBarSvg(s, f.colormap, L.weightBarX, L.barY, kBarW, L.barH);
    figure::appendColourBarSvg(s, core::ColormapKind::Diverging, L.diffBarX, L.barY, kBarW, L.barH);
    return s;
}

constexpr figure::Drawing<CompareFigure, Layout> kDrawing{validate, layOut, drawPng, drawSvg};

}  // namespace

std::string renderComparePng(const CompareFigure& f) { return kDrawing.draw(f, figure::FileType::Png); }

std::string renderCompareSvg(const CompareFigure& f) { return kDrawing.draw(f, figure::FileType::Svg); }

std::string encodeCompare(const std::string& path, const CompareFigure& f) { return kDrawing.encode(path, f); }

}  // namespace attnviz::render
