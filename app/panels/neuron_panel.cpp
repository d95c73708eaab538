#include "app/panels/neuron_panel.hpp"

#include "app/state/head_view.hpp"
#include "app/widgets/charts.hpp"
#include "app/widgets/text.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace attnviz::app {

int neuronCellsPerRow(int dk, float width, float minCell) {
    const int fit = std::max(1, static_cast<int>(width / minCell));
    if (dk <= fit) return std::max(1, dk);
    for (const int n : {64, 32, 16, 8})
        if (n <= fit) return n;
    return fit;
}

namespace {

// A vector as rows of cells, `perRow` a row, coloured -r … r through the diverging map (white at
// 0). Returns the index of the cell under the mouse, or -1.
int strip(const std::vector<float>& v, float r, int perRow, float cell) {
    ImDrawList* list = ImGui::GetWindowDrawList();
    const ImVec2 p = ImGui::GetCursorScreenPos();
    const int n = static_cast<int>(v.size()), rows = (n + perRow - 1) / perRow;
    const ImVec2 size(cell * static_cast<float>(std::min(n, perRow)), cell * static_cast<float>(rows));
    const ImVec2 mouse = ImGui::GetIO().MousePos;
    int hovered = -1;
    for (int d = 0; d < n; ++d) {
        const float x = p.x + cell * static_cast<float>(d % perRow), y = p.y + cell * static_cast<float>(d / perRow);
        const core::Rgb c = core::colormapColor(core::ColormapKind::Diverging, v[static_cast<std::size_t>(d)], -r, r);
        list->AddRectFilled(ImVec2(x, y), ImVec2(x + cell - 1, y + cell - 1), widgets::toImColor(c));
        if (mouse.x >= x && mouse.x < x + cell && mouse.y >= y && mouse.y < y + cell) hovered = d;
    }
    ImGui::Dummy(size);
    if (!ImGui::IsItemHovered()) hovered = -1;
    if (hovered >= 0) {
        const float x = p.x + cell * static_cast<float>(hovered % perRow), y = p.y + cell * static_cast<float>(hovered / perRow);
        list->AddRect(ImVec2(x - 1, y - 1), ImVec2(x + cell, y + cell), ImGui::GetColorU32(ImGuiCol_Text), 0.0f, 0, 2.0f);
    }
    return hovered;
}

float largestMagnitude(const std::vector<float>& v) {
    float r = 0;
    for (const float x : v) r = std::max(r, std::abs(x));
    return r > 0 ? r : 1.0f;
}

}  // namespace

