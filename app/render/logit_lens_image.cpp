#include "app/render/logit_lens_image.hpp"

#include "app/render/figure_parts.hpp"
#include "core/base/error.hpp"

#include <algorithm>
#include <cmath>

namespace attnviz::render {
namespace {

using figure::Anchor;
using figure::Line;
using figure::TextItem;

constexpr int kCellW = 64, kCellH = 22;  // px: room for a short token at kCellPx
constexpr float kCellPx = 11, kLabelPx = 12, kMaxLabelWidth = 120;
constexpr int kBarW = 16;

struct Layout {
    Eigen::Index first = 0, cols = 0;  // the positions drawn: [first, first + cols) of the lens
    int rows = 0;
    int width = 0, height = 0;
    int mapX = 0, mapY = 0;
    int barX = 0, barY = 0, barH = 0;
    std::vector<TextItem> texts;
    std::vector<Line> lines;
};

void validate(const LogitLensFigure& f) {
    if (f.lens == nullptr || f.topLabels == nullptr || f.lens->layers == 0 || f.lens->positions == 0 || f.lens->k == 0)
        throw core::InputError("logit lens", "an empty lens; nothing to draw");
    if (f.topLabels->size() != f.lens->top.size()) throw core::InputError("logit lens", "the token labels do not match the lens");
    for (const core::decoder::LensToken& t : f.lens->top)
        if (!(t.prob >= 0.0f && t.prob <= 1.0f)) throw core::InputError("logit lens", "a probability that is not a number in [0, 1]");
    if (!f.shades.empty() && f.shades.size() != static_cast<std::size_t>(f.lens->layers) * static_cast<std::size_t>(f.lens->positions))
        throw core::InputError("logit lens", "the cells' shades do not match the lens");
    for (const float v : f.shades)
        if (!(v <= 1.0f)) throw core::InputError("logit lens", "a cell's shade that is not a number up to 1");
}

// The cell's shade, 0 … 1, or below 0 for none.
float cellShade(const LogitLensFigure& f, int layer, Eigen::Index p) {
    return f.shades.empty() ? f.lens->cell(layer, p)[0].prob : f.shades[f.lens->at(layer, p)];
}
const std::string& cellLabel(const LogitLensFigure& f, int layer, Eigen::Index p) {
    return (*f.topLabels)[f.lens->at(layer, p) * static_cast<std::size_t>(f.lens->k)];
}
// Whether any cell has no shade (drawn grey).
bool greyCells(const LogitLensFigure& f) {
    return std::any_of(f.shades.begin(), f.shades.end(), [](float v) { return v < 0.0f; });
}
core::Rgb cellColour(const LogitLensFigure& f, int layer, Eigen::Index p) { return lensCellColour(f.colormap, cellShade(f, layer, p)); }

Layout layOut(const LogitLensFigure& f, const figure::FigureFonts& fonts) {
    Layout L;
    const Font& font = fonts.regular;
    const core::decoder::LogitLens& lens = *f.lens;
    L.cols = std::min(lens.positions, kMaxLensFigurePositions);
    L.first = lens.positions - L.cols;
    L.rows = lens.layers;
    const auto rowName = [](int l) { return l == 0 ? std::string("embeddings") : "layer " + std::to_string(l); };
    float rowLabelW = 0, colLabelW = 0;
    for (int l = 0; l < L.rows; ++l) rowLabelW = std::max(rowLabelW, font.textWidth(rowName(l), kLabelPx));
    for (Eigen::Index p = 0; p < L.cols; ++p) {
        const auto position = static_cast<int>(lens.first + L.first + p);
        colLabelW = std::max(colLabelW, font.textWidth(figure::labelText(f.tokens, position, font, kLabelPx, kMaxLabelWidth), kLabelPx));
    }
    int y = figure::kMargin;
    const int mapW = static_cast<int>(L.cols) * kCellW, mapH = L.rows * kCellH;
    const Eigen::Index from = lens.first + L.first, to = lens.first + lens.positions;
    const std::string subtitle = "each cell: the token the stream after that layer predicts at that position (top 1), coloured by " +
                                 f.words + (greyCells(f) ? " (grey: none)" : "") + " · positions " + std::to_string(from + 1) + " … " +
                                 std::to_string(to) + " of " + std::to_string(f.tokens.size());
    const float wanted = std::max(fonts.bold.textWidth(f.title, figure::kTitlePx), font.textWidth(subtitle, figure::kSubtitlePx));
    const float textW = std::clamp(wanted, static_cast<float>(std::min(mapW, 600)), std::max(1600.0f, static_cast<float>(mapW + 200)));
    figure::titleText(L.texts, fonts, f.title, textW, y);
    y += figure::ceilPx(figure::kSubtitlePx) + 4;
    L.texts.push_back({font.ellipsize(subtitle, figure::kSubtitlePx, textW), static_cast<float>(figure::kMargin), static_cast<float>(y),
                       figure::kSubtitlePx, Anchor::Start, figure::kCaption});
    y += 10;
    L.mapX = figure::kMargin + figure::ceilPx(rowLabelW) + 8;
    L.mapY = y + 8;
    for (int l = 0; l < L.rows; ++l)
        L.texts.push_back({rowName(l), static_cast<float>(L.mapX - 6),
                           figure::centredBaseline(static_cast<float>(L.mapY + l * kCellH) + kCellH / 2.0f, kLabelPx), kLabelPx,
                           Anchor::End, figure::kText});
    // each cell's top token, cut to the cell, in the colour that reads on it
    for (int l = 0; l < L.rows; ++l)
        for (Eigen::Index p = 0; p < L.cols; ++p) {
            const std::string text = figure::labelText({cellLabel(f, l, L.first + p)}, 0, font, kCellPx, kCellW - 4);
            L.texts.push_back({text, static_cast<float>(L.mapX + static_cast<int>(p) * kCellW) + kCellW / 2.0f,
                               figure::centredBaseline(static_cast<float>(L.mapY + l * kCellH) + kCellH / 2.0f, kCellPx), kCellPx,
                               Anchor::Middle, figure::contrastingText(cellColour(f, l, L.first + p))});
        }
    for (Eigen::Index p = 0; p < L.cols; ++p) {
        const auto position = static_cast<int>(lens.first + L.first + p);
        const bool generated = f.generatedFrom >= 0 && position >= f.generatedFrom;
        L.texts.push_back({figure::labelText(f.tokens, position, font, kLabelPx, kMaxLabelWidth),
                           static_cast<float>(L.mapX + static_cast<int>(p) * kCellW) + kCellW / 2.0f + font.ascent(kLabelPx) / 2.0f,
                           static_cast<float>(L.mapY + mapH + 6), kLabelPx, Anchor::End, generated ? figure::kGenerated : figure::kText,
                           true});
    }
    figure::frameBox(L.lines, L.mapX, L.mapY, mapW, mapH, figure::kFrame);
    const int below = L.mapY + mapH + 6 + figure::ceilPx(colLabelW);
    L.texts.push_back({f.generatedFrom >= 0 ? "input token at the position (the lens predicts the next; amber: generated from token " +
                                                  std::to_string(f.generatedFrom + 1) + ")"
                                            : std::string("input token at the position (the lens predicts the next)"),
                       static_cast<float>(L.mapX) + static_cast<float>(mapW) / 2.0f,
                       static_cast<float>(below + figure::ceilPx(figure::kCaptionPx) + 6), figure::kCaptionPx, Anchor::Middle,
                       figure::kCaption});
    L.barX = L.mapX + mapW + 24;
    L.barY = L.mapY;
    L.barH = std::max(std::min(mapH, 480), 160);
    figure::ColourBarScale bar;
    if (f.ticks.empty())
        for (int k = 0; k <= 4; ++k)
            bar.ticks.emplace_back(static_cast<float>(k) / 4.0f, figure::significant(static_cast<float>(k) / 4.0f));
    else bar.ticks = f.ticks;
    bar.caption = f.caption;
    const int right = figure::colourBarTicks(L.lines, L.texts, font, bar, L.barX, L.barY, kBarW, L.barH);
    L.width = std::max(right + figure::kMargin, figure::kMargin * 2 + figure::ceilPx(textW));
    L.height = std::max(below + figure::ceilPx(figure::kCaptionPx) + 12, L.barY + L.barH) + figure::kMargin;
    return L;
}

std::string drawPng(const LogitLensFigure& f, const Layout& L, const figure::FigureFonts& fonts) {
    Canvas canvas(L.width, L.height);
    for (int l = 0; l < L.rows; ++l)
        for (Eigen::Index p = 0; p < L.cols; ++p)
            canvas.fillRect(L.mapX + static_cast<int>(p) * kCellW, L.mapY + l * kCellH, kCellW, kCellH, cellColour(f, l, L.first + p));
    figure::drawColourBar(canvas, f.colormap, L.barX, L.barY, kBarW, L.barH);
    figure::drawLines(canvas, L.lines);
    figure::drawTexts(canvas, L.texts, fonts);
    return canvas.encodePng();
}

std::string drawSvg(const LogitLensFigure& f, const Layout& L) {
    std::string s = figure::svgOpen(L.width, L.height);
    s += "<g id=\"cells\" shape-rendering=\"crispEdges\">\n";
    for (int l = 0; l < L.rows; ++l)
        for (Eigen::Index p = 0; p < L.cols; ++p)
            s += "<rect x=\"" + std::to_string(L.mapX + static_cast<int>(p) * kCellW) + "\" y=\"" + std::to_string(L.mapY + l * kCellH) +
                 "\" width=\"" + std::to_string(kCellW) + "\" height=\"" + std::to_string(kCellH) + "\" fill=\"" +
                 figure::hex(cellColour(f, l, L.first + p)) + "\"/>\n";
    s += "</g>\n";
    figure::appendColourBarSvg(s, f.colormap, L.barX, L.barY, kBarW, L.barH);
    return s;
}

constexpr figure::Drawing<LogitLensFigure, Layout> kDrawing{validate, layOut, drawPng, drawSvg};

}  // namespace

core::Rgb lensCellColour(core::ColormapKind colormap, float shade) {
    return shade < 0.0f ? core::Rgb{150, 150, 150} : core::colormapColor(colormap, shade, 0.0f, 1.0f);
}

std::string encodeLogitLens(const std::string& path, const LogitLensFigure& f) { return kDrawing.encode(path, f); }

}  // namespace attnviz::render
