#include "app/widgets/charts.hpp"
#include "app/widgets/text.hpp"
#include "core/base/format.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace attnviz::widgets {

ImU32 toImColor(core::Rgb c, int alpha) { return IM_COL32(c.r, c.g, c.b, alpha); }

ImU32 contrastingText(core::Rgb c) {
    const double luminance = 0.2126 * c.r + 0.7152 * c.g + 0.0722 * c.b;
    return luminance > 140.0 ? IM_COL32(0, 0, 0, 255) : IM_COL32(255, 255, 255, 255);
}

int barChart(ImDrawList* list, ImVec2 min, ImVec2 max, const std::vector<float>& values, const std::vector<std::string>& labels,
             int highlight, const std::vector<bool>& blocked, const BarChartStyle& style) {
    const int n = static_cast<int>(values.size());
    if (n == 0) return -1;
    const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text), dim = ImGui::GetColorU32(ImGuiCol_TextDisabled);
    const ImU32 grid = ImGui::GetColorU32(ImGuiCol_Border);
    const float lineH = ImGui::GetTextLineHeight(), gapText = ImGui::GetFontSize() * 0.3f;
    const auto isBlocked = [&](int j) { return j < static_cast<int>(blocked.size()) && blocked[static_cast<std::size_t>(j)]; };
    // The axis runs to 1, or to just above the largest weight when every weight is far below it.
    float largest = 0.0f;
    for (int j = 0; j < n; ++j)
        if (!isBlocked(j)) largest = std::max(largest, values[static_cast<std::size_t>(j)]);
    const core::WeightAxis axis = core::weightAxis(style.axisLargest >= 0.0f ? style.axisLargest : largest);
    // as many decimals as the step needs to be printed exactly (0.25: two; 0.0005: four)
    int decimals = 1;
    while (decimals < 6 && std::abs(axis.step * std::pow(10.0, decimals) - std::round(axis.step * std::pow(10.0, decimals))) > 1e-6)
        ++decimals;
    const auto tickLabel = [&](double v) {
        char buf[24];
        std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
        return std::string(buf);
    };
    const float labelH = style.showLabels ? lineH + 4.0f : 0.0f;
    const float valueH = style.showValues ? lineH + 2.0f : 0.0f;
    const float axisW = ImGui::CalcTextSize(tickLabel(axis.top).c_str()).x + gapText * 2.0f;
    const ImVec2 plotMin(min.x + axisW, min.y + std::max(valueH, lineH * 0.5f));
    const ImVec2 plotMax(max.x, max.y - labelH);
    if (plotMax.x <= plotMin.x + 4 || plotMax.y <= plotMin.y + 4) return -1;
    const float height = plotMax.y - plotMin.y;
    const auto yOf = [&](double v) { return plotMax.y - static_cast<float>(std::clamp(v / axis.top, 0.0, 1.0)) * height; };

    // ticks: every step when they stand a line apart, else the ends and the middle, else the ends
    const int steps = static_cast<int>(std::lround(axis.top / axis.step));
    const int every = height / static_cast<float>(steps) >= lineH * 1.2f ? 1 : height >= lineH * 2.4f && steps % 2 == 0 ? steps / 2 : steps;
    for (int k = 0; k <= steps; k += every) {
        const float y = yOf(k * axis.step);
        list->AddLine(ImVec2(plotMin.x, y), ImVec2(plotMax.x, y), grid);
        const std::string label = tickLabel(k * axis.step);
        list->AddText(ImVec2(plotMin.x - gapText - ImGui::CalcTextSize(label.c_str()).x, y - lineH * 0.5f), text, label.c_str());
    }
    const float slot = (plotMax.x - plotMin.x) / static_cast<float>(n);
    const float gap = std::min(6.0f, slot * 0.2f);
    const bool valuesFit = style.showValues && ImGui::CalcTextSize("0.00").x <= slot;
    int hovered = -1;
    const ImVec2 mouse = ImGui::GetIO().MousePos;
    const float pitch = std::max(4.0f, ImGui::GetFontSize() * 0.45f);
    // A run of masked keys [r0, r1) px hatched faintly, as the heatmap hatches masked cells.
    const auto hatch = [&](float r0, float r1) {
        list->PushClipRect(ImVec2(r0, plotMin.y), ImVec2(r1, plotMax.y), true);
        for (float d = -height; d < r1 - r0; d += pitch)
            list->AddLine(ImVec2(r0 + d, plotMax.y), ImVec2(r0 + d + height, plotMin.y), style.masked);
        list->PopClipRect();
    };
    // A bar whose last key (and so any of its keys) was generated is amber, as the figure's.
    const auto barColour = [&](int last) { return style.generatedFrom >= 0 && last >= style.generatedFrom ? style.generated : style.bar; };
    // More keys than pixels (a long sentence): a bar a pixel column, the largest weight of its keys,
    // so that the geometry stays bounded by the chart's width.
    const int columns = slot < 1.0f ? static_cast<int>(plotMax.x - plotMin.x) : 0;
    int masked = -1;  // the first column of a run whose every key is masked
    for (int c = 0; c < columns; ++c) {
        const int j0 = static_cast<int>(static_cast<float>(c) / slot);
        const int j1 = std::clamp(static_cast<int>(static_cast<float>(c + 1) / slot), j0 + 1, n);
        int top = -1;
        bool mine = false;
        for (int j = j0; j < j1; ++j) {
            if (!isBlocked(j) && (top < 0 || values[static_cast<std::size_t>(j)] > values[static_cast<std::size_t>(top)])) top = j;
            mine = mine || j == highlight;
        }
        const float x0 = plotMin.x + static_cast<float>(c);
        if (mouse.x >= x0 && mouse.x < x0 + 1.0f && mouse.y >= min.y && mouse.y <= max.y) hovered = top >= 0 ? top : j0;
        if (top < 0) {
            if (masked < 0) masked = c;
            continue;
        }
        if (masked >= 0) hatch(plotMin.x + static_cast<float>(masked), x0), masked = -1;
        list->AddRectFilled(ImVec2(x0, yOf(values[static_cast<std::size_t>(top)])), ImVec2(x0 + 1.0f, plotMax.y),
                            mine ? style.highlight : barColour(j1 - 1));
    }
    if (masked >= 0) hatch(plotMin.x + static_cast<float>(masked), plotMin.x + static_cast<float>(columns));
    for (int j = 0; slot >= 1.0f && j < n; ++j) {
        const float x0 = plotMin.x + static_cast<float>(j) * slot + gap * 0.5f,
                    x1 = plotMin.x + static_cast<float>(j + 1) * slot - gap * 0.5f;
        const float v = values[static_cast<std::size_t>(j)];
        const float y0 = yOf(v);
        if (mouse.x >= plotMin.x + static_cast<float>(j) * slot && mouse.x < plotMin.x + static_cast<float>(j + 1) * slot &&
            mouse.y >= min.y && mouse.y <= max.y)
            hovered = j;
        if (isBlocked(j)) {
            // masked: no bar; each run of masked keys is hatched faintly, as the heatmap hatches
            // masked cells
            if (j > 0 && isBlocked(j - 1)) continue;
            int end = j;
            while (end + 1 < n && isBlocked(end + 1)) ++end;
            hatch(x0, std::max(plotMin.x + static_cast<float>(end + 1) * slot - gap * 0.5f, x0 + 1.0f));
        } else {
            list->AddRectFilled(ImVec2(x0, y0), ImVec2(std::max(x1, x0 + 1.0f), plotMax.y),
                                j == highlight ? style.highlight : barColour(j));
        }
        if (valuesFit && !isBlocked(j)) {
            char buf[16];
            std::snprintf(buf, sizeof buf, "%.2f", static_cast<double>(v));
            const ImVec2 ts = ImGui::CalcTextSize(buf);
            list->AddText(ImVec2((x0 + x1 - ts.x) * 0.5f, y0 - ts.y - 1.0f), text, buf);
        }
    }
    if (!style.showLabels || labels.empty()) return hovered;
    // Key labels: each token when every one fits its slot; else every niceStep-th key by its
    // position ("12 cat", or "12" when even those crowd), the highlighted key always.
    const int count = std::min(n, static_cast<int>(labels.size()));
    const LabelThinning thin = thinLabels(labels, 0, count, slot, ImGui::GetFontSize() * 4.0f);
    const bool tokens = thin.tokens;
    const float pairW = ImGui::CalcTextSize((std::to_string(n) + " ").c_str()).x + ImGui::GetFontSize() * 3.0f;
    const bool pairs = !tokens && n / std::max(1, niceStep((pairW + gapText * 2.0f) / slot)) >= 3;
    const int step =
        tokens ? thin.step : niceStep(((pairs ? pairW : ImGui::CalcTextSize(std::to_string(n).c_str()).x) + gapText * 2.0f) / slot);
    // the highlighted key's label first; the others keep clear of it and of each other
    const auto labelOf = [&](int j) {
        const std::string& token = labels[static_cast<std::size_t>(j)];
        return tokens  ? fitLabel(token, thin.width)
               : pairs ? std::to_string(j + 1) + " " + fitLabel(token, ImGui::GetFontSize() * 3.0f)
                       : std::to_string(j + 1);
    };
    const auto xOf = [&](int j, float w) {
        return std::clamp(plotMin.x + (static_cast<float>(j) + 0.5f) * slot - w * 0.5f, plotMin.x - axisW, max.x - w);
    };
    float keepOut0 = 1e9f, keepOut1 = -1e9f;
    if (highlight >= 0 && highlight < count) {
        const std::string label = labelOf(highlight);
        const float w = ImGui::CalcTextSize(label.c_str()).x;
        keepOut0 = xOf(highlight, w) - gapText, keepOut1 = xOf(highlight, w) + w + gapText;
        list->AddText(ImVec2(xOf(highlight, w), plotMax.y + 3.0f), style.highlight, label.c_str());
    }
    float lastEnd = -1e9f;
    for (int j = 0; j < count; j += step) {
        if (j == highlight) continue;
        const std::string label = labelOf(j);
        const float w = ImGui::CalcTextSize(label.c_str()).x, x = xOf(j, w);
        if (x < lastEnd + gapText || (x < keepOut1 && x + w > keepOut0)) continue;
        list->AddText(ImVec2(x, plotMax.y + 3.0f), isBlocked(j) ? dim : text, label.c_str());
        lastEnd = x + w;
    }
    return hovered;
}

