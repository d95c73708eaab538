// Bar chart figures: one layout pass measures everything with the real font, then the raster
// (PNG) and SVG back ends draw the same boxes, as the heatmap figure does.
#include "app/render/bars_image.hpp"

#include "app/render/figure_parts.hpp"
#include "app/render/heatmap_image.hpp"
#include "core/attention/attention.hpp"
#include "core/base/error.hpp"
#include "core/base/format.hpp"
#include "core/text/tokenizer.hpp"

#include <algorithm>
#include <cmath>

namespace attnviz::render {
namespace {

using figure::Anchor;
using figure::Line;
using figure::TextItem;

// ---- 1. Sizes and style -----------------------------------------------------------------------

constexpr int kTargetPlotW = 720, kMinPlotW = 480, kMaxSlot = 80;
// Above this many keys, a bar is the largest weight of several keys (the image stays bounded).
constexpr int kMaxPlotW = 1440;
constexpr int kMinPlotH = 300, kMaxPlotH = 420;  // a wide plot grows taller, up to a 1440 × 420 strip
constexpr float kLabelPx = 12, kValuePx = 11;
constexpr float kMaxLabelWidth = 120;  // an unthinned token label
constexpr float kMaxPairWidth = 90;    // the token of a thinned "12 cat" label
constexpr int kMinLabelGap = 8;        // px of white between neighbouring horizontal labels
constexpr int kFewestPairLabels = 5;   // fewer "12 cat" labels than this: numbers only, denser
constexpr double kLogFloor = 1e-4, kLowestFloor = 1e-8;
constexpr int kHatchPeriod = 5;  // px along x between the masked cells' diagonal lines

constexpr core::Rgb kBar{79, 70, 229};  // the window's bar colour
constexpr core::Rgb kGrid{228, 228, 232};
// Masked keys are light hatched cells, not bars: no colour the bars use, unlike a zero weight
// (a bar of height 0 over white).
constexpr core::Rgb kHatchInk{165, 165, 180}, kHatchPaper{244, 244, 247};

struct Bar {
    int x, w;     // pixels across
    float frac;   // height as a fraction of the plot, 0 … 1
    float value;  // the weight it shows
    bool masked;  // a hatched cell instead of a bar
    bool showValue;
    bool generated = false;  // its keys were generated (amber)
};

struct Layout {
    int width = 0, height = 0;
    int plotX = 0, plotY = 0, plotW = 0, plotH = kMinPlotH;
    std::vector<Bar> bars;
    std::vector<Line> grid, axes;
    std::vector<TextItem> texts, keyTexts;
    int legendY = -1, legendBarX = 0, legendHatchX = 0;  // 14-px swatches; legendY < 0 = no legend
};

bool isBlocked(const BarsFigure& f, int j) { return !f.blocked.empty() && f.blocked[static_cast<std::size_t>(j)]; }

// ---- 2. Validation ----------------------------------------------------------------------------

void validate(const BarsFigure& f) {
    const std::size_t T = f.weights.size();
    if (T == 0) throw core::InputError("weights", "no keys; nothing to draw");
    if (T > static_cast<std::size_t>(kMaxBarsKeys))
        throw core::InputError("weights",
                               std::to_string(T) + " keys are too many for a bar chart (at most " + std::to_string(kMaxBarsKeys) + ")");
    if (!f.keyLabels.empty() && f.keyLabels.size() != T)
        throw core::InputError("key labels",
                               "expected " + std::to_string(T) + " (one per weight), got " + std::to_string(f.keyLabels.size()));
    if (!f.blocked.empty() && f.blocked.size() != T)
        throw core::InputError("mask", "expected " + std::to_string(T) + " (one per weight), got " + std::to_string(f.blocked.size()));
    for (std::size_t j = 0; j < T; ++j) {
        const float w = f.weights[j];
        if (!std::isfinite(w) || w < 0.0f || w > 1.0001f)
            throw core::InputError("weights", "key " + std::to_string(j) + " is " + core::formatNumber(w) + ", not a weight in 0 … 1");
    }
}

// ---- 3. The y axis ----------------------------------------------------------------------------

struct YAxis {
    bool log = false;
    double top = 1.0, floor = kLogFloor;                // linear: 0 … top; log: floor … 1
    std::vector<std::pair<double, std::string>> ticks;  // fraction of the plot height, label
    std::string note;                                   // for the subtitle; "" for 0 … 1

