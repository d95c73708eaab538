#include "app/render/attribution_image.hpp"

#include "app/render/figure_parts.hpp"
#include "core/attention/colormap.hpp"
#include "core/base/error.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace attnviz::render {
namespace {

using figure::Anchor;
using figure::Line;
using figure::TextItem;

constexpr int kCellW = 52, kCellH = 22, kGap = 10;  // px; the gap sets the bias and MLP columns apart
constexpr float kCellPx = 10, kLabelPx = 12;
constexpr int kBarW = 16;

struct Cell {
    int x, y;
    double value;
};

struct Layout {
    int width = 0, height = 0;
    double range = 1;  // the colour scale runs from −range to +range
    std::vector<Cell> cells;
    int barX = 0, barY = 0, barH = 0;
    std::vector<TextItem> texts;
    std::vector<Line> lines;
};

bool hasBias(const core::decoder::LogitAttribution& t) {
    return std::any_of(t.outBias.begin(), t.outBias.end(), [](double v) { return v != 0.0; });
}

void validate(const AttributionFigure& f) {
    const core::decoder::LogitAttribution& t = f.terms;
    if (t.layers <= 0 || t.heads <= 0 || t.headTerms.size() != static_cast<std::size_t>(t.layers * t.heads))
        throw core::InputError("attribution", "no terms; nothing to draw");
    const auto finite = [](double v) { return std::isfinite(v); };
    if (!finite(t.embeddings) || !std::all_of(t.headTerms.begin(), t.headTerms.end(), finite) ||
        !std::all_of(t.mlpTerms.begin(), t.mlpTerms.end(), finite) || !std::all_of(t.outBias.begin(), t.outBias.end(), finite))
        throw core::InputError("attribution", "a term that is not a finite number");
}

core::Rgb colourOf(const Layout& L, double v) {
    return core::colormapColor(core::ColormapKind::Diverging, static_cast<float>(v), static_cast<float>(-L.range),
                               static_cast<float>(L.range));
}

Layout layOut(const AttributionFigure& f, const figure::FigureFonts& fonts) {
    Layout L;
    const Font& font = fonts.regular;
    const core::decoder::LogitAttribution& t = f.terms;
    const bool bias = hasBias(t);
    L.range = std::abs(t.embeddings);
    for (const double v : t.headTerms) L.range = std::max(L.range, std::abs(v));
    for (const double v : t.mlpTerms) L.range = std::max(L.range, std::abs(v));
    for (const double v : t.outBias) L.range = std::max(L.range, std::abs(v));
    if (L.range <= 0) L.range = 1;

    int y = figure::kMargin;
    const float rowLabelW = font.textWidth("embeddings", kLabelPx);
    const int gridW = t.heads * kCellW + kGap + (bias ? kCellW + 2 : 0) + kCellW;
    const float wanted = std::max(fonts.bold.textWidth(f.title, figure::kTitlePx), font.textWidth(f.subtitle, figure::kSubtitlePx));
    const float textW = std::clamp(wanted, static_cast<float>(std::min(gridW, 600)), std::max(1400.0f, static_cast<float>(gridW + 200)));
    figure::titleText(L.texts, fonts, f.title, textW, y);
    y += figure::ceilPx(figure::kSubtitlePx) + 4;
    L.texts.push_back({font.ellipsize(f.subtitle, figure::kSubtitlePx, textW), static_cast<float>(figure::kMargin), static_cast<float>(y),
                       figure::kSubtitlePx, Anchor::Start, figure::kCaption});
    y += 22;
    const int x0 = figure::kMargin + figure::ceilPx(rowLabelW) + 8;
    // column heads
    const int headY = y + figure::ceilPx(kLabelPx);
    for (int h = 0; h < t.heads; ++h)
        L.texts.push_back({std::to_string(h + 1), static_cast<float>(x0 + h * kCellW) + kCellW / 2.0f, static_cast<float>(headY), kLabelPx,
                           Anchor::Middle, figure::kText});
    const int biasX = x0 + t.heads * kCellW + kGap, mlpX = biasX + (bias ? kCellW + 2 : 0);
    if (bias)
        L.texts.push_back(
            {"W_O bias", static_cast<float>(biasX) + kCellW / 2.0f, static_cast<float>(headY), kLabelPx, Anchor::Middle, figure::kText});
    L.texts.push_back(
        {"MLP", static_cast<float>(mlpX) + kCellW / 2.0f, static_cast<float>(headY), kLabelPx, Anchor::Middle, figure::kText});
    L.texts.push_back({"head", static_cast<float>(x0) + static_cast<float>(t.heads * kCellW) / 2.0f, static_cast<float>(y), kLabelPx,
                       Anchor::Middle, figure::kCaption});
    int top = headY + 6;
    // the embeddings' row, then one row per layer
    const auto rowLabel = [&](const std::string& text, int rowY) {
        L.texts.push_back({text, static_cast<float>(x0 - 6), figure::centredBaseline(static_cast<float>(rowY) + kCellH / 2.0f, kLabelPx),
                           kLabelPx, Anchor::End, figure::kText});
    };
    const auto cell = [&](int x, int cy, double v) {
        L.cells.push_back({x, cy, v});
        L.texts.push_back({attributionValueText(v), static_cast<float>(x) + kCellW / 2.0f,
                           figure::centredBaseline(static_cast<float>(cy) + kCellH / 2.0f, kCellPx), kCellPx, Anchor::Middle,
                           figure::contrastingText(colourOf(L, v))});
    };
    rowLabel("embeddings", top);
    cell(x0, top, t.embeddings);
    top += kCellH + kGap;
    for (int l = 0; l < t.layers; ++l) {
        const int rowY = top + l * kCellH;
        rowLabel("layer " + std::to_string(l + 1), rowY);
        for (int h = 0; h < t.heads; ++h) cell(x0 + h * kCellW, rowY, t.head(l, h));
        if (bias) cell(biasX, rowY, t.outBias[static_cast<std::size_t>(l)]);
        cell(mlpX, rowY, t.mlpTerms[static_cast<std::size_t>(l)]);
    }
    const int gridBottom = top + t.layers * kCellH;
    figure::frameBox(L.lines, x0, top, t.heads * kCellW, t.layers * kCellH, figure::kFrame);
    const int right = mlpX + kCellW;
    std::string footer = "final norm's bias term " + attributionValueText(t.finalBias);
    L.texts.push_back({footer, static_cast<float>(x0), static_cast<float>(gridBottom + 8 + figure::ceilPx(figure::kCaptionPx)),
                       figure::kCaptionPx, Anchor::Start, figure::kCaption});
    L.barX = right + 24;
    L.barY = headY + 6;
    L.barH = std::max(std::min(gridBottom - L.barY, 480), 160);
    figure::ColourBarScale bar;
    for (int k = 0; k <= 4; ++k) {
        const double v = -L.range + 2.0 * L.range * k / 4.0;
        bar.ticks.emplace_back(static_cast<float>(k) / 4.0f, figure::significant(static_cast<float>(v)));
    }
    bar.caption = "term (logit units)";
    const int barRight = figure::colourBarTicks(L.lines, L.texts, font, bar, L.barX, L.barY, kBarW, L.barH);
    L.width = std::max(barRight + figure::kMargin, figure::kMargin * 2 + figure::ceilPx(textW));
    L.height = std::max(gridBottom + 16 + figure::ceilPx(figure::kCaptionPx), L.barY + L.barH) + figure::kMargin;
    return L;
}

std::string drawPng(const AttributionFigure& f, const Layout& L, const figure::FigureFonts& fonts) {
    (void)f;
    Canvas canvas(L.width, L.height);
    for (const Cell& c : L.cells) canvas.fillRect(c.x, c.y, kCellW - 1, kCellH - 1, colourOf(L, c.value));
    figure::drawColourBar(canvas, core::ColormapKind::Diverging, L.barX, L.barY, kBarW, L.barH);
    figure::drawLines(canvas, L.lines);
    figure::drawTexts(canvas, L.texts, fonts);
    return canvas.encodePng();
}

std::string drawSvg(const AttributionFigure& f, const Layout& L) {
    (void)f;
    std::string s = figure::svgOpen(L.width, L.height);
    s += "<g id=\"cells\" shape-rendering=\"crispEdges\">\n";
    for (const Cell& c : L.cells)
        s += "<rect x=\"" + std::to_string(c.x) + "\" y=\"" + std::to_string(c.y) + "\" width=\"" + std::to_string(kCellW - 1) +
             "\" height=\"" + std::to_string(kCellH - 1) + "\" fill=\"" + figure::hex(colourOf(L, c.value)) + "\"/>\n";
    s += "</g>\n";
    figure::appendColourBarSvg(s, core::ColormapKind::Diverging, L.barX, L.barY, kBarW, L.barH);
    return s;
}

constexpr figure::Drawing<AttributionFigure, Layout> kDrawing{validate, layOut, drawPng, drawSvg};

}  // namespace

std::string attributionValueText(double v) {
    if (std::abs(v) < 0.005) return "0";  // no "-0.00"
    char buf[32];
    std::snprintf(buf, sizeof buf, std::abs(v) >= 100 ? "%.0f" : std::abs(v) >= 10 ? "%.1f" : "%.2f", v);
    return buf;
}

std::string encodeAttribution(const std::string& path, const AttributionFigure& f) { return kDrawing.encode(path, f); }

}  // namespace attnviz::render