void linePlot(ImDrawList* list, ImVec2 min, ImVec2 max, const std::vector<Series>& series, float yMin, float yMax, const char* xCaption,
              const LineAxes& axes) {
    const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);
    const ImU32 grid = ImGui::GetColorU32(ImGuiCol_Border);
    const float lineH = ImGui::GetTextLineHeight();
    const ImVec2 pMin(min.x + ImGui::CalcTextSize("-1.0").x + 6.0f, min.y + 2.0f);
    const ImVec2 pMax(max.x - 4.0f, max.y - lineH - 4.0f);
    if (pMax.x <= pMin.x + 8 || pMax.y <= pMin.y + 8 || series.empty()) return;
    const auto yPix = [&](float y) { return pMax.y - (y - yMin) / (yMax - yMin) * (pMax.y - pMin.y); };
    for (float tick : {yMin, 0.5f * (yMin + yMax), yMax}) {
        list->AddLine(ImVec2(pMin.x, yPix(tick)), ImVec2(pMax.x, yPix(tick)), grid);
        char buf[16];
        std::snprintf(buf, sizeof buf, "%.1f", tick);
        list->AddText(ImVec2(min.x, yPix(tick) - lineH * 0.5f), text, buf);
    }
    const std::size_t n = series.front().y.size();
    const float xMax = axes.xMax >= 0 ? axes.xMax : static_cast<float>(n > 0 ? n - 1 : 0);
    const auto xPix = [&](float x) { return xMax > 0 ? pMin.x + x / xMax * (pMax.x - pMin.x) : pMin.x; };
    const float dx = axes.unitSteps ? xPix(1.0f) - pMin.x : n > 1 ? (pMax.x - pMin.x) / static_cast<float>(n - 1) : 0.0f;
    for (const Series& s : series) {
        std::vector<ImVec2> points;
        for (std::size_t i = 0; i < s.y.size(); ++i) points.emplace_back(pMin.x + dx * static_cast<float>(i), yPix(s.y[i]));
        list->AddPolyline(points.data(), static_cast<int>(points.size()), s.color, 0, 2.0f);
        // A dot at each whole x (a token's position) when they are far enough apart to tell.
        if (axes.dotWholeX && n > 1 && xMax > 0 && (pMax.x - pMin.x) / xMax >= 6.0f)
            for (int x = 0; x <= static_cast<int>(xMax); ++x) {
                const float at = static_cast<float>(x) / xMax * static_cast<float>(n - 1);
                const auto i = std::min(n - 2, static_cast<std::size_t>(at));
                const float y = s.y[i] + (s.y[i + 1] - s.y[i]) * (at - static_cast<float>(i));
                list->AddCircleFilled(ImVec2(xPix(static_cast<float>(x)), yPix(y)), 3.0f, s.color);
            }
    }
    list->AddText(ImVec2(pMin.x, pMax.y + 2.0f), text, "0");
    char last[16];
    std::snprintf(last, sizeof last, "%.0f", static_cast<double>(xMax));
    const ImVec2 lastSize = ImGui::CalcTextSize(last);
    list->AddText(ImVec2(pMax.x - lastSize.x, pMax.y + 2.0f), text, last);
    const ImVec2 cs = ImGui::CalcTextSize(xCaption);
    if (cs.x + 2.0f * lastSize.x + 8.0f < pMax.x - pMin.x)
        list->AddText(ImVec2((pMin.x + pMax.x - cs.x) * 0.5f, pMax.y + 2.0f), text, xCaption);
    if (!axes.legendInside) return;
    float ly = pMin.y + 2.0f;
    for (const Series& s : series) {  // legend
        const ImVec2 ts = ImGui::CalcTextSize(s.label.c_str());
        const float lx = pMax.x - ts.x - 26.0f;
        list->AddRectFilled(ImVec2(lx - 4, ly - 1), ImVec2(pMax.x - 2, ly + ts.y + 1), ImGui::GetColorU32(ImGuiCol_WindowBg, 0.85f));
        list->AddLine(ImVec2(lx, ly + ts.y * 0.5f), ImVec2(lx + 16.0f, ly + ts.y * 0.5f), s.color, 3.0f);
        list->AddText(ImVec2(lx + 20.0f, ly), text, s.label.c_str());
        ly += ts.y + 2.0f;
    }
}

