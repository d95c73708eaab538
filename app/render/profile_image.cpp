// Line plots side by side: one layout pass measures the text with the real font and maps every
// curve to pixels, then the raster (PNG) and SVG back ends draw the same polylines.
#include "app/render/profile_image.hpp"

#include "app/render/figure_parts.hpp"
#include "core/base/error.hpp"
#include "core/base/format.hpp"
#include "core/base/utf8.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace attnviz::render {

double PlotAxis::at(double v) const {
    if (log) {
        if (!(v > 0)) return 0.0;
        return std::clamp((std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo)), 0.0, 1.0);
    }
    return std::clamp((v - lo) / (hi - lo), 0.0, 1.0);
}

namespace {

using figure::Anchor;
using figure::Line;
using figure::TextItem;

constexpr int kPlotW = 470, kPlotH = 300, kPlotGap = 56, kTickLen = 4;
constexpr float kLabelPx = 12, kPlotTitlePx = 15;
constexpr core::Rgb kGrid{232, 232, 236};
constexpr float kDash = 6, kDashGap = 4;

struct Stroke {  // one unbroken run of a curve, in pixels
    std::vector<std::pair<float, float>> points;
    core::Rgb colour;
    float width, opacity;
    bool dashed, dots;
};

struct Layout {
    int width = 0, height = 0;
    std::vector<Line> grid, axes;
    std::vector<TextItem> texts;
    std::vector<Stroke> strokes;    // curves, markers and the legend's swatches, in drawing order
    std::vector<int> plotX, plotY;  // each plot's top left
};

bool finitePoint(const PlotAxis& axis, double v) { return std::isfinite(v) && (!axis.log || v > 0); }

void validate(const LinePlotsFigure& f) {
    if (f.plots.empty() || f.plots.size() > 3)
        throw core::InputError("plots", std::to_string(f.plots.size()) + " plots; a figure holds 1 to 3");
    std::size_t points = 0;
    for (const LinePlot& p : f.plots) {
        for (const PlotAxis* a : {&p.x, &p.y})
            if (!(a->hi > a->lo) || !std::isfinite(a->lo) || !std::isfinite(a->hi) || (a->log && !(a->lo > 0)))
                throw core::InputError("axis", core::quoteValue(a->caption) + " spans " + core::formatNumber(a->lo) + " to " +
                                                   core::formatNumber(a->hi) + ", not an axis");
        for (const PlotCurve& c : p.curves) {
            if (c.x.size() != c.y.size())
                throw core::InputError("curve",
                                       std::to_string(c.x.size()) + " x values against " + std::to_string(c.y.size()) + " y values");
            points += c.x.size();
        }
    }
    if (points > kMaxPlotPoints)
        throw core::InputError(
            "curves", std::to_string(points) + " points are too many for a figure (at most " + std::to_string(kMaxPlotPoints) + ")");
}

Layout layOut(const LinePlotsFigure& f, const figure::FigureFonts& fonts) {
    const Font& font = fonts.regular;
    Layout L;
    const auto plots = static_cast<int>(f.plots.size());
    float tickW = 0;
    for (const LinePlot& p : f.plots)
        for (const auto& [v, label] : core::axisTicks(p.y.lo, p.y.hi, p.y.log))
            tickW = std::max(tickW, font.textWidth(label, figure::kTickPx));
    const int captionLine = figure::lineHeight(font, figure::kCaptionPx);
    const int left = captionLine + 8 + figure::ceilPx(tickW) + 8;  // y caption, tick labels, gap: left of each plot
    const int plotsW = plots * (left + kPlotW) + (plots - 1) * kPlotGap;
    L.width = figure::kMargin * 2 + plotsW;
    const float inner = static_cast<float>(plotsW);

    int y = figure::kMargin;
    figure::titleText(L.texts, fonts, f.title, inner, y);
    const auto line = [&](const std::string& text, float px, core::Rgb colour) {
        if (text.empty()) return;
        L.texts.push_back({font.ellipsize(core::sanitizeUtf8(text), px, inner), static_cast<float>(figure::kMargin),
                           static_cast<float>(y) + font.ascent(px), px, Anchor::Start, colour});
        y += figure::lineHeight(font, px) + 4;
    };
    line(f.subtitle, figure::kSubtitlePx, figure::kCaption);
    y += 8;
    const int plotTitleH = figure::lineHeight(fonts.bold, kPlotTitlePx) + 6;
    const int markerH = figure::lineHeight(font, kLabelPx) + 2;
    const int plotY = y + plotTitleH + markerH;
    const int tickLabelH = figure::lineHeight(font, figure::kTickPx);
    for (int k = 0; k < plots; ++k) {
        const LinePlot& p = f.plots[static_cast<std::size_t>(k)];
        const int x0 = figure::kMargin + k * (left + kPlotW + kPlotGap) + left;
        L.plotX.push_back(x0);
        L.plotY.push_back(plotY);
        const auto px = [&](double v) { return static_cast<float>(x0) + static_cast<float>(p.x.at(v)) * kPlotW; };
        const auto py = [&](double v) { return static_cast<float>(plotY + kPlotH) - static_cast<float>(p.y.at(v)) * kPlotH; };
        TextItem title{font.ellipsize(core::sanitizeUtf8(p.title), kPlotTitlePx, kPlotW),
                       static_cast<float>(x0),
                       static_cast<float>(y) + fonts.bold.ascent(kPlotTitlePx),
                       kPlotTitlePx,
                       Anchor::Start,
                       figure::kText};
        title.bold = true;
        L.texts.push_back(title);
        // grid and ticks
        for (const auto& [v, label] : core::axisTicks(p.x.lo, p.x.hi, p.x.log)) {
            const int tx = static_cast<int>(std::lround(px(v)));
            L.grid.push_back({tx, plotY, 1, kPlotH, kGrid});
            L.axes.push_back({tx, plotY + kPlotH, 1, kTickLen, figure::kFrame});
            L.texts.push_back({label, static_cast<float>(tx),
                               static_cast<float>(plotY + kPlotH + kTickLen + 2) + font.ascent(figure::kTickPx), figure::kTickPx,
                               Anchor::Middle, figure::kText});
        }
        for (const auto& [v, label] : core::axisTicks(p.y.lo, p.y.hi, p.y.log)) {
            const int ty = static_cast<int>(std::lround(py(v)));
            L.grid.push_back({x0, ty, kPlotW, 1, kGrid});
            L.axes.push_back({x0 - kTickLen - 1, ty, kTickLen, 1, figure::kFrame});
            L.texts.push_back({label, static_cast<float>(x0 - kTickLen - 4),
                               figure::centredBaseline(static_cast<float>(ty), figure::kTickPx), figure::kTickPx, Anchor::End,
                               figure::kText});
        }
        figure::frameBox(L.axes, x0, plotY, kPlotW, kPlotH, figure::kFrame);
        L.texts.push_back({core::sanitizeUtf8(p.x.caption), static_cast<float>(x0) + kPlotW / 2.0f,
                           static_cast<float>(plotY + kPlotH + kTickLen + 2 + tickLabelH + 4) + font.ascent(figure::kCaptionPx),
                           figure::kCaptionPx, Anchor::Middle, figure::kCaption});
        L.texts.push_back({core::sanitizeUtf8(p.y.caption), static_cast<float>(x0 - left) + font.ascent(figure::kCaptionPx),
                           static_cast<float>(plotY) + kPlotH / 2.0f, figure::kCaptionPx, Anchor::Middle, figure::kCaption, true});
        // markers, then the curves: runs of drawable points
        for (const PlotMarker& m : p.markers) {
            if (!finitePoint(p.x, m.x) || m.x < p.x.lo || m.x > p.x.hi) continue;
            const float mx = px(m.x);
            L.strokes.push_back(
                {{{mx, static_cast<float>(plotY)}, {mx, static_cast<float>(plotY + kPlotH)}}, figure::kCaption, 1.0f, 0.8f, true, false});
            L.texts.push_back({font.ellipsize(core::sanitizeUtf8(m.label), kLabelPx, kPlotW / 2.0f), mx, static_cast<float>(plotY - 4),
                               kLabelPx, mx > static_cast<float>(x0) + kPlotW * 0.7f ? Anchor::End : Anchor::Middle, figure::kCaption});
        }
        for (const PlotCurve& c : p.curves) {
            Stroke run{{}, c.colour, c.width, c.opacity, c.dashed, c.dots};
            for (std::size_t i = 0; i <= c.x.size(); ++i) {
                if (i < c.x.size() && finitePoint(p.x, c.x[i]) && finitePoint(p.y, c.y[i])) {
                    run.points.emplace_back(px(c.x[i]), py(c.y[i]));
                } else if (!run.points.empty()) {
                    L.strokes.push_back(run);
                    run.points.clear();
                }
            }
        }
    }
    y = plotY + kPlotH + kTickLen + 2 + tickLabelH + 4 + captionLine + 12;
    // the legend: swatch and label, wrapping within the figure
    float lx = figure::kMargin;
    const float rowH = static_cast<float>(figure::lineHeight(font, kLabelPx) + 6);
    for (const LegendEntry& e : f.legend) {
        const std::string label = font.ellipsize(core::sanitizeUtf8(e.label), kLabelPx, inner - 40);
        const float w = 28 + font.textWidth(label, kLabelPx) + 20;
        if (lx > figure::kMargin && lx + w > figure::kMargin + inner) lx = figure::kMargin, y += static_cast<int>(rowH);
        const float mid = static_cast<float>(y) + rowH / 2;
        L.strokes.push_back({{{lx, mid}, {lx + 22, mid}}, e.colour, std::max(e.width, 1.5f), e.opacity, e.dashed, false});
        L.texts.push_back({label, lx + 28, figure::centredBaseline(mid, kLabelPx), kLabelPx, Anchor::Start, figure::kText});
        lx += w;
    }
    if (!f.legend.empty()) y += static_cast<int>(rowH) + 4;
    // the note, wrapped at the figure's width (at most four lines)
    std::string rest = core::sanitizeUtf8(f.note);
    for (int n = 0; n < 4 && !rest.empty(); ++n) {
        std::size_t cut = rest.size();
        while (font.textWidth(rest.substr(0, cut), kLabelPx) > inner) {
            const std::size_t space = rest.rfind(' ', cut - 1);
            if (space == std::string::npos || space == 0) break;
            cut = space;
        }
        line(n == 3 ? rest : rest.substr(0, cut), kLabelPx, figure::kCaption);
        rest = cut < rest.size() ? rest.substr(cut + 1) : std::string();
    }
    L.height = y + figure::kMargin;
    return L;
}

// The pieces of a run as drawn: the whole polyline, or its dashes.
std::vector<std::vector<std::pair<float, float>>> pieces(const Stroke& s) {
    if (!s.dashed) return {s.points};
    std::vector<std::vector<std::pair<float, float>>> out;
    std::vector<std::pair<float, float>> dash;
    float phase = 0;  // along the current dash or gap
    bool on = true;
    for (std::size_t i = 1; i < s.points.size(); ++i) {
        auto [x0, y0] = s.points[i - 1];
        const auto [x1, y1] = s.points[i];
        float left = std::hypot(x1 - x0, y1 - y0);
        const float dx = left > 0 ? (x1 - x0) / left : 0, dy = left > 0 ? (y1 - y0) / left : 0;
        while (left > 0) {
            const float step = std::min(left, (on ? kDash : kDashGap) - phase);
            if (on && dash.empty()) dash.emplace_back(x0, y0);
            x0 += dx * step, y0 += dy * step, left -= step, phase += step;
            if (on) dash.emplace_back(x0, y0);
            if (phase >= (on ? kDash : kDashGap) - 1e-4f) {
                if (on) out.push_back(std::exchange(dash, {}));
                on = !on, phase = 0;
            }
        }
    }
    if (dash.size() >= 2) out.push_back(dash);
    return out;
}

std::string drawPng(const LinePlotsFigure& /*figure*/, const Layout& L, const figure::FigureFonts& fonts) {
    Canvas canvas(L.width, L.height);
    figure::drawLines(canvas, L.grid);
    for (const Stroke& s : L.strokes) {
        for (const auto& piece : pieces(s))
            for (std::size_t i = 1; i < piece.size(); ++i)
                canvas.blendLine(piece[i - 1].first, piece[i - 1].second, piece[i].first, piece[i].second, s.colour, s.opacity, s.width);
        if (s.dots)
            for (const auto& [x, y] : s.points) canvas.blendLine(x - 1.0f, y, x + 1.0f, y, s.colour, s.opacity, 4.0f);
    }
    figure::drawLines(canvas, L.axes);
    figure::drawTexts(canvas, L.texts, fonts);
    return canvas.encodePng();
}

std::string drawSvg(const LinePlotsFigure& /*figure*/, const Layout& L) {
    std::string s = figure::svgOpen(L.width, L.height);
    figure::appendLinesSvg(s, L.grid, "grid");
    s += "<g id=\"curves\" fill=\"none\" stroke-linejoin=\"round\" stroke-linecap=\"round\">\n";
    for (const Stroke& c : L.strokes) {
        s += "<polyline points=\"";
        for (std::size_t i = 0; i < c.points.size(); ++i)
            s += (i ? " " : "") + figure::num(c.points[i].first + 0.5) + "," + figure::num(c.points[i].second + 0.5);
        s += "\" stroke=\"" + figure::hex(c.colour) + "\" stroke-width=\"" + figure::num(c.width) + "\"";
        if (c.opacity < 1.0f) s += " stroke-opacity=\"" + figure::num(c.opacity) + "\"";
        if (c.dashed) s += " stroke-dasharray=\"" + figure::num(kDash) + " " + figure::num(kDashGap) + "\"";
        s += "/>\n";
        if (c.dots)
            for (const auto& [x, y] : c.points)
                s += "<circle cx=\"" + figure::num(x + 0.5) + "\" cy=\"" + figure::num(y + 0.5) + "\" r=\"2\" fill=\"" +
                     figure::hex(c.colour) + "\" stroke=\"none\"/>\n";
    }
    s += "</g>\n";
    return s;
}

constexpr figure::Drawing<LinePlotsFigure, Layout> kDrawing{validate, layOut, drawPng, drawSvg};

}  // namespace

std::string renderLinePlotsPng(const LinePlotsFigure& f) { return kDrawing.draw(f, figure::FileType::Png); }

std::string renderLinePlotsSvg(const LinePlotsFigure& f) { return kDrawing.draw(f, figure::FileType::Svg); }

std::string encodeLinePlots(const std::string& path, const LinePlotsFigure& f) { return kDrawing.encode(path, f); }

}  // namespace attnviz::render
