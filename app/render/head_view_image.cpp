// Head view figures: one layout pass measures the labels and the legend with the real font, then
// the raster (anti-aliased lines blended at their weights) and SVG (<line> elements with
// stroke-opacity) back ends draw the same geometry.
#include "app/render/head_view_image.hpp"

#include "app/render/figure_parts.hpp"
#include "app/render/heatmap_image.hpp"
#include "core/base/error.hpp"
#include "core/base/format.hpp"

#include <algorithm>
#include <cmath>

namespace attnviz::render {
namespace {

using figure::Anchor;
using figure::TextItem;

// ---- 1. Sizes and style -----------------------------------------------------------------------

constexpr int kLinesW = 260;           // the band the lines cross
constexpr int kAnchorGap = 8;          // px between a label and its end of the lines
constexpr float kMaxLabelWidth = 150;  // a token label, ellipsised beyond
constexpr int kMaxRowH = 20, kMinRowH = 6, kMaxColumnsH = 15000;
constexpr int kMinLabelPitch = 11;  // rows closer than this: every k-th token labelled
constexpr int kMinWidth = 560;
constexpr int kSwatch = 12;
constexpr float kLegendPx = 13;
constexpr core::Rgb kDimmed{150, 150, 150};

struct Layout {
    HeadViewGeometry g;
    std::vector<TextItem> texts, labels;
    struct Swatch {
        int x, y;
        core::Rgb colour;
    };
    std::vector<Swatch> swatches;
};

std::string headLabel(const HeadViewFigure& f, std::size_t n) {
    return f.headLabels.empty() ? "head " + std::to_string(f.heads[n] + 1) : f.headLabels[n];
}

// ---- 2. Validation ----------------------------------------------------------------------------

void validate(const HeadViewFigure& f) {
    if (f.tokens <= 0) throw core::InputError("tokens", "no tokens; nothing to draw");
    if (f.tokens > kMaxHeadViewTokens)
        throw core::InputError("tokens", std::to_string(f.tokens) + " are too many for a head view figure (at most " +
                                             std::to_string(kMaxHeadViewTokens) + ")");
    if (f.heads.empty()) throw core::InputError("heads", "no heads; nothing to draw");
    if (!f.labels.empty() && f.labels.size() != static_cast<std::size_t>(f.tokens))
        throw core::InputError("labels",
                               "expected " + std::to_string(f.tokens) + " (one per token), got " + std::to_string(f.labels.size()));
    if (!f.headLabels.empty() && f.headLabels.size() != f.heads.size())
        throw core::InputError(
            "head labels", "expected " + std::to_string(f.heads.size()) + " (one per head), got " + std::to_string(f.headLabels.size()));
    if (f.lines.size() > static_cast<std::size_t>(kMaxHeadViewLines))
        throw core::InputError("lines", std::to_string(f.lines.size()) + " are too many for one figure (at most " +
                                            std::to_string(kMaxHeadViewLines) + "; isolate a query)");
    for (const core::HeadLine& l : f.lines) {
        if (l.query < 0 || l.query >= f.tokens || l.key < 0 || l.key >= f.tokens)
            throw core::InputError("lines", "a line from " + std::to_string(l.query) + " to " + std::to_string(l.key) + " is outside the " +
                                                std::to_string(f.tokens) + " tokens");
        if (std::find(f.heads.begin(), f.heads.end(), l.head) == f.heads.end())
            throw core::InputError("lines", "a line of head " + std::to_string(l.head + 1) + ", which the legend does not show");
        if (!std::isfinite(l.weight) || l.weight < 0.0f || l.weight > 1.0001f)
            throw core::InputError("lines", "weight " + core::formatNumber(l.weight) + " is not a weight in 0 … 1");
    }
    if (f.query >= f.tokens) throw core::InputError("query", "no token " + std::to_string(f.query));
}

// ---- 3. Layout --------------------------------------------------------------------------------

Layout layOut(const HeadViewFigure& f, const figure::FigureFonts& fonts) {
    Layout L;
    const Font& font = fonts.regular;
    L.g.rowH = std::clamp(kMaxColumnsH / f.tokens, kMinRowH, kMaxRowH);
    const float labelPx = std::min(13.0f, std::max(9.0f, static_cast<float>(L.g.rowH) * 0.68f));
    const int pitch = std::max(1, (kMinLabelPitch + L.g.rowH - 1) / L.g.rowH);  // every pitch-th token labelled
    // 1. the label columns: as wide as the widest label shown
    float labelW = 0;
    std::vector<std::string> shown(static_cast<std::size_t>(f.tokens));
    for (int i = 0; i < f.tokens; i += pitch) {
        shown[static_cast<std::size_t>(i)] = figure::labelText(f.labels, i, font, labelPx, kMaxLabelWidth);
        labelW = std::max(labelW, font.textWidth(shown[static_cast<std::size_t>(i)], labelPx));
    }
    const int column = figure::ceilPx(labelW) + 4;
    int width = 2 * figure::kMargin + 2 * column + 2 * kAnchorGap + kLinesW;
    // 2. the header: title, what the lines are, the rule
    std::vector<std::string> notes = {"line opacity = attention weight · queries left, keys right · a masked key gets no line"};
    const auto dropped = f.readable - static_cast<long long>(f.lines.size());
    notes.push_back("lines drawn: " + f.rule + " (" + std::to_string(f.lines.size()) + " of " + std::to_string(f.readable) +
                    (dropped > 0 ? ", " + std::to_string(dropped) + " weaker dropped)" : ")"));
    if (f.query >= 0) notes.push_back("query " + std::to_string((f.queryPosition >= 0 ? f.queryPosition : f.query) + 1) + " isolated");
    float widest = f.title.empty() ? 0.0f : fonts.bold.textWidth(f.title, figure::kTitlePx);
    for (const std::string& n : notes) widest = std::max(widest, font.textWidth(n, figure::kSubtitlePx));
    width = std::max({width, kMinWidth, std::min(2000, figure::ceilPx(widest) + 2 * figure::kMargin)});
    const float textW = static_cast<float>(width - 2 * figure::kMargin);
    int y = figure::kMargin;
    figure::titleText(L.texts, fonts, f.title, textW, y);
    for (const std::string& n : notes) {
        y += figure::ceilPx(figure::kSubtitlePx) + 4;
        L.texts.push_back({font.ellipsize(n, figure::kSubtitlePx, textW), static_cast<float>(figure::kMargin), static_cast<float>(y),
                           figure::kSubtitlePx, Anchor::Start, figure::kCaption});
    }
    // 3. the legend: a swatch and "head h" per head, wrapped
    y += 12;
    int x = figure::kMargin;
    const int legendRow = figure::ceilPx(kLegendPx) + 8;
    for (std::size_t n = 0; n < f.heads.size(); ++n) {
        const std::string text = font.ellipsize(headLabel(f, n), kLegendPx, 160);
        const int w = kSwatch + 6 + figure::ceilPx(font.textWidth(text, kLegendPx)) + 16;
        if (x + w > width - figure::kMargin && x > figure::kMargin) {
            x = figure::kMargin;
            y += legendRow;
        }
        L.swatches.push_back({x, y, core::headColour(f.heads[n])});
        L.texts.push_back({text, static_cast<float>(x + kSwatch + 6),
                           figure::centredBaseline(static_cast<float>(y) + kSwatch / 2.0f, kLegendPx), kLegendPx, Anchor::Start,
                           figure::kText});
        x += w;
    }
    y += legendRow + 10;
    // 4. the columns
    L.g.width = width;
    L.g.top = y;
    const int linesX = (width - kLinesW) / 2;
    L.g.queryX = static_cast<float>(linesX);
    L.g.keyX = static_cast<float>(linesX + kLinesW);
    for (int i = 0; i < f.tokens; i += pitch) {
        const float baseline = figure::centredBaseline(L.g.rowY(i), labelPx);
        const bool isolated = f.query == i;
        const core::Rgb queryColour = f.query >= 0 && !isolated ? kDimmed : figure::kText;
        const std::string& text = shown[static_cast<std::size_t>(i)];
        L.labels.push_back({text, L.g.queryX - kAnchorGap, baseline, labelPx, Anchor::End, queryColour, false, isolated});
        L.labels.push_back({text, L.g.keyX + kAnchorGap, baseline, labelPx, Anchor::Start, figure::kText});
    }
    L.g.height = y + f.tokens * L.g.rowH + figure::kMargin;
    return L;
}

// ---- 4. PNG -----------------------------------------------------------------------------------

std::string drawPng(const HeadViewFigure& f, const Layout& L, const figure::FigureFonts& fonts) {
    Canvas canvas(L.g.width, L.g.height);
    for (const auto& s : L.swatches) canvas.fillRect(s.x, s.y, kSwatch, kSwatch, s.colour);
    // The weakest first: a strong line is never hidden under a faint one.
    std::vector<const core::HeadLine*> order;
    order.reserve(f.lines.size());
    for (const core::HeadLine& l : f.lines) order.push_back(&l);
    std::stable_sort(order.begin(), order.end(), [](const core::HeadLine* a, const core::HeadLine* b) { return a->weight < b->weight; });
    for (const core::HeadLine* l : order)
        canvas.blendLine(L.g.queryX, L.g.rowY(l->query), L.g.keyX, L.g.rowY(l->key), core::headColour(l->head), l->weight);
    figure::drawTexts(canvas, L.texts, fonts);
    figure::drawTexts(canvas, L.labels, fonts);
    return canvas.encodePng();
}

// ---- 5. SVG -----------------------------------------------------------------------------------

std::string drawSvg(const HeadViewFigure& f, const Layout& L) {
    std::string s = figure::svgOpen(L.g.width, L.g.height);
    s.reserve(f.lines.size() * 110 + 8192);
    s += "<g id=\"legend\">\n";
    for (const auto& w : L.swatches)
        s += "<rect x=\"" + std::to_string(w.x) + "\" y=\"" + std::to_string(w.y) + "\" width=\"" + std::to_string(kSwatch) +
             "\" height=\"" + std::to_string(kSwatch) + "\" fill=\"" + figure::hex(w.colour) + "\"/>\n";
    s += "</g>\n<g id=\"lines\" stroke-width=\"1\" stroke-linecap=\"round\">\n";
    std::vector<const core::HeadLine*> order;
    for (const core::HeadLine& l : f.lines) order.push_back(&l);
    std::stable_sort(order.begin(), order.end(), [](const core::HeadLine* a, const core::HeadLine* b) { return a->weight < b->weight; });
    for (const core::HeadLine* l : order)
        s += "<line x1=\"" + figure::num(L.g.queryX) + "\" y1=\"" + figure::num(L.g.rowY(l->query)) + "\" x2=\"" + figure::num(L.g.keyX) +
             "\" y2=\"" + figure::num(L.g.rowY(l->key)) + "\" stroke=\"" + figure::hex(core::headColour(l->head)) + "\" stroke-opacity=\"" +
             core::formatFixed(l->weight, 4) + "\"/>\n";
    s += "</g>\n";
    figure::appendTextsSvg(s, L.labels, "tokens");
    return s;
}

constexpr figure::Drawing<HeadViewFigure, Layout> kDrawing{validate, layOut, drawPng, drawSvg};

}  // namespace

HeadViewGeometry headViewGeometry(const HeadViewFigure& f) {
    validate(f);
    const figure::FigureFonts fonts;
    return layOut(f, fonts).g;
}

std::string renderHeadViewPng(const HeadViewFigure& f) { return kDrawing.draw(f, figure::FileType::Png); }

std::string renderHeadViewSvg(const HeadViewFigure& f) { return kDrawing.draw(f, figure::FileType::Svg); }

std::string encodeHeadView(const std::string& path, const HeadViewFigure& f) { return kDrawing.encode(path, f); }

}  // namespace attnviz::render
