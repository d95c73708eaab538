#include "app/panels/qk_map_panel.hpp"

#include "app/render/qk_map_image.hpp"
#include "app/state/query_key_view.hpp"
#include "app/state/source.hpp"
#include "app/widgets/charts.hpp"
#include "app/widgets/text.hpp"
#include "core/base/format.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace attnviz::app {

int qkMapStride(long long points) { return static_cast<int>(std::max(1LL, (points + kQkMapMaxPoints - 1) / kQkMapMaxPoints)); }

namespace {

constexpr int kLines = 8;  // the selected query's strongest keys joined

std::string percent(double share) { return core::formatFixed(100.0 * share, 1) + " %"; }

// A point's token, for the tooltip: "query 12 “cat”".
std::string pointName(const AppState& s, bool key, int index) {
    const auto& labels = key ? s.keyLabels : s.queryLabels;
    std::string text = std::string(key ? "key " : "query ") + std::to_string(index + 1);
    if (index < static_cast<int>(labels.size())) text += " \"" + widgets::clipLabel(labels[static_cast<std::size_t>(index)], 24) + "\"";
    return text;
}

}  // namespace

void QkMapPanel::draw(PanelContext& ctx) {
    const AppState& s = ctx.state;
    if (!beginPanel(ctx, title())) return;
    if (!queryKeyCurrent(s)) ctx.requests.stale.insert(std::string(id()));
    const core::QueryKeyMap* map = shownQueryKeyMap(s);
    if (map == nullptr) {
        if (s.view.selectedHead < 0)
            widgets::wrappedText("The query–key map is of one head; the mean over heads has no queries or keys. Select a head.");
        else if (queryKeyCurrent(s) && !s.queryKey.why.empty()) widgets::wrappedText("No query–key map: " + s.queryKey.why);
        else ImGui::TextDisabled("computing…");
        ImGui::End();
        return;
    }
    const float em = ImGui::GetFontSize();
    const auto tq = static_cast<int>(map->queries), tk = static_cast<int>(map->keys);
    const int stride = qkMapStride(static_cast<long long>(tq) + tk);

    // 1. What is shown: the head, the legend, the normalisation.
    widgets::flowText(queryKeyCaption(s), true);
    ImDrawList* list = ImGui::GetWindowDrawList();
    const auto swatch = [&](bool key, const char* text) {
        widgets::sameLineIfFits(em * 0.64f + 3.0f + ImGui::CalcTextSize(text).x);
        const ImVec2 p = ImGui::GetCursorScreenPos();
        const float r = em * 0.32f, cy = p.y + ImGui::GetTextLineHeight() * 0.5f;
        const ImU32 c = widgets::toImColor(render::qkMapColour(key, 1, 2));
        if (key) list->AddRectFilled(ImVec2(p.x, cy - r), ImVec2(p.x + 2 * r, cy + r), c);
        else list->AddQuadFilled(ImVec2(p.x + r, cy - r), ImVec2(p.x + 2 * r, cy), ImVec2(p.x + r, cy + r), ImVec2(p.x, cy), c);
        ImGui::Dummy(ImVec2(2 * r + 3, ImGui::GetTextLineHeight()));
        ImGui::SameLine(0, 0);
        ImGui::TextUnformatted(text);
    };
    swatch(false, "queries");
    swatch(true, "keys");
    widgets::flowTextDisabled("· lighter = earlier");
    // How the points were placed: in full where the panel is tall, else in a tooltip.
    const std::string how = "keys + (mean q − mean k), q·a and k/a with a = " + core::formatFixed(map->scale, 3) +
                            " (equal mean norms; no softmax changes) · the first two principal components of both";
    if (!s.view.presenter && ImGui::GetContentRegionAvail().y > em * 30.0f) {
        widgets::wrappedTextColored(ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled), how);
    } else {
        widgets::flowTextDisabled("· a = " + core::formatFixed(map->scale, 3) + " (?)");
        if (ImGui::IsItemHovered()) widgets::showTooltip(how);
    }
    if (!capabilities(s).ownPass && !s.model.alibiSlopes.empty())
        widgets::wrappedTextColored(ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled),
                                    "ALiBi: the distance penalty is added to the scores, not to q · k; the map does not show it");
    if (stride > 1)
        widgets::wrappedTextColored(ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled),
                                    "every " + std::to_string(stride) + "th point drawn (" + std::to_string(tq + tk) + " in all)");

    // 2. The plot: equal units on both axes, the points' extent padded.
    const ImVec2 origin = ImGui::GetCursorScreenPos();
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const float axisH = ImGui::GetTextLineHeightWithSpacing() * 1.4f;
    const ImVec2 pMin(origin.x + em * 0.5f, origin.y + ImGui::GetTextLineHeight() + 4.0f);
    const ImVec2 pMax(origin.x + std::max(avail.x - em * 0.5f, em * 4.0f), origin.y + std::max(avail.y - axisH, em * 4.0f));
    ImGui::InvisibleButton("##qkplot", ImVec2(std::max(1.0f, avail.x), std::max(1.0f, avail.y)));
    const bool hovered = ImGui::IsItemHovered();
    const Eigen::Vector2f lo = map->points.colwise().minCoeff(), hi = map->points.colwise().maxCoeff();
    const float spanX = std::max(hi.x() - lo.x(), 1e-12f), spanY = std::max(hi.y() - lo.y(), 1e-12f);
    const float unit = std::min((pMax.x - pMin.x) / spanX, (pMax.y - pMin.y) / spanY) * 0.94f;
    const float cx = (pMin.x + pMax.x) * 0.5f, cy = (pMin.y + pMax.y) * 0.5f;
    const float mx = (lo.x() + hi.x()) * 0.5f, my = (lo.y() + hi.y()) * 0.5f;
    const auto at = [&](Eigen::Index row) {
        return ImVec2(cx + (map->points(row, 0) - mx) * unit, cy - (map->points(row, 1) - my) * unit);  // PC2 up
    };
    const ImU32 axis = ImGui::GetColorU32(ImGuiCol_TextDisabled);
    list->AddRect(pMin, pMax, ImGui::GetColorU32(ImGuiCol_Border));
    // the centre of the stacked points: PC1 = 0 and PC2 = 0
    const float zx = cx - mx * unit, zy = cy + my * unit;
    if (zx > pMin.x && zx < pMax.x) list->AddLine(ImVec2(zx, pMin.y), ImVec2(zx, pMax.y), axis & 0x60FFFFFFu);
    if (zy > pMin.y && zy < pMax.y) list->AddLine(ImVec2(pMin.x, zy), ImVec2(pMax.x, zy), axis & 0x60FFFFFFu);
    const std::string xCaption = "PC1 (" + percent(map->explained[0]) + " of the variance) →";
    const std::string yCaption = "↑ PC2 (" + percent(map->explained[1]) + ")";
    list->AddText(ImVec2(pMax.x - ImGui::CalcTextSize(xCaption.c_str()).x, pMax.y + 4.0f), axis, xCaption.c_str());
    list->AddText(ImVec2(pMin.x, pMin.y - ImGui::GetTextLineHeight() - 2.0f), axis, yCaption.c_str());

    // 3. The points: one quad each, without the anti-aliased fringe (4 vertices a point).
    const float r = std::clamp(em * 0.22f, 2.0f, 5.0f);
    const ImDrawListFlags flags = list->Flags;
    list->Flags &= ~ImDrawListFlags_AntiAliasedFill;
    list->PushClipRect(pMin, pMax, true);
    for (int j = 0; j < tk; j += stride) {
        const ImVec2 p = at(tq + j);
        list->AddRectFilled(ImVec2(p.x - r, p.y - r), ImVec2(p.x + r, p.y + r), widgets::toImColor(render::qkMapColour(true, j, tk)));
    }
    for (int i = 0; i < tq; i += stride) {
        const ImVec2 p = at(i);
        const float d = r * 1.3f;
        list->AddQuadFilled(ImVec2(p.x, p.y - d), ImVec2(p.x + d, p.y), ImVec2(p.x, p.y + d), ImVec2(p.x - d, p.y),
                            widgets::toImColor(render::qkMapColour(false, i, tq)));
    }
    list->PopClipRect();
    list->Flags = flags;
    // 4. The selected query joined to its strongest keys, over the points, their tokens named.
    const int query = std::clamp(s.view.selectedQuery, 0, tq - 1);
    const core::RowVec row = queryKeyWeights(s, query);
    const std::vector<int> strongest = row.size() > 0 ? core::strongestKeys(row, kLines) : std::vector<int>{};
    const ImVec4 textColour = ImGui::GetStyleColorVec4(ImGuiCol_Text);
    list->PushClipRect(pMin, pMax, true);
    for (const int j : strongest) {
        if (j >= tk) continue;
        const float w = std::clamp(row(j), 0.0f, 1.0f);
        list->AddLine(at(query), at(tq + j), ImGui::GetColorU32(ImVec4(textColour.x, textColour.y, textColour.z, 0.35f + 0.65f * w)),
                      1.0f + 3.0f * w);
        list->AddRect(ImVec2(at(tq + j).x - r - 1.5f, at(tq + j).y - r - 1.5f), ImVec2(at(tq + j).x + r + 1.5f, at(tq + j).y + r + 1.5f),
                      ImGui::GetColorU32(ImGuiCol_Text), 0.0f, 0, 1.5f);
    }
    // the query's token and its three strongest keys' tokens (the rest in the tooltips)
    // on a backing of the window's colour; a label that would overlap one already placed is left out
    std::vector<ImVec4> placed;
    const auto name = [&](Eigen::Index point, const std::string& label) {
        const std::string shown = widgets::fitLabel(label, em * 8.0f);
        const ImVec2 p = at(point), size = ImGui::CalcTextSize(shown.c_str());
        const ImVec2 lo(p.x + r * 2.0f + 2.0f, p.y - size.y), hi(lo.x + size.x + 4.0f, lo.y + size.y);
        for (const ImVec4& b : placed)
            if (lo.x < b.z && hi.x > b.x && lo.y < b.w && hi.y > b.y) return;
        placed.emplace_back(lo.x, lo.y, hi.x, hi.y);
        list->AddRectFilled(lo, hi, ImGui::GetColorU32(ImGuiCol_WindowBg, 0.8f), 3.0f);
        list->AddText(ImVec2(lo.x + 2.0f, lo.y), ImGui::GetColorU32(ImGuiCol_Text), shown.c_str());
    };
    if (query < static_cast<int>(s.queryLabels.size())) name(query, s.queryLabels[static_cast<std::size_t>(query)]);
    for (std::size_t n = 0; n < std::min<std::size_t>(3, strongest.size()); ++n)
        if (const int j = strongest[n]; j < static_cast<int>(s.keyLabels.size())) name(tq + j, s.keyLabels[static_cast<std::size_t>(j)]);
    list->PopClipRect();

    // the selected query ringed
    list->AddCircle(at(query), r * 2.6f, ImGui::GetColorU32(ImGuiCol_Text), 16, 2.0f);

    // 5. Hover: the nearest point within a few pixels names its token and outlines it in the heatmap.
    int hoverRow = -1;
    if (hovered) {
        const ImVec2 mouse = ImGui::GetIO().MousePos;
        float best = std::pow(std::max(r * 2.0f, 6.0f), 2.0f);
        for (Eigen::Index n = 0; n < map->points.rows(); ++n) {
            const bool isKey = n >= tq;
            if ((isKey ? n - tq : n) % stride != 0) continue;
            const ImVec2 p = at(n);
            const float d2 = (p.x - mouse.x) * (p.x - mouse.x) + (p.y - mouse.y) * (p.y - mouse.y);
            if (d2 <= best) best = d2, hoverRow = static_cast<int>(n);
        }
    }
    const bool hoverKey = hoverRow >= tq;
    const int hoverToken = hoverRow < 0 ? -1 : hoverKey ? hoverRow - tq : hoverRow;
    if (hoverToken != s.view.hoverToken || (hoverToken >= 0 && hoverKey != s.view.hoverKey))
        ctx.actions.emit(action::HoverToken{hoverToken, hoverKey});
    if (hoverRow >= 0) {
        list->AddCircle(at(hoverRow), r * 2.2f, ImGui::GetColorU32(ImGuiCol_PlotLinesHovered), 12, 2.0f);
        std::string tip = pointName(s, hoverKey, hoverToken);
        if (hoverKey && row.size() > hoverToken)
            tip += "\nquery " + std::to_string(query + 1) + " gives it " + core::formatFixed(row(hoverToken), 3);
        if (!hoverKey) tip += "\nclick: select this query";
        widgets::showTooltip(tip);
        if (!hoverKey && ImGui::IsItemClicked(ImGuiMouseButton_Left)) ctx.actions.emit(action::SelectQuery{hoverToken});
    }
    ImGui::End();
}

}  // namespace attnviz::app