    float frac(float v) const {
        if (!log) return static_cast<float>(std::clamp(v / top, 0.0, 1.0));
        const double lo = std::log10(floor);
        return static_cast<float>(std::clamp((std::log10(std::max<double>(v, floor)) - lo) / -lo, 0.0, 1.0));
    }
};

// 0 … 1 when the largest weight is at least a quarter (or nothing is readable); else 0 … the
// smallest of 1, 2, 5 × 10^e at or above it, so a flat row of 1/512 is not a row of slivers.
YAxis linearAxis(float largest) {
    YAxis y;
    const core::WeightAxis axis = core::weightAxis(largest);
    y.top = axis.top;
    const double step = axis.step;
    const int decimals = figure::decimalsFor(step);
    const int count = static_cast<int>(std::lround(y.top / step));
    for (int k = 0; k <= count; ++k) y.ticks.emplace_back(k * step / y.top, core::formatFixed(k * step, decimals));
    if (y.top < 1.0) y.note = "y axis 0 to " + y.ticks.back().second;
    return y;
}

// Decades from 1e-4, or lower when half the smallest positive weight is below it (never below
// 1e-8; smaller weights sit on the floor).
YAxis logAxis(float smallestPositive) {
    YAxis y;
    y.log = true;
    y.floor = kLogFloor;
    if (smallestPositive > 0.0f && smallestPositive / 2.0 < kLogFloor)
        y.floor = std::max(kLowestFloor, std::pow(10.0, std::floor(std::log10(smallestPositive / 2.0))));
    const int decades = static_cast<int>(std::lround(-std::log10(y.floor)));
    for (int k = 0; k <= decades; ++k)
        y.ticks.emplace_back(static_cast<double>(k) / decades, k == decades ? "1" : "1e-" + std::to_string(decades - k));
    y.note = "log y axis from 1e-" + std::to_string(decades) + (y.floor < kLogFloor ? " (below half the smallest weight)" : "");
    return y;
}

// ---- 4. Key labels ----------------------------------------------------------------------------

struct KeyLabels {
    std::vector<int> keys;
    std::vector<std::string> text;
    bool up = false;
    int stride = 1;
};

// Every key labelled with its token when the tokens fit across a bar or upright in one; else
// every k-th key (k = 2, 5, 10, 20, …, the first that keeps labels apart) as "12 cat", or as
// "12" alone when fewer than kFewestPairLabels of those would fit (positions counted from 1, as
// the window counts them).
KeyLabels keyLabels(const BarsFigure& f, const Font& font, float pitch, int T) {
    KeyLabels out;
    const auto token = [&](int j, float maxWidth) { return figure::labelText(f.keyLabels, j, font, kLabelPx, maxWidth); };
    float widest = 0;
    for (int j = 0; j < T && pitch >= 1.0f; ++j) widest = std::max(widest, font.textWidth(token(j, kMaxLabelWidth), kLabelPx));
    if (pitch >= 1.0f && (widest + 4 <= pitch || pitch >= static_cast<float>(figure::lineHeight(font, kLabelPx) + 2))) {
        out.up = widest + 4 > pitch;
        for (int j = 0; j < T; ++j) out.keys.push_back(j), out.text.push_back(token(j, kMaxLabelWidth));
        return out;
    }
    const auto thinned = [&](bool pairs) {
        for (int decade = 1;; decade *= 10)
            for (const int k : {2 * decade, 5 * decade, 10 * decade}) {
                KeyLabels l;
                l.stride = k;
                float w = 0;
                for (int j = 0; j < T; j += k) {
                    l.keys.push_back(j);
                    l.text.push_back(pairs ? std::to_string(j + 1) + " " + token(j, kMaxPairWidth) : std::to_string(j + 1));  // from 1
                    w = std::max(w, font.textWidth(l.text.back(), kLabelPx));
                }
                if (w + kMinLabelGap <= pitch * static_cast<float>(k) || k >= T) return l;
            }
    };
    if (!f.keyLabels.empty()) {
        KeyLabels pairs = thinned(true);
        if (static_cast<int>(pairs.keys.size()) >= kFewestPairLabels) return pairs;
    }
    return thinned(false);
}

// ---- 5. Layout --------------------------------------------------------------------------------
// Top to bottom: title | subtitle | legend | plot | key labels | key caption.
// Left to right: weight caption | tick labels | plot.

Layout layOut(const BarsFigure& f, const figure::FigureFonts& fonts) {
    const Font& font = fonts.regular;
    Layout L;
    const int T = static_cast<int>(f.weights.size());
    int allowed = 0;
    float largest = 0.0f, smallest = 0.0f;
    for (int j = 0; j < T; ++j) {
        if (isBlocked(f, j)) continue;
        const float w = f.weights[static_cast<std::size_t>(j)];
        ++allowed;
        largest = std::max(largest, w);
        if (w > 0.0f) smallest = smallest > 0.0f ? std::min(smallest, w) : w;
    }
    const YAxis yAxis = f.logScale ? logAxis(smallest) : linearAxis(largest);

    // Subtitle: the row's statistics as the window's bars panel shows them.
    const core::RowStats stats = core::rowStats(Eigen::Map<const core::Mat>(f.weights.data(), 1, T));
    const float maxW = stats.max(0);
    std::string subtitle = "query " + std::to_string(f.query + 1) + " \"" +  // counted from 1, as the window does
                           font.ellipsize(core::visibleToken(f.queryLabel), figure::kSubtitlePx, 160) +
                           "\" · Σ = " + core::formatFixed(stats.sum(0), 2) +
                           " · max = " + (maxW >= 0.01f ? core::formatFixed(maxW, 2) : figure::significant(maxW)) + " · entropy " +
                           core::formatFixed(stats.entropy(0), 2) + " of " +
                           core::formatFixed(std::log(static_cast<double>(std::max(1, allowed))), 2) + " nats";
    if (!yAxis.note.empty()) subtitle += " · " + yAxis.note;
    // Bars: one per key, or one per kMaxPlotW-th of the keys showing the largest weight among
    // them (hatched only when every one of them is masked).
    const int perBar = std::max(1, (T + kMaxPlotW - 1) / kMaxPlotW);
    const int columns = (T + perBar - 1) / perBar;
    // at least as wide as the title and subtitle above it, so that the chart fills its figure
    const float titleW = f.title.empty() ? 0 : fonts.bold.textWidth(core::sanitizeUtf8(f.title), figure::kTitlePx);
    const int minPlotW = std::max(kMinPlotW, figure::ceilPx(std::max(titleW, font.textWidth(subtitle, figure::kSubtitlePx))));
    const int slot = perBar > 1 ? 1 : std::clamp(std::max(kTargetPlotW / T, (minPlotW + T - 1) / T), 1, kMaxSlot);
    const int gap = slot >= 5 ? std::clamp(slot / 5, 1, 8) : 0;
    L.plotW = columns * slot;
    L.plotH = std::clamp(L.plotW / 3, kMinPlotH, kMaxPlotH);
    const float valueW = font.textWidth("0.00", kValuePx);
    const bool values = perBar == 1 && static_cast<float>(slot - gap) >= valueW + 2;
    for (int c = 0; c < columns; ++c) {
        float top = 0.0f;
        bool masked = true;
        for (int j = c * perBar; j < std::min(T, (c + 1) * perBar); ++j)
            if (!isBlocked(f, j)) masked = false, top = std::max(top, f.weights[static_cast<std::size_t>(j)]);
        const bool generated = f.generatedFrom >= 0 && (c + 1) * perBar > f.generatedFrom;
        L.bars.push_back({c * slot + gap / 2, slot - gap, masked ? 1.0f : yAxis.frac(top), top, masked, values && !masked, generated});
    }
    if (f.generatedFrom >= 0 && f.generatedFrom < T)
        subtitle += " · amber: generated (keys " + std::to_string(f.generatedFrom + 1) + " … " + std::to_string(T) + ")";

    if (perBar > 1) subtitle += " · each bar the largest of " + std::to_string(perBar) + " keys";

    const float keyPitch = static_cast<float>(L.plotW) / static_cast<float>(T);  // px per key along x
    const KeyLabels labels = keyLabels(f, font, keyPitch, T);
    float labelW = 0;
    for (const std::string& t : labels.text) labelW = std::max(labelW, font.textWidth(t, kLabelPx));
    float tickW = 0;
    for (const auto& tick : yAxis.ticks) tickW = std::max(tickW, font.textWidth(tick.second, figure::kTickPx));

    // Horizontal positions.
    const int captionLine = figure::lineHeight(font, figure::kCaptionPx);
    const int yCaptionBaseline = figure::kMargin + figure::ceilPx(font.ascent(figure::kCaptionPx));
    const int tickRight = figure::kMargin + captionLine + 10 + figure::ceilPx(tickW);
    L.plotX = tickRight + 10;
    const float firstHalf = labels.up ? 0 : font.textWidth(labels.text.front(), kLabelPx) / 2.0f;
    L.plotX = std::max(L.plotX, figure::kMargin + figure::ceilPx(firstHalf) - std::max(1, slot / 2));
    const float lastCentre = static_cast<float>(L.plotX) + (static_cast<float>(labels.keys.back()) + 0.5f) * keyPitch;
    const float lastRight = labels.up ? lastCentre : lastCentre + font.textWidth(labels.text.back(), kLabelPx) / 2.0f;
    L.width = std::max(L.plotX + L.plotW, figure::ceilPx(lastRight)) + figure::kMargin;
    const float subtitleW = font.textWidth(subtitle, figure::kSubtitlePx);
    L.width = std::max({L.width, L.plotX + figure::ceilPx(std::max(subtitleW, titleW)) + figure::kMargin});

    // Vertical positions.
    int y = figure::kMargin;
    if (!f.title.empty()) {
        L.texts.push_back({core::sanitizeUtf8(f.title), static_cast<float>(L.plotX), static_cast<float>(y) + font.ascent(figure::kTitlePx),
                           figure::kTitlePx, Anchor::Start, figure::kText, false, true});
        y += figure::lineHeight(font, figure::kTitlePx) + 6;
    }
    L.texts.push_back({subtitle, static_cast<float>(L.plotX), static_cast<float>(y) + font.ascent(figure::kSubtitlePx), figure::kSubtitlePx,
                       Anchor::Start, figure::kCaption});
    y += figure::lineHeight(font, figure::kSubtitlePx) + 8;
    if (allowed < T) {  // the legend says what a hatched cell means
        L.legendY = y;
        const float baseline = figure::centredBaseline(static_cast<float>(y + 7), kLabelPx);
        L.legendBarX = L.plotX;
        L.texts.push_back({"attention weight", static_cast<float>(L.plotX + 20), baseline, kLabelPx, Anchor::Start, figure::kText});
        L.legendHatchX = L.plotX + 20 + figure::ceilPx(font.textWidth("attention weight", kLabelPx)) + 18;
        L.texts.push_back(
            {"masked key (no weight)", static_cast<float>(L.legendHatchX + 20), baseline, kLabelPx, Anchor::Start, figure::kText});
        L.width =
            std::max(L.width, L.legendHatchX + 20 + figure::ceilPx(font.textWidth("masked key (no weight)", kLabelPx)) + figure::kMargin);
        y += 14 + 10;
    }
    y += values ? figure::lineHeight(font, kValuePx) + 2 : 6;  // room for a full bar's value
    L.plotY = y;
    const int base = L.plotY + L.plotH;
    const int tickLen = labels.stride > 1 ? 4 : 0;
    const int labelTop = base + 4 + tickLen;
    const int labelExtent = labels.up ? figure::ceilPx(labelW) : figure::lineHeight(font, kLabelPx);
    const int xCaptionBaseline = labelTop + labelExtent + 10 + figure::ceilPx(font.ascent(figure::kCaptionPx));
    L.height = xCaptionBaseline + figure::ceilPx(font.descent(figure::kCaptionPx)) + figure::kMargin;

    // Captions, y ticks with their grid lines, key labels.
    L.texts.push_back({"attention weight", static_cast<float>(yCaptionBaseline),
                       static_cast<float>(L.plotY) + static_cast<float>(L.plotH) / 2.0f, figure::kCaptionPx, Anchor::Middle,
                       figure::kCaption, true});
    L.texts.push_back({"key (attended-to)", static_cast<float>(L.plotX) + static_cast<float>(L.plotW) / 2.0f,
                       static_cast<float>(xCaptionBaseline), figure::kCaptionPx, Anchor::Middle, figure::kCaption});
    for (const auto& [frac, label] : yAxis.ticks) {
        const int ty = base - static_cast<int>(std::lround(frac * L.plotH));
        if (ty < base) L.grid.push_back({L.plotX, ty, L.plotW, 1, kGrid});
        L.axes.push_back({L.plotX - 5, ty, 4, 1, figure::kFrame});
        L.texts.push_back({label, static_cast<float>(tickRight), figure::centredBaseline(static_cast<float>(ty), figure::kTickPx),
                           figure::kTickPx, Anchor::End, figure::kText});
    }
    L.axes.push_back({L.plotX - 1, L.plotY, 1, L.plotH + 1, figure::kFrame});
    L.axes.push_back({L.plotX - 1, base, L.plotW + 1, 1, figure::kFrame});
    for (std::size_t n = 0; n < labels.keys.size(); ++n) {
        const float cx = static_cast<float>(L.plotX) + (static_cast<float>(labels.keys[n]) + 0.5f) * keyPitch;
        if (labels.up)
            L.keyTexts.push_back({labels.text[n], figure::centredBaseline(cx, kLabelPx), static_cast<float>(labelTop), kLabelPx,
                                  Anchor::End, figure::kText, true});
        else
            L.keyTexts.push_back(
                {labels.text[n], cx, static_cast<float>(labelTop) + font.ascent(kLabelPx), kLabelPx, Anchor::Middle, figure::kText});
        if (tickLen) L.axes.push_back({static_cast<int>(cx), base + 1, 1, tickLen, figure::kFrame});
    }
    for (Bar& b : L.bars) b.x += L.plotX;
    return L;
}

int barTop(const Layout& L, const Bar& b) {
    return L.plotY + L.plotH - static_cast<int>(std::lround(b.frac * static_cast<float>(L.plotH)));
}

TextItem valueText(const Layout& L, const Bar& b) {
    return {core::formatFixed(b.value, 2),
            static_cast<float>(b.x) + static_cast<float>(b.w) / 2.0f,
            static_cast<float>(barTop(L, b) - 3),
            kValuePx,
            Anchor::Middle,
            figure::kText};
}

// ---- 6. PNG -----------------------------------------------------------------------------------

void hatch(Canvas& canvas, int x, int y, int w, int h) {
    for (int py = y; py < y + h; ++py)
        for (int px = x; px < x + w; ++px) canvas.fillRect(px, py, 1, 1, (px + py) % kHatchPeriod == 0 ? kHatchInk : kHatchPaper);
}

std::string drawPng(const BarsFigure& /*figure*/, const Layout& L, const figure::FigureFonts& fonts) {
    Canvas canvas(L.width, L.height);
    figure::drawLines(canvas, L.grid);
    std::vector<TextItem> texts = L.texts;
    for (const Bar& b : L.bars) {
        if (b.masked) hatch(canvas, b.x, L.plotY, b.w, L.plotH);
        else canvas.fillRect(b.x, barTop(L, b), b.w, L.plotY + L.plotH - barTop(L, b), b.generated ? figure::kGenerated : kBar);
        if (b.showValue) texts.push_back(valueText(L, b));
    }
    if (L.legendY >= 0) {
        canvas.fillRect(L.legendBarX, L.legendY, 14, 14, kBar);
        hatch(canvas, L.legendHatchX, L.legendY, 14, 14);
    }
    figure::drawLines(canvas, L.axes);
    texts.insert(texts.end(), L.keyTexts.begin(), L.keyTexts.end());
    figure::drawTexts(canvas, texts, fonts);
    return canvas.encodePng();
}

// ---- 7. SVG -----------------------------------------------------------------------------------

std::string drawSvg(const BarsFigure& /*figure*/, const Layout& L) {
    std::string s = figure::svgOpen(L.width, L.height);
    s.reserve(L.bars.size() * 96 + 8192);
    if (L.legendY >= 0) {
        // The raster's hatch: 1-px lines of constant x + y, kHatchPeriod px apart along x.
        const double side = kHatchPeriod / std::sqrt(2.0);
        s += "<defs><pattern id=\"masked-key\" patternUnits=\"userSpaceOnUse\" width=\"" + figure::num(side) + "\" height=\"" +
             figure::num(side) + "\" patternTransform=\"rotate(45)\"><rect width=\"" + figure::num(side) + "\" height=\"" +
             figure::num(side) + "\" fill=\"" + figure::hex(kHatchPaper) + "\"/><rect width=\"" + figure::num(1 / std::sqrt(2.0)) +
             "\" height=\"" + figure::num(side) + "\" fill=\"" + figure::hex(kHatchInk) + "\"/></pattern></defs>\n";
    }
    figure::appendLinesSvg(s, L.grid, "grid");
    // Heights are exact (not rounded to pixels), so they stay proportional to the weights.
    const auto rect = [](double x, double y, double w, double h, const std::string& fill) {
        return "<rect x=\"" + figure::num(x) + "\" y=\"" + figure::num(y) + "\" width=\"" + figure::num(w) + "\" height=\"" +
               figure::num(h) + "\" fill=\"" + fill + "\"/>\n";
    };
    std::string bars = "<g id=\"bars\" shape-rendering=\"crispEdges\">\n", masked = "<g id=\"masked\" shape-rendering=\"crispEdges\">\n";
    std::vector<TextItem> values;
    for (const Bar& b : L.bars) {
        const double h = static_cast<double>(b.frac) * L.plotH;
        if (b.masked) masked += rect(b.x, L.plotY, b.w, L.plotH, "url(#masked-key)");
        else bars += rect(b.x, L.plotY + L.plotH - h, b.w, h, figure::hex(b.generated ? figure::kGenerated : kBar));
        if (b.showValue) values.push_back(valueText(L, b));
    }
    s += bars + "</g>\n" + masked + "</g>\n";
    if (L.legendY >= 0)
        s += "<g id=\"legend\">\n" + rect(L.legendBarX, L.legendY, 14, 14, figure::hex(kBar)) +
             rect(L.legendHatchX, L.legendY, 14, 14, "url(#masked-key)") + "</g>\n";
    figure::appendLinesSvg(s, L.axes);
    figure::appendTextsSvg(s, values, "values");
    figure::appendTextsSvg(s, L.keyTexts, "key-labels");
    return s;
}

constexpr figure::Drawing<BarsFigure, Layout> kDrawing{validate, layOut, drawPng, drawSvg};

}  // namespace

std::string renderBarsPng(const BarsFigure& f) { return kDrawing.draw(f, figure::FileType::Png); }

std::string renderBarsSvg(const BarsFigure& f) { return kDrawing.draw(f, figure::FileType::Svg); }

std::string encodeBars(const std::string& path, const BarsFigure& f) { return kDrawing.encode(path, f); }

}  // namespace attnviz::render