void legend(const std::vector<Series>& series) {
    const float swatch = ImGui::GetFontSize() * 1.2f, gap = ImGui::GetStyle().ItemInnerSpacing.x;
    for (std::size_t k = 0; k < series.size(); ++k) {
        const Series& s = series[k];
        const float width = swatch + gap + ImGui::CalcTextSize(s.label.c_str()).x;
        if (k) sameLineIfFits(width);
        const ImVec2 at = ImGui::GetCursorScreenPos();
        const float mid = at.y + ImGui::GetTextLineHeight() * 0.5f;
        ImGui::GetWindowDrawList()->AddLine(ImVec2(at.x, mid), ImVec2(at.x + swatch, mid), s.color, 3.0f);
        ImGui::Dummy(ImVec2(swatch, ImGui::GetTextLineHeight()));
        ImGui::SameLine(0.0f, gap);
        ImGui::TextUnformatted(s.label.c_str());
    }
}

void logLogPlot(ImDrawList* list, ImVec2 min, ImVec2 max, const std::vector<LogSeries>& series, const char* xCaption,
                const char* yCaption) {
    double x0 = 1e300, x1 = 0, y0 = 1e300, y1 = 0;
    for (const LogSeries& s : series)
        for (std::size_t i = 0; i < std::min(s.x.size(), s.y.size()); ++i)
            if (s.x[i] > 0 && s.y[i] > 0)
                x0 = std::min(x0, s.x[i]), x1 = std::max(x1, s.x[i]), y0 = std::min(y0, s.y[i]), y1 = std::max(y1, s.y[i]);
    const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text), grid = ImGui::GetColorU32(ImGuiCol_Border);
    const float lineH = ImGui::GetTextLineHeight();
    const ImVec2 pMin(min.x + ImGui::CalcTextSize("1e-3").x + 8.0f, min.y + lineH + 4.0f);
    const ImVec2 pMax(max.x - 6.0f, max.y - lineH - 4.0f);
    list->AddText(min, text, yCaption);
    if (x1 <= 0 || pMax.x <= pMin.x + 8 || pMax.y <= pMin.y + 8) return;
    // whole decades around the data
    const double lx0 = std::floor(std::log10(x0)), lx1 = std::max(lx0 + 1, std::ceil(std::log10(x1)));
    const double ly0 = std::floor(std::log10(y0)), ly1 = std::max(ly0 + 1, std::ceil(std::log10(y1)));
    const auto px = [&](double x) { return pMin.x + static_cast<float>((std::log10(x) - lx0) / (lx1 - lx0)) * (pMax.x - pMin.x); };
    const auto py = [&](double y) { return pMax.y - static_cast<float>((std::log10(y) - ly0) / (ly1 - ly0)) * (pMax.y - pMin.y); };
    const auto decade = [](double e) {
        char buf[16];
        if (e >= 0 && e <= 4) std::snprintf(buf, sizeof buf, "%.0f", std::pow(10.0, e));
        else std::snprintf(buf, sizeof buf, "1e%.0f", e);
        return std::string(buf);
    };
    for (double e = lx0; e <= lx1; ++e) {
        list->AddLine(ImVec2(px(std::pow(10.0, e)), pMin.y), ImVec2(px(std::pow(10.0, e)), pMax.y), grid);
        const std::string label = decade(e);
        const float w = ImGui::CalcTextSize(label.c_str()).x;
        list->AddText(ImVec2(std::min(px(std::pow(10.0, e)) - w * 0.5f, max.x - w), pMax.y + 2.0f), text, label.c_str());
    }
    for (double e = ly0; e <= ly1; ++e) {
        list->AddLine(ImVec2(pMin.x, py(std::pow(10.0, e))), ImVec2(pMax.x, py(std::pow(10.0, e))), grid);
        const std::string label = decade(e);
        list->AddText(ImVec2(min.x, py(std::pow(10.0, e)) - lineH * 0.5f), text, label.c_str());
    }
    const ImVec2 cs = ImGui::CalcTextSize(xCaption);
    list->AddText(ImVec2(pMax.x - cs.x, pMax.y - lineH - 2.0f), text, xCaption);
    for (const LogSeries& s : series) {
        std::vector<ImVec2> points;
        for (std::size_t i = 0; i < std::min(s.x.size(), s.y.size()); ++i)
            if (s.x[i] > 0 && s.y[i] > 0) points.emplace_back(px(s.x[i]), py(s.y[i]));
        list->AddPolyline(points.data(), static_cast<int>(points.size()), s.color, 0, 2.0f);
        for (const ImVec2& p : points) list->AddCircleFilled(p, 3.5f, s.color);
    }
    float ly = pMin.y + 2.0f;
    for (const LogSeries& s : series) {  // legend, top left
        const ImVec2 ts = ImGui::CalcTextSize(s.label.c_str());
        const float lx = pMin.x + 6.0f;
        list->AddRectFilled(ImVec2(lx - 4, ly - 1), ImVec2(lx + ts.x + 24.0f, ly + ts.y + 1), ImGui::GetColorU32(ImGuiCol_WindowBg, 0.85f));
        list->AddLine(ImVec2(lx, ly + ts.y * 0.5f), ImVec2(lx + 16.0f, ly + ts.y * 0.5f), s.color, 3.0f);
        list->AddText(ImVec2(lx + 20.0f, ly), text, s.label.c_str());
        ly += ts.y + 2.0f;
    }
}

