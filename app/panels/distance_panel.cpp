#include "app/panels/distance_panel.hpp"

#include "app/state/head_summary.hpp"
#include "app/views/head_profile_view.hpp"
#include "app/widgets/charts.hpp"
#include "app/widgets/text.hpp"
#include "core/base/format.hpp"

#include <algorithm>
#include <cmath>

namespace attnviz::app {
namespace {

// The most points the panel draws over both plots (ImGui's 16-bit indices): the other heads'
// curves are thinned to a stride that keeps them under it.
constexpr std::size_t kPointBudget = 12000;

ImU32 colourOf(const render::PlotCurve& c) { return widgets::toImColor(c.colour, static_cast<int>(std::lround(255.0f * c.opacity))); }

// The curve's point nearest x (on the plot's axis), or -1.
int nearest(const render::PlotCurve& c, double x, bool log) {
    int best = -1;
    double gap = 0;
    for (std::size_t i = 0; i < c.x.size(); ++i) {
        if (!std::isfinite(c.y[i])) continue;
        const double d = log ? std::abs(std::log(c.x[i] / x)) : std::abs(c.x[i] - x);
        if (best < 0 || d < gap) best = static_cast<int>(i), gap = d;
    }
    return best;
}

}  // namespace

void DistancePanel::draw(PanelContext& ctx) {
    const AppState& st = ctx.state;
    if (!beginPanel(ctx, title())) return;
    if (!headSummaryCurrent(st)) {
        if (!headSweepNote(ctx, id())) {
            ctx.requests.stale.insert(std::string(id()));
            ImGui::TextDisabled("summarizing every head…");
        }
        ImGui::End();
        return;
    }
    const HeadSummary& s = st.headSummary;
    if (s.profiles.empty() || s.bins.distanceBins() < 1) {
        ImGui::TextDisabled("no head to profile");
        ImGui::End();
        return;
    }
    render::LinePlotsFigure figure = profilePlots(st);
    widgets::wrappedText(profileHeads(st) + " · " + figure.subtitle);
    widgets::hoverTooltip(figure.note);

    // Thin the other heads' curves to the budget (every stride-th point; the selected head whole).
    std::size_t points = 0;
    for (const render::LinePlot& p : figure.plots)
        for (const render::PlotCurve& c : p.curves) points += c.x.size();
    const std::size_t stride = std::max<std::size_t>(1, (points + kPointBudget - 1) / kPointBudget);
    if (stride > 1)
        for (render::LinePlot& p : figure.plots)
            for (render::PlotCurve& c : p.curves) {
                if (c.dashed || (&c == &p.curves.back() && st.view.selectedHead >= 0)) continue;  // the reference and the head whole
                std::vector<double> x, y;
                for (std::size_t i = 0; i < c.x.size(); i += stride) x.push_back(c.x[i]), y.push_back(c.y[i]);
                c.x = std::move(x), c.y = std::move(y);
            }

    const float em = ImGui::GetFontSize();
    const ImVec2 area = ImGui::GetContentRegionAvail();
    // the legend below the plots, in as many rows as its items need (whole items wrap)
    float rowW = 0.0f, legendRows = 1.0f;
    for (const render::LegendEntry& l : figure.legend) {
        const float w = ImGui::CalcTextSize(l.label.c_str()).x + 2.0f * em;
        if (rowW > 0.0f && rowW + w > area.x) legendRows += 1.0f, rowW = 0.0f;
        rowW += w;
    }
    const float legendH = ImGui::GetTextLineHeightWithSpacing() * legendRows + ImGui::GetStyle().ItemSpacing.y;
    // side by side when wide, one above the other when tall, else one at a time with a choice
    const bool side = area.x >= 2.2f * (area.y - legendH);
    const float stackedH = (area.y - legendH - em) / 2.0f;
    const bool one = !side && stackedH < 8.0f * em;
    float top = 0.0f;
    if (one) {
        const float y0 = ImGui::GetCursorPosY();
        if (ImGui::RadioButton("by distance", !m_firstK)) m_firstK = false;
        widgets::sameLineIfFits(ImGui::GetFrameHeight() + ImGui::GetStyle().ItemInnerSpacing.x + ImGui::CalcTextSize("first k").x);
        if (ImGui::RadioButton("first k", m_firstK)) m_firstK = true;
        top = ImGui::GetCursorPosY() - y0;
    }
    const float plotW = side ? (area.x - em) / 2.0f : area.x;
    const float plotH = side ? area.y - legendH : one ? area.y - legendH - top : stackedH;
    if (plotW < 8.0f * em || plotH < 5.0f * em) {
        ImGui::TextDisabled("%s", widgets::fitLabel("enlarge the panel to see the curves", area.x).c_str());
        ImGui::End();
        return;
    }
    ImDrawList* list = ImGui::GetWindowDrawList();
    const ImVec2 o = ImGui::GetCursorScreenPos();
    for (std::size_t k = 0; k < figure.plots.size() && k < 2; ++k) {
        if (one && k != (m_firstK ? 1u : 0u)) continue;
        const render::LinePlot& p = figure.plots[k];
        const float slot = one ? 0.0f : static_cast<float>(k);
        const ImVec2 min = side ? ImVec2(o.x + slot * (plotW + em), o.y) : ImVec2(o.x, o.y + slot * (plotH + em));
        const ImVec2 max(min.x + plotW, min.y + plotH);
        widgets::PlotFrame frame{
            p.x.caption, widgets::fitLabel(p.title + " · " + p.y.caption, plotW, 120), p.x.log, p.y.log, p.x.lo, p.x.hi, p.y.lo, p.y.hi,
            {}};
        for (const render::PlotMarker& m : p.markers) frame.markers.emplace_back(m.x, m.label);
        std::vector<widgets::PlotLine> lines;
        // the reference (dashed) in the theme's text colour: dark ink would vanish on a dark theme
        for (const render::PlotCurve& c : p.curves)
            lines.push_back({&c.x, &c.y, c.dashed ? ImGui::GetColorU32(ImGuiCol_Text, 0.8f) : colourOf(c), c.width, c.dashed, c.dots});
        const double x = widgets::curvePlot(list, min, max, lines, frame);
        // Hover: the selected head's value there (the last curve drawn), and the reference's.
        if (std::isfinite(x) && !p.curves.empty() && st.view.selectedHead >= 0 && st.view.selectedHead < s.heads) {
            const render::PlotCurve& c = p.curves.back();
            const int i = nearest(c, x, p.x.log);
            if (i >= 0) {
                const auto at = static_cast<std::size_t>(i);
                const core::ProfileBins& bins = s.bins;
                std::string tip;
                if (k == 0) {
                    const auto b = static_cast<std::size_t>(i) + 1;  // the plot starts at distance 1
                    tip = "distance " + std::to_string(bins.distance[b]) +
                          (bins.distance[b + 1] - bins.distance[b] > 1 ? " … " + std::to_string(bins.distance[b + 1] - 1) : std::string()) +
                          "\nmean weight " + core::formatNumber(c.y[at]);
                    const core::HeadProfile& layer =
                        s.profiles[static_cast<std::size_t>(profileLayer(st)) * static_cast<std::size_t>(s.heads)];
                    tip += "\nuniform " + core::formatNumber(layer.uniform[b]);
                } else {
                    tip = "queries " + std::to_string(bins.positions[at] + 1) + " … " + std::to_string(bins.positions[at + 1]) +
                          "\nmass on the first " + std::to_string(bins.firstTokens) + ": " + core::formatFixed(c.y[at], 3);
                }
                ImGui::SetTooltip("%s", tip.c_str());
            }
        }
    }
    ImGui::Dummy(side || one ? ImVec2(area.x, plotH) : ImVec2(area.x, 2.0f * plotH + em));
    std::vector<widgets::Series> legend;
    for (const render::LegendEntry& l : figure.legend)
        legend.push_back({{},
                          l.dashed ? ImGui::GetColorU32(ImGuiCol_Text, 0.8f)
                                   : widgets::toImColor(l.colour, static_cast<int>(std::lround(255.0f * l.opacity))),
                          widgets::fitLabel(l.label, area.x - 2.0f * em, 120)});
    widgets::legend(legend);
    ImGui::End();
}

}  // namespace attnviz::app