void NeuronPanel::draw(PanelContext& ctx) {
    const AppState& s = ctx.state;
    const int head = std::max(0, shownHead(s));
    if (!beginPanelFor(ctx, title(), head, true)) return;
    if (noModelNote(ctx, "the neuron view needs each head's queries and keys")) return;
    if (s.forward.heads.empty() || s.model.tq() == 0) {
        ImGui::TextDisabled("no heads");
        ImGui::End();
        return;
    }
    const int query = std::clamp(s.view.selectedQuery, 0, static_cast<int>(s.model.tq()) - 1);
    const int key = std::clamp(s.view.selectedKey, 0, static_cast<int>(s.model.tk()) - 1);
    const NeuronTerms t = neuronTerms(s, head, query, key);
    const float em = ImGui::GetFontSize();

    // 1. What is shown.
    widgets::flowText(headLabel(s, head), true);
    widgets::flowText("· query " + std::to_string(query + 1) + " \"" +
                      widgets::fitLogical(s.queryLabels[static_cast<std::size_t>(query)], em * 6.0f) + "\" → key " +
                      std::to_string(key + 1) + " \"" + widgets::fitLogical(s.keyLabels[static_cast<std::size_t>(key)], em * 6.0f) + "\"");
    if (s.view.selectedHead < 0 && !s.view.presenter) widgets::remarkIfFits("(the mean has no q · k: head 1)");
    if (!s.view.presenter) {
        widgets::wrappedTextColored(ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled),
                                    "q, k: " + t.vectors + " · d_k = " + std::to_string(t.dk));
        widgets::remarkIfFits("· click a heatmap cell to pick query and key");
    }

    // 2. The sum, the scale and the logit.
    char sum[240];
    char divide[48];
    if (t.scaled) std::snprintf(divide, sizeof divide, "÷ √%d", t.dk);
    else std::snprintf(divide, sizeof divide, "÷ 1 (unscaled)");
    if (t.alibi != 0.0)
        std::snprintf(sum, sizeof sum, "Σ q ⊙ k = %.4f, ALiBi %+.4f → score %.4f   %s ÷ τ %.2f → logit %.4f", t.dot, t.alibi,
                      static_cast<double>(t.score), divide, static_cast<double>(t.temperature), static_cast<double>(t.score * t.scale));
    else if (s.model.softcap > 0.0f)  // Gemma 2: the score is q · k soft-capped
        std::snprintf(sum, sizeof sum, "Σ q ⊙ k = %.4f, soft-capped at %g → score %.4f   %s ÷ τ %.2f → logit %.4f", t.dot,
                      static_cast<double>(s.model.softcap), static_cast<double>(t.score), divide, static_cast<double>(t.temperature),
                      static_cast<double>(t.score * t.scale));
    else
        std::snprintf(sum, sizeof sum, "Σ q ⊙ k = score %.4f   %s ÷ τ %.2f → logit %.4f", static_cast<double>(t.score), divide,
                      static_cast<double>(t.temperature), static_cast<double>(t.score * t.scale));
    widgets::wrappedText(sum);
    char weight[96];
    if (t.blocked) std::snprintf(weight, sizeof weight, "key %d is masked for this query: weight 0", key + 1);
    else std::snprintf(weight, sizeof weight, "softmax over the row → α = %.4f", static_cast<double>(t.row[static_cast<std::size_t>(key)]));
    widgets::flowText(weight, true);

    // 3. The strips: q_i, k_j, and their product, each over its own largest magnitude; the cells
    // shrink to leave the softmax row room (at least half of what is left).
    const float labelW = ImGui::CalcTextSize("q ⊙ k ").x + em * 0.5f;
    const float room = ImGui::GetContentRegionAvail().x - labelW;
    const int perRow = neuronCellsPerRow(t.dk, room, std::max(10.0f, em * 0.75f));
    const int rows = (t.dk + perRow - 1) / perRow;
    const float spacing = ImGui::GetStyle().ItemSpacing.y;
    const float tall =
        (ImGui::GetContentRegionAvail().y - (s.view.presenter ? 0.0f : ImGui::GetTextLineHeightWithSpacing())) * 0.5f - 3.0f * spacing;
    const float cell =
        std::clamp(std::floor(std::min(room / static_cast<float>(perRow), tall / static_cast<float>(3 * rows))), 4.0f, em * 2.0f);
    int hovered = -1;
    const auto row = [&](const char* name, const std::vector<float>& v) {
        const ImVec2 p = ImGui::GetCursorScreenPos();
        ImGui::GetWindowDrawList()->AddText(ImVec2(p.x, p.y + std::max(0.0f, (cell - em) * 0.5f)), ImGui::GetColorU32(ImGuiCol_Text), name);
        ImGui::SetCursorScreenPos(ImVec2(p.x + labelW, p.y));
        const int h = strip(v, largestMagnitude(v), perRow, cell);
        if (h >= 0) hovered = h;
    };
    const bool room3 = tall >= 3.0f * 4.0f * static_cast<float>(rows);  // too little room: the equation alone
    if (room3) {
        row("q", t.q);
        row("k", t.k);
        row("q ⊙ k", t.product);
    }
    if (hovered >= 0) {
        const auto d = static_cast<std::size_t>(hovered);
        char buf[160];
        std::snprintf(buf, sizeof buf, "dimension %d\nq = %.4f\nk = %.4f\nq · k = %.4f (%.1f %% of the sum of |q · k|)", hovered, t.q[d],
                      t.k[d], t.product[d], [&] {
                          double total = 0;
                          for (const float p : t.product) total += std::abs(p);
                          return total > 0 ? 100.0 * std::abs(t.product[d]) / total : 0.0;
                      }());
        widgets::showTooltip(buf);
    }
    if (!s.view.presenter && room3) widgets::flowTextDisabled("blue < 0 < red, each strip over its own largest |value|", true);

    // 4. Query i's softmax row, key j marked; a click picks another key.
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    if (avail.y > em * 2.5f) {
        std::vector<bool> blocked(t.mask.size());
        for (std::size_t j = 0; j < t.mask.size(); ++j) blocked[j] = t.mask[j] != 0;
        widgets::BarChartStyle style;
        style.showValues = t.row.size() <= 16;
        style.showLabels = true;
        const ImVec2 min = ImGui::GetCursorScreenPos();
        const int bar = widgets::barChart(ImGui::GetWindowDrawList(), min, ImVec2(min.x + avail.x, min.y + avail.y - 2.0f), t.row,
                                          s.keyLabels, key, blocked, style);
        ImGui::Dummy(ImVec2(avail.x, avail.y - 2.0f));
        if (bar >= 0 && ImGui::IsItemHovered()) {
            char buf[64];
            std::snprintf(buf, sizeof buf, "key %d: α = %.4f — click to take this score apart", bar + 1,
                          static_cast<double>(t.row[static_cast<std::size_t>(bar)]));
            widgets::showTooltip(buf);
            if (ImGui::IsItemClicked()) ctx.actions.emit(action::SelectCell{query, bar});
        }
    }
    ImGui::End();
}

}  // namespace attnviz::app