double curvePlot(ImDrawList* list, ImVec2 min, ImVec2 max, const std::vector<PlotLine>& lines, const PlotFrame& frame) {
    const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text), grid = ImGui::GetColorU32(ImGuiCol_Border, 0.6f);
    const ImU32 faint = ImGui::GetColorU32(ImGuiCol_TextDisabled);
    const float lineH = ImGui::GetTextLineHeight(), gap = ImGui::GetFontSize() * 0.3f;
    const std::vector<core::AxisTick> xTicks = core::axisTicks(frame.x0, frame.x1, frame.logX);
    const std::vector<core::AxisTick> yTicks = core::axisTicks(frame.y0, frame.y1, frame.logY);
    float tickW = 0.0f;
    for (const core::AxisTick& t : yTicks) tickW = std::max(tickW, ImGui::CalcTextSize(t.label.c_str()).x);
    const ImVec2 pMin(min.x + tickW + 2.0f * gap, min.y + 2.0f * lineH);
    const ImVec2 pMax(max.x - gap, max.y - 2.0f * lineH - gap);
    list->AddText(ImVec2(min.x, min.y), text, frame.yCaption.c_str());
    if (pMax.x <= pMin.x + 8.0f || pMax.y <= pMin.y + 8.0f || xTicks.empty() || yTicks.empty())
        return std::numeric_limits<double>::quiet_NaN();
    const auto along = [](double v, double lo, double hi, bool log) {
        if (log) return v > 0 ? (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo)) : 0.0;
        return (v - lo) / (hi - lo);
    };
    const auto px = [&](double v) {
        return pMin.x + static_cast<float>(std::clamp(along(v, frame.x0, frame.x1, frame.logX), 0.0, 1.0)) * (pMax.x - pMin.x);
    };
    const auto py = [&](double v) {
        return pMax.y - static_cast<float>(std::clamp(along(v, frame.y0, frame.y1, frame.logY), 0.0, 1.0)) * (pMax.y - pMin.y);
    };
    // every tick gridded; labels thinned to every n-th where they would touch
    float widestX = 0.0f;
    for (const core::AxisTick& t : xTicks) widestX = std::max(widestX, ImGui::CalcTextSize(t.label.c_str()).x);
    const float xPitch = (pMax.x - pMin.x) / static_cast<float>(std::max<std::size_t>(xTicks.size() - 1, 1));
    const float yPitch = (pMax.y - pMin.y) / static_cast<float>(std::max<std::size_t>(yTicks.size() - 1, 1));
    const auto xEvery = static_cast<std::size_t>(std::ceil((widestX + 2.0f * gap) / std::max(xPitch, 1.0f)));
    const auto yEvery = static_cast<std::size_t>(std::ceil(lineH / std::max(yPitch, 1.0f)));
    for (std::size_t k = 0; k < xTicks.size(); ++k) {
        const core::AxisTick& t = xTicks[k];
        const float x = px(t.value), w = ImGui::CalcTextSize(t.label.c_str()).x;
        list->AddLine(ImVec2(x, pMin.y), ImVec2(x, pMax.y), grid);
        if (k % std::max<std::size_t>(xEvery, 1) == 0)
            list->AddText(ImVec2(std::clamp(x - w * 0.5f, min.x, max.x - w), pMax.y + gap), text, t.label.c_str());
    }
    for (std::size_t k = 0; k < yTicks.size(); ++k) {
        const core::AxisTick& t = yTicks[k];
        const float y = py(t.value);
        list->AddLine(ImVec2(pMin.x, y), ImVec2(pMax.x, y), grid);
        if (k % std::max<std::size_t>(yEvery, 1) == 0)
            list->AddText(ImVec2(pMin.x - gap - ImGui::CalcTextSize(t.label.c_str()).x, y - lineH * 0.5f), text, t.label.c_str());
    }
    list->AddRect(pMin, pMax, grid);
    const ImVec2 xs = ImGui::CalcTextSize(frame.xCaption.c_str());
    list->AddText(ImVec2(std::max(pMin.x, (pMin.x + pMax.x - xs.x) * 0.5f), pMax.y + gap + lineH), text, frame.xCaption.c_str());
    for (const auto& [x, label] : frame.markers) {
        if (!(x >= frame.x0 && x <= frame.x1)) continue;
        const float mx = px(x);
        for (float y = pMin.y; y < pMax.y; y += 8.0f) list->AddLine(ImVec2(mx, y), ImVec2(mx, std::min(y + 4.0f, pMax.y)), faint, 1.0f);
        const float w = ImGui::CalcTextSize(label.c_str()).x;
        list->AddText(ImVec2(std::clamp(mx - w * 0.5f, pMin.x, pMax.x - w), pMin.y - lineH), faint, label.c_str());
    }
    list->PushClipRect(pMin, pMax, true);
    std::vector<ImVec2> run;
    const auto flush = [&](const PlotLine& l) {
        if (l.dashed) {
            for (std::size_t i = 1; i < run.size(); i += 2) list->AddLine(run[i - 1], run[i], l.color, l.width);
        } else if (run.size() >= 2) {
            list->AddPolyline(run.data(), static_cast<int>(run.size()), l.color, 0, l.width);
        }
        if (l.dots)
            for (const ImVec2& p : run) list->AddCircleFilled(p, l.width + 1.0f, l.color, 8);
        run.clear();
    };
    for (const PlotLine& l : lines) {
        if (l.x == nullptr || l.y == nullptr) continue;
        for (std::size_t i = 0; i < std::min(l.x->size(), l.y->size()); ++i) {
            const double x = (*l.x)[i], y = (*l.y)[i];
            if (!std::isfinite(x) || !std::isfinite(y) || (frame.logX && !(x > 0)) || (frame.logY && !(y > 0))) flush(l);
            else run.emplace_back(px(x), py(y));
        }
        flush(l);
    }
    list->PopClipRect();
    const ImVec2 mouse = ImGui::GetMousePos();
    if (!ImGui::IsWindowHovered() || mouse.x < pMin.x || mouse.x > pMax.x || mouse.y < pMin.y || mouse.y > pMax.y)
        return std::numeric_limits<double>::quiet_NaN();
    const double f = (mouse.x - pMin.x) / (pMax.x - pMin.x);
    return frame.logX ? std::pow(10.0, std::log10(frame.x0) + f * (std::log10(frame.x1) - std::log10(frame.x0)))
                      : frame.x0 + f * (frame.x1 - frame.x0);
}

