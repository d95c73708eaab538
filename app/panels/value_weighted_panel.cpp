#include "app/panels/value_weighted_panel.hpp"

#include "app/gfx/texture_cache.hpp"
#include "app/state/head_summary.hpp"
#include "app/views/value_weighted.hpp"
#include "app/widgets/charts.hpp"
#include "app/widgets/text.hpp"
#include "core/base/format.hpp"

#include <algorithm>
#include <cstdio>

namespace attnviz::app {

void ValueWeightedPanel::draw(PanelContext& ctx) {
    const AppState& s = ctx.state;
    if (!beginPanel(ctx, title())) return;
    if (noModelNote(ctx, "value-weighted attention needs each key's value and W_O")) return;
    const ValueWeightedView* view = shownValueWeighted(s);
    if (view == nullptr) {
        ctx.requests.stale.insert(std::string(id()));  // made after this frame, once the pass is ready
        ImGui::TextDisabled("weighing the values…");
        ImGui::End();
        return;
    }
    if (!view->why.empty()) {
        widgets::wrappedTextColored(ImVec4(1.0f, 0.45f, 0.4f, 1.0f), view->why);
        ImGui::End();
        return;
    }
    const core::AttentionMaps maps = attentionMaps(s);
    const ValueWeightedMaps& vw = view->value;
    const int layer = view->key->layer, head = view->key->head;
    const std::string which = (layerCount(s) > 0 ? "layer " + std::to_string(maps.firstLayer + layer + 1) + " · " : std::string()) +
                              (head >= 0 ? "head " + std::to_string(head + 1) : "mean of the heads' maps");
    widgets::wrappedText(which + " · ‖α v W_O‖: what each key writes through the head · rows do not sum to 1 · largest " +
                         core::formatFixed(vw.largest, 3));
    widgets::hoverTooltip(
        "Value-weighted attention (Kobayashi et al., 2020): α_ij · ‖v_j W_O‖, the length of what key j adds to query i's residual "
        "stream through this head (its value, bias included, through the head's rows of W_O). A key the head weighs heavily but "
        "whose value is short writes little. Colours run from 0 to the map's largest value, not to 1.");

    const float em = ImGui::GetFontSize();
    float labelW = 0.0f;
    for (std::size_t i = 0; i < s.keyLabels.size() && i < 256; ++i)
        labelW = std::max(labelW, ImGui::CalcTextSize(widgets::clipLabel(s.keyLabels[i]).c_str()).x);
    labelW = std::min(labelW, 4.0f * em) + 0.6f * em;
    const ImVec2 area = ImGui::GetContentRegionAvail();
    const float barsH = std::max(5.0f * em, area.y * 0.25f), barW = 4.5f * em;
    const float side = std::min(area.x - labelW - barW, area.y - barsH - em);
    if (side < 2.0f * em) {
        ImGui::TextDisabled("%s", widgets::fitLabel("enlarge the panel to see the map", area.x).c_str());
        ImGui::End();
        return;
    }
    const core::Mat& map = vw.map;
    const float longest = static_cast<float>(std::max<Eigen::Index>({1, map.rows(), map.cols()}));
    const float w = side * static_cast<float>(map.cols()) / longest, h = side * static_cast<float>(map.rows()) / longest;
    const ImVec2 o = ImGui::GetCursorScreenPos();
    ImDrawList* list = ImGui::GetWindowDrawList();
    const ImVec2 min(o.x + labelW, o.y), max(o.x + labelW + w, o.y + h);
    const core::Settings& settings = maps.layerSettings(layer);
    const float hi = std::max(vw.largest, 1e-12f);
    const gfx::HeatmapTexture& texture = ctx.textures.get(
        "value-weighted", gfx::TextureStamp{view->version, head}, {s.view.colormap, 0.0f, hi}, [&] { return gfx::texelsOf(map, settings); },
        512);
    ctx.heatmaps.draw(list, texture, min, max, ImVec2(0, 0), ImVec2(1, 1));
    const int query = std::clamp(s.view.selectedQuery, 0, static_cast<int>(map.rows()) - 1);
    widgets::matrixLabels(list, min, max, s.queryLabels, {}, labelW, query, ImGui::GetColorU32(ImGuiCol_PlotHistogram));
    widgets::colorBar(list, ImVec2(max.x + 0.6f * em, min.y), ImVec2(max.x + 1.3f * em, min.y + std::min(h, 12.0f * em)), s.view.colormap,
                      0.0f, hi, 3);

    // Hover: the cell's weight, its key's value length and their product; click: select the query.
    ImGui::SetCursorScreenPos(min);
    ImGui::InvisibleButton("##value-weighted map", ImVec2(std::max(1.0f, w), std::max(1.0f, h)));
    if (ImGui::IsItemHovered()) {
        const ImVec2 mouse = ImGui::GetIO().MousePos;
        const int i =
            std::clamp(static_cast<int>((mouse.y - min.y) / h * static_cast<float>(map.rows())), 0, static_cast<int>(map.rows()) - 1);
        const int j =
            std::clamp(static_cast<int>((mouse.x - min.x) / w * static_cast<float>(map.cols())), 0, static_cast<int>(map.cols()) - 1);
        std::string text = "query " + std::to_string(i + 1) + " " + widgets::clipLabel(s.queryLabels[static_cast<std::size_t>(i)]) +
                           " ← key " + std::to_string(j + 1) + " " + widgets::clipLabel(s.keyLabels[static_cast<std::size_t>(j)]) +
                           "\n‖α v W_O‖ = " + core::formatFixed(map(i, j), 4);
        core::Mat scratch;  // the row when the maps are made on demand
        if (head >= 0)
            text += " = α " + core::formatFixed(maps.rowBlock(layer, head, i, 1, scratch)(0, j), 4) + " × ‖v W_O‖ " +
                    core::formatFixed(vw.norms[static_cast<std::size_t>(head)](j), 4);
        tooltip(text.c_str());
        if (ImGui::IsItemClicked()) ctx.actions.emit(action::SelectQuery{i});
    }

    // The selected query's row as bars, on the map's scale.
    ImGui::SetCursorScreenPos(ImVec2(o.x, max.y + 0.5f * em));
    const std::string caption = "query " + std::to_string(query + 1) + " " +
                                widgets::clipLabel(s.queryLabels[static_cast<std::size_t>(query)]) + " · bars: share of the largest value";
    widgets::wrappedTextColored(ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled), caption);
    std::vector<float> row(static_cast<std::size_t>(map.cols()));
    std::vector<bool> blocked(row.size(), false);
    const core::MaskMat mask = core::hasMask(settings) ? core::blockedMatrix(settings, map.rows(), map.cols()) : core::MaskMat();
    for (Eigen::Index j = 0; j < map.cols(); ++j) {
        row[static_cast<std::size_t>(j)] = map(query, j) / hi;
        if (mask.size() != 0) blocked[static_cast<std::size_t>(j)] = mask(query, j);
    }
    const ImVec2 barsMin(o.x + labelW, ImGui::GetCursorScreenPos().y), barsMax(o.x + area.x, o.y + area.y);
    widgets::BarChartStyle style;
    style.showValues = false;
    style.axisLargest = 1.0f;
    if (barsMax.y - barsMin.y > 2.0f * em && map.cols() <= 4096)
        widgets::barChart(list, barsMin, barsMax, row, s.keyLabels, query, blocked, style);
    ImGui::End();
}

}  // namespace attnviz::app
