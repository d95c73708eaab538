#include "app/render/value_weighted_image.hpp"

#include "app/render/figure_parts.hpp"
#include "core/base/error.hpp"
#include "core/text/tokenizer.hpp"

#include <algorithm>
#include <cmath>

namespace attnviz::render {
namespace {

using figure::Anchor;
using figure::Line;
using figure::TextItem;

constexpr int kTargetSide = 720;    // cells aim for a map about this wide
constexpr int kMaxCell = 48;        // px
constexpr int kMinLabelPitch = 12;  // px between drawn labels; below, every k-th label
constexpr float kLabelPx = 12, kMaxLabelWidth = 120;
constexpr int kBarW = 16;

struct Layout {
    int rows = 0, cols = 0, cell = 1;
    int width = 0, height = 0;
    int mapX = 0, mapY = 0;
    int barX = 0, barY = 0, barH = 0;
    float top = 0;  // the largest value: the colour bar's top
    std::vector<TextItem> texts;
    std::vector<Line> lines;
};

bool blocked(const ValueWeightedFigure& f, Eigen::Index i, Eigen::Index j) { return f.blocked.size() != 0 && f.blocked(i, j); }

void validate(const ValueWeightedFigure& f) {
    const Eigen::Index rows = f.map.rows(), cols = f.map.cols();
    if (rows == 0 || cols == 0) throw core::InputError("value-weighted", "an empty map; nothing to draw");
    if (rows > kMaxValueWeightedTokens || cols > kMaxValueWeightedTokens)
        throw core::InputError("value-weighted", std::to_string(std::max(rows, cols)) + " tokens are too many for one figure (at most " +
                                                     std::to_string(kMaxValueWeightedTokens) + ")");
    if (!f.rowLabels.empty() && static_cast<Eigen::Index>(f.rowLabels.size()) != rows)
        throw core::InputError("value-weighted", "the query labels do not match the map's rows");
    if (!f.colLabels.empty() && static_cast<Eigen::Index>(f.colLabels.size()) != cols)
        throw core::InputError("value-weighted", "the key labels do not match the map's columns");
    if (f.blocked.size() != 0 && (f.blocked.rows() != rows || f.blocked.cols() != cols))
        throw core::InputError("value-weighted", "the mask does not match the map");
    for (Eigen::Index i = 0; i < rows; ++i)
        for (Eigen::Index j = 0; j < cols; ++j)
            if (!std::isfinite(f.map(i, j)) || f.map(i, j) < 0.0f)
                throw core::InputError("value-weighted", "a value that is negative or not a finite number at row " + std::to_string(i));
}

// Every k-th label where cells are too small for each: the step whose labels are kMinLabelPitch apart.
int labelStep(int cell) { return std::max(1, (kMinLabelPitch + cell - 1) / cell); }

Layout layOut(const ValueWeightedFigure& f, const figure::FigureFonts& fonts) {
    Layout L;
    const Font& font = fonts.regular;
    L.rows = static_cast<int>(f.map.rows());
    L.cols = static_cast<int>(f.map.cols());
    L.cell = std::clamp(kTargetSide / std::max(L.rows, L.cols), 1, kMaxCell);
    for (Eigen::Index i = 0; i < f.map.rows(); ++i)
        for (Eigen::Index j = 0; j < f.map.cols(); ++j)
            if (!blocked(f, i, j)) L.top = std::max(L.top, f.map(i, j));
    const float labelPx = std::min(kLabelPx, std::max(8.0f, static_cast<float>(L.cell) * 0.8f));
    const int rowStep = labelStep(L.cell), colStep = rowStep;
    float rowLabelW = 0, colLabelW = 0;
    for (int i = 0; i < L.rows; i += rowStep)
        rowLabelW = std::max(rowLabelW, font.textWidth(figure::labelText(f.rowLabels, i, font, labelPx, kMaxLabelWidth), labelPx));
    for (int j = 0; j < L.cols; j += colStep)
        colLabelW = std::max(colLabelW, font.textWidth(figure::labelText(f.colLabels, j, font, labelPx, kMaxLabelWidth), labelPx));

    // Title and subtitle, then the map with its labels left and below, the colour bar right.
    int y = figure::kMargin;
    const int mapW = L.cols * L.cell, mapH = L.rows * L.cell;
    // As wide as the title and subtitle need (up to 1,600 px, then cut with "…"), at least the map's width.
    const float wanted = std::max(f.title.empty() ? 0.0f : fonts.bold.textWidth(f.title, figure::kTitlePx),
                                  f.subtitle.empty() ? 0.0f : font.textWidth(f.subtitle, figure::kSubtitlePx));
    const float textW = std::clamp(wanted, static_cast<float>(mapW + 200), std::max(1600.0f, static_cast<float>(mapW + 200)));
    figure::titleText(L.texts, fonts, f.title, textW, y);
    if (!f.subtitle.empty()) {
        y += figure::ceilPx(figure::kSubtitlePx) + 4;
        L.texts.push_back({font.ellipsize(f.subtitle, figure::kSubtitlePx, textW), static_cast<float>(figure::kMargin),
                           static_cast<float>(y), figure::kSubtitlePx, Anchor::Start, figure::kCaption});
        y += 10;
    }
    const int captionH = figure::lineHeight(font, figure::kCaptionPx);
    L.mapX = figure::kMargin + captionH + 6 + figure::ceilPx(rowLabelW) + 8;
    L.mapY = y + 8;
    for (int i = 0; i < L.rows; i += rowStep)
        L.texts.push_back({figure::labelText(f.rowLabels, i, font, labelPx, kMaxLabelWidth), static_cast<float>(L.mapX - 6),
                           figure::centredBaseline(static_cast<float>(L.mapY + i * L.cell) + static_cast<float>(L.cell) / 2.0f, labelPx),
                           labelPx, Anchor::End, figure::kText});
    for (int j = 0; j < L.cols; j += colStep)
        L.texts.push_back({figure::labelText(f.colLabels, j, font, labelPx, kMaxLabelWidth),
                           static_cast<float>(L.mapX + j * L.cell) + static_cast<float>(L.cell) / 2.0f + font.ascent(labelPx) / 2.0f,
                           static_cast<float>(L.mapY + mapH + 6), labelPx, Anchor::End, figure::kText, true});
    figure::frameBox(L.lines, L.mapX, L.mapY, mapW, mapH, figure::kFrame);
    const int below = L.mapY + mapH + 6 + figure::ceilPx(colLabelW);
    L.texts.push_back({"key (writes)", static_cast<float>(L.mapX) + static_cast<float>(mapW) / 2.0f,
                       static_cast<float>(below + figure::ceilPx(figure::kCaptionPx) + 6), figure::kCaptionPx, Anchor::Middle,
                       figure::kCaption});
    L.texts.push_back({"query (reads)", static_cast<float>(figure::kMargin) + font.ascent(figure::kCaptionPx),
                       static_cast<float>(L.mapY) + static_cast<float>(mapH) / 2.0f, figure::kCaptionPx, Anchor::Middle, figure::kCaption,
                       true});

    // The colour bar in the map's own units: 0 … its largest value.
    L.barX = L.mapX + mapW + 24;
    L.barY = L.mapY;
    L.barH = std::max(std::min(mapH, 480), 160);
    figure::ColourBarScale bar;
    for (int k = 0; k <= 4; ++k)
        bar.ticks.emplace_back(static_cast<float>(k) / 4.0f, figure::significant(L.top * static_cast<float>(k) / 4.0f));
    bar.caption = "‖α v W_O‖";
    const int right = figure::colourBarTicks(L.lines, L.texts, font, bar, L.barX, L.barY, kBarW, L.barH);
    L.width = std::max(right + figure::kMargin, figure::kMargin * 2 + figure::ceilPx(textW));
    L.height = std::max(below + figure::ceilPx(figure::kCaptionPx) + 12, L.barY + L.barH) + figure::kMargin;
    return L;
}

core::Rgb cellColour(const ValueWeightedFigure& f, const Layout& L, Eigen::Index i, Eigen::Index j) {
    return core::colormapColor(f.colormap, L.top > 0.0f ? f.map(i, j) / L.top : 0.0f, 0.0f, 1.0f);
}

std::string drawPng(const ValueWeightedFigure& f, const Layout& L, const figure::FigureFonts& fonts) {
    Canvas canvas(L.width, L.height);
    for (int i = 0; i < L.rows; ++i)
        for (int j = 0; j < L.cols; ++j) {
            const int x = L.mapX + j * L.cell, y = L.mapY + i * L.cell;
            if (blocked(f, i, j)) canvas.hatchRect(x, y, L.cell, L.cell, 2);
            else canvas.fillRect(x, y, L.cell, L.cell, cellColour(f, L, i, j));
        }
    figure::drawColourBar(canvas, f.colormap, L.barX, L.barY, kBarW, L.barH);
    figure::drawLines(canvas, L.lines);
    figure::drawTexts(canvas, L.texts, fonts);
    return canvas.encodePng();
}

std::string drawSvg(const ValueWeightedFigure& f, const Layout& L) {
    const bool anyBlocked = f.blocked.size() != 0 && f.blocked.any();
    std::string s = figure::svgOpen(L.width, L.height, anyBlocked ? figure::svgMaskedPattern(2) : std::string());
    s += "<g id=\"cells\" shape-rendering=\"crispEdges\">\n";
    for (int i = 0; i < L.rows; ++i)
        figure::appendCellRowSvg(s, L.mapX, L.mapY + i * L.cell, L.cell, L.cols, L.cols > 512, [&](int j) {
            return blocked(f, i, j) ? std::string("url(#masked)") : figure::hex(cellColour(f, L, i, j));
        });
    s += "</g>\n";
    figure::appendColourBarSvg(s, f.colormap, L.barX, L.barY, kBarW, L.barH);
    return s;
}

constexpr figure::Drawing<ValueWeightedFigure, Layout> kDrawing{validate, layOut, drawPng, drawSvg};

}  // namespace

std::string renderValueWeightedPng(const ValueWeightedFigure& f) { return kDrawing.draw(f, figure::FileType::Png); }

std::string renderValueWeightedSvg(const ValueWeightedFigure& f) { return kDrawing.draw(f, figure::FileType::Svg); }

std::string encodeValueWeighted(const std::string& path, const ValueWeightedFigure& f) { return kDrawing.encode(path, f); }

}  // namespace attnviz::render