int niceStep(float needed) {
    for (int decade = 1; decade < 1000000000; decade *= 10)
        for (const int m : {1, 2, 5})
            if (static_cast<float>(m * decade) >= needed) return m * decade;
    return 1000000000;
}

LabelThinning thinLabels(const std::vector<std::string>& labels, int first, int last, float slot, float maxTokenW) {
    const float gap = ImGui::GetFontSize() * 0.3f;
    float widest = 0.0f;
    for (int j = first; j < last; ++j)
        widest = std::max(widest, ImGui::CalcTextSize(fitLabel(labels[static_cast<std::size_t>(j)], maxTokenW).c_str()).x);
    // every few tokens still name the keys around them: whole, or cut to what leaves a few letters
    for (const int step : {1, 2, 3, 4}) {
        const float room = static_cast<float>(step) * slot - gap;
        if (widest <= room || room >= ImGui::GetFontSize() * 2.5f) return {step, true, std::min(room, maxTokenW)};
    }
    return {niceStep((ImGui::CalcTextSize(std::to_string(last).c_str()).x + 2.0f * gap) / slot), false, 0.0f};
}

void matrixLabels(ImDrawList* list, ImVec2 min, ImVec2 max, const std::vector<std::string>& rows, const std::vector<std::string>& cols,
                  float labelW, int highlightRow, ImU32 accent) {
    const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);
    const float lineH = ImGui::GetTextLineHeight(), gap = ImGui::GetFontSize() * 0.3f;
    const auto n = [](const std::vector<std::string>& v) { return static_cast<int>(v.size()); };
    if (!rows.empty()) {
        const float cell = (max.y - min.y) / static_cast<float>(n(rows));
        const int step = niceStep(lineH / cell);
        for (int i = 0; i < n(rows); ++i) {
            const bool highlight = i == highlightRow;
            if (i % step != 0 && !highlight) continue;
            const std::string& token = rows[static_cast<std::size_t>(i)];
            const std::string label =
                fitLabel(step > 1 ? std::to_string(i + 1) + " " + clipText(token, kLabelGlyphs, false).text : token, labelW - gap);
            const ImVec2 ts = ImGui::CalcTextSize(label.c_str());
            list->AddText(ImVec2(min.x - ts.x - gap, min.y + (static_cast<float>(i) + 0.5f) * cell - ts.y * 0.5f),
                          highlight ? accent : text, label.c_str());
        }
    }
    if (!cols.empty()) {
        const float cell = (max.x - min.x) / static_cast<float>(n(cols));
        // tokens when they fit a cell or two, else positions at a step their widest fits
        const auto [step, tokens, width] = thinLabels(cols, 0, n(cols), cell, ImGui::GetFontSize() * 4.0f);
        for (int j = tokens ? 0 : step - 1; j < n(cols); j += step) {
            const std::string label = tokens ? fitLabel(cols[static_cast<std::size_t>(j)], width) : std::to_string(j + 1);
            const ImVec2 ts = ImGui::CalcTextSize(label.c_str());
            const float x = std::min(min.x + (static_cast<float>(j) + 0.5f) * cell - ts.x * 0.5f, max.x - ts.x);
            list->AddText(ImVec2(x, min.y - lineH - gap * 0.5f), text, label.c_str());
        }
    }
}

