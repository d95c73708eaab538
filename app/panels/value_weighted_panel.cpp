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
    if (noModelNote(ctx, "value-weighted attention needs each key's value and W_O", false)) return;  // read from the pass when long
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
    const int factor = vw.factor;  // > 1: a long input's map pooled, each cell a block's mean
    widgets::wrappedText(
        which + " · ‖α v W_O‖: what each key writes through the head · rows do not sum to 1 · largest " + core::formatFixed(vw.largest, 3) +
        (factor > 1 ? " · each cell the mean of " + std::to_string(factor) + " × " + std::to_string(factor) : std::string()));
    widgets::hoverTooltip(
        "Value-weighted attention (Kobayashi et al., 2020): α_ij · ‖v_j W_O‖, the length of what key j adds to query i's residual "
        "stream through this head (its value, bias included, through the head's rows of W_O). A key the head weighs heavily but "
        "whose value is short writes little. Colours run from 0 to the map's largest value, not to 1.");

    // The cells' labels: the tokens, or for a pooled map each block's first position.
    const std::vector<std::string> positions =
        factor > 1 ? blockLabels(std::max(vw.map.rows(), vw.map.cols()), factor) : std::vector<std::string>();
    const std::vector<std::string>& rowLabels = factor > 1 ? positions : s.queryLabels;
    const std::vector<std::string>& colLabels = factor > 1 ? positions : s.keyLabels;
    const float em = ImGui::GetFontSize();
    float labelW = 0.0f;
    for (std::size_t i = 0; i < colLabels.size() && i < 256; ++i)
        labelW = std::max(labelW, ImGui::CalcTextSize(widgets::clipLabel(colLabels[i]).c_str()).x);
    labelW = std::min(labelW, 4.0f * em) + 0.6f * em;
    if (factor > 1)  // a pooled map's rows are labelled "block position"
        labelW = ImGui::CalcTextSize((std::to_string(vw.map.rows()) + " " + positions.back()).c_str()).x + 0.8f * em;
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
        "value-weighted", gfx::TextureStamp{view->version, head}, {s.view.colormap, 0.0f, hi},
        [&] { return factor > 1 ? gfx::texelsOf(map) : gfx::texelsOf(map, settings); }, 512);  // pooled: masked blocks marked
    ctx.heatmaps.draw(list, texture, min, max, ImVec2(0, 0), ImVec2(1, 1));
    const int query = std::clamp(s.view.selectedQuery / factor, 0, static_cast<int>(map.rows()) - 1);  // the selected query's row
    const std::vector<std::string> shownRows(rowLabels.begin(), rowLabels.begin() + map.rows());
    widgets::matrixLabels(list, min, max, shownRows, {}, labelW, query, ImGui::GetColorU32(ImGuiCol_PlotHistogram));
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
        std::string text;
        if (factor > 1) {  // a block: its positions from 1, and its mean
            const auto span = [&](int c, Eigen::Index size) {
                return std::to_string(c * factor + 1) + "–" + std::to_string(std::min<Eigen::Index>((c + 1) * factor, size));
            };
            const float v = map(i, j);
            text = "queries " + span(i, maps.queries) + " ← keys " + span(j, maps.keys) +
                   "\nmean ‖α v W_O‖ = " + (core::isMaskedTexel(v) ? std::string("masked") : core::formatFixed(v, 5));
        } else {
            text = "query " + std::to_string(i + 1) + " " + widgets::clipLabel(s.queryLabels[static_cast<std::size_t>(i)]) + " ← key " +
                   std::to_string(j + 1) + " " + widgets::clipLabel(s.keyLabels[static_cast<std::size_t>(j)]) +
                   "\n‖α v W_O‖ = " + core::formatFixed(map(i, j), 4);
            core::Mat scratch;  // the row when the maps are made on demand
            if (head >= 0)
                text += " = α " + core::formatFixed(maps.rowBlock(layer, head, i, 1, scratch)(0, j), 4) + " × ‖v W_O‖ " +
                        core::formatFixed(vw.norms[static_cast<std::size_t>(head)](j), 4);
        }
        tooltip(text.c_str());
        if (ImGui::IsItemClicked()) ctx.actions.emit(action::SelectQuery{i * factor});
    }

    // The selected query's row as bars, on the map's scale.
    ImGui::SetCursorScreenPos(ImVec2(o.x, max.y + 0.5f * em));
    const std::string caption =
        (factor > 1 ? "queries from " + std::to_string(query * factor + 1) + " (a block)"
                    : "query " + std::to_string(query + 1) + " " + widgets::clipLabel(s.queryLabels[static_cast<std::size_t>(query)])) +
        " · bars: share of the largest value";
    widgets::wrappedTextColored(ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled), caption);
    std::vector<float> row(static_cast<std::size_t>(map.cols()));
    std::vector<bool> blocked(row.size(), false);
    const core::MaskMat mask =
        core::hasMask(settings) && factor == 1 ? core::blockedMatrix(settings, map.rows(), map.cols()) : core::MaskMat();
    for (Eigen::Index j = 0; j < map.cols(); ++j) {
        const bool masked = core::isMaskedTexel(map(query, j)) || (mask.size() != 0 && mask(query, j));
        row[static_cast<std::size_t>(j)] = masked ? 0.0f : map(query, j) / hi;
        blocked[static_cast<std::size_t>(j)] = masked;
    }
    const std::vector<std::string> shownCols(colLabels.begin(), colLabels.begin() + map.cols());
    const ImVec2 barsMin(o.x + labelW, ImGui::GetCursorScreenPos().y), barsMax(o.x + area.x, o.y + area.y);
    widgets::BarChartStyle style;
    style.showValues = false;
    style.axisLargest = 1.0f;
    if (barsMax.y - barsMin.y > 2.0f * em && map.cols() <= 4096)
        widgets::barChart(list, barsMin, barsMax, row, shownCols, query, blocked, style);
    ImGui::End();
}

}  // namespace attnviz::app