int gridChart(ImDrawList* list, ImVec2 min, ImVec2 max, const std::vector<double>& values, int rows, int cols, const GridLabels& labels,
              core::ColormapKind kind, float lo, float hi) {
    rows = std::clamp(rows, 0, 64), cols = std::clamp(cols, 0, 64);
    if (rows == 0 || cols == 0 || values.size() < static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols)) return -1;
    const float line = ImGui::GetTextLineHeight(), pad = ImGui::GetFontSize() * 0.4f;
    float labelW = ImGui::CalcTextSize(labels.rowCaption.c_str()).x;
    for (const std::string& r : labels.rows) labelW = std::max(labelW, ImGui::CalcTextSize(r.c_str()).x);
    const ImVec2 g0(min.x + labelW + pad, min.y + line + pad * 0.5f), g1(max.x, max.y - 2.0f * line - pad);
    if (g1.x - g0.x < static_cast<float>(cols) * 4.0f || g1.y - g0.y < static_cast<float>(rows) * 4.0f) return -1;
    const float cw = (g1.x - g0.x) / static_cast<float>(cols), ch = (g1.y - g0.y) / static_cast<float>(rows);
    const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);
    list->AddText(ImVec2(min.x, min.y), ImGui::GetColorU32(ImGuiCol_TextDisabled), labels.rowCaption.c_str());
    const ImVec2 mouse = ImGui::GetIO().MousePos;
    int hovered = -1;
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) {
            const double v = values[static_cast<std::size_t>(r) * static_cast<std::size_t>(cols) + static_cast<std::size_t>(c)];
            const ImVec2 a(g0.x + cw * static_cast<float>(c), g0.y + ch * static_cast<float>(r));
            const ImVec2 b(a.x + cw, a.y + ch);
            const core::Rgb rgb = core::colormapColor(kind, static_cast<float>(v), lo, hi);
            list->AddRectFilled(a, b, toImColor(rgb));
            char buf[16];
            std::snprintf(buf, sizeof buf, "%.2f", v);
            const ImVec2 size = ImGui::CalcTextSize(buf);
            if (size.x + 4.0f <= cw && size.y <= ch)
                list->AddText(ImVec2(a.x + (cw - size.x) * 0.5f, a.y + (ch - size.y) * 0.5f), contrastingText(rgb), buf);
            if (mouse.x >= a.x && mouse.x < b.x && mouse.y >= a.y && mouse.y < b.y) hovered = r * cols + c;
        }
    list->AddRect(g0, g1, ImGui::GetColorU32(ImGuiCol_Border));
    for (int r = 0; r < rows && r < static_cast<int>(labels.rows.size()); ++r) {
        const char* s = labels.rows[static_cast<std::size_t>(r)].c_str();
        const float y = g0.y + ch * (static_cast<float>(r) + 0.5f) - line * 0.5f;
        list->AddText(ImVec2(g0.x - pad - ImGui::CalcTextSize(s).x, y), text, s);
    }
    // Column labels, thinned to every k-th where they would touch.
    float widest = 0.0f;
    for (const std::string& c : labels.cols) widest = std::max(widest, ImGui::CalcTextSize(c.c_str()).x);
    const int step = std::max(1, static_cast<int>(std::ceil((widest + pad) / cw)));
    for (int c = 0; c < cols && c < static_cast<int>(labels.cols.size()); c += step) {
        const char* s = labels.cols[static_cast<std::size_t>(c)].c_str();
        list->AddText(ImVec2(g0.x + cw * (static_cast<float>(c) + 0.5f) - ImGui::CalcTextSize(s).x * 0.5f, g1.y + pad * 0.5f), text, s);
    }
    const ImVec2 cap = ImGui::CalcTextSize(labels.colCaption.c_str());
    list->AddText(ImVec2((g0.x + g1.x - cap.x) * 0.5f, g1.y + pad * 0.5f + line), ImGui::GetColorU32(ImGuiCol_TextDisabled),
                  labels.colCaption.c_str());
    return hovered;
}

void colorBar(ImDrawList* list, ImVec2 min, ImVec2 max, core::ColormapKind kind, float lo, float hi, int ticks, bool log) {
    std::vector<std::pair<float, std::string>> labelled;
    for (int t = 0; t < ticks; ++t) {
        const float f = ticks > 1 ? static_cast<float>(t) / static_cast<float>(ticks - 1) : 0.0f;
        char buf[16];
        const float v = lo + f * (hi - lo);
        if (log) std::snprintf(buf, sizeof buf, v >= -0.01f ? "1" : "1e%.0f", static_cast<double>(v));
        else std::snprintf(buf, sizeof buf, hi - lo >= 0.1f ? "%.2f" : "%.2g", static_cast<double>(v));
        labelled.emplace_back(f, buf);
    }
    colorBar(list, min, max, kind, labelled);
}

void colorBar(ImDrawList* list, ImVec2 min, ImVec2 max, core::ColormapKind kind, const std::vector<std::pair<float, std::string>>& ticks) {
    const core::ColormapTable& table = core::colormapTable(kind);
    const float h = max.y - min.y;
    const float barW = std::min(18.0f, (max.x - min.x) * 0.4f);
    for (int i = 0; i < 256; ++i) {
        const float y1 = max.y - h * static_cast<float>(i) / 256.0f;
        const float y0 = max.y - h * static_cast<float>(i + 1) / 256.0f;
        list->AddRectFilled(ImVec2(min.x, std::floor(y0)), ImVec2(min.x + barW, std::ceil(y1)), toImColor(table[i]));
    }
    list->AddRect(min, ImVec2(min.x + barW, max.y), ImGui::GetColorU32(ImGuiCol_Border));
    const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);
    for (const auto& [f, label] : ticks) {
        const float y = max.y - std::clamp(f, 0.0f, 1.0f) * h;
        // The tick stands clear of its label: a tick touching "0.75" would read "-0.75".
        const float tick = ImGui::GetFontSize() * 0.3f;
        list->AddLine(ImVec2(min.x + barW, y), ImVec2(min.x + barW + tick, y), text);
        list->AddText(ImVec2(min.x + barW + tick + ImGui::GetFontSize() * 0.35f, y - ImGui::GetTextLineHeight() * 0.5f), text,
                      label.c_str());
    }
}

}  // namespace attnviz::widgets
