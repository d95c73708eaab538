#include "app/panels/heads_panel.hpp"

#include "app/gfx/texture_cache.hpp"
#include "app/state/source.hpp"
#include "app/widgets/text.hpp"

#include <algorithm>
#include <cmath>

namespace attnviz::app {

void HeadsPanel::draw(PanelContext& ctx) {
    const AppState& s = ctx.state;
    if (!beginPanel(ctx, title())) return;
    if (!capabilities(s).wholeLayer) {  // every head's map in full: the model view has them pooled
        widgets::wrappedText("Every head's map in full; " + readFromPassNote(s) + ". The model view shows every head pooled.");
        ImGui::End();
        return;
    }
    const int heads = s.model.heads;
    const int tiles = heads + (heads > 1 ? 1 : 0);  // the mean comes first when there are several heads
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const float lineH = ImGui::GetTextLineHeightWithSpacing();
    // Largest square tile that fits all tiles in the panel.
    int columns = 1;
    float tile = 0.0f;
    for (int c = 1; c <= tiles; ++c) {
        const int rows = (tiles + c - 1) / c;
        const ImVec2 gap = ImGui::GetStyle().ItemSpacing;
        const float t =
            std::min((avail.x + gap.x) / static_cast<float>(c) - gap.x - 1.0f, avail.y / static_cast<float>(rows) - lineH - gap.y);
        if (t > tile) tile = t, columns = c;
    }
    tile = std::max(tile, 24.0f);
    const core::MaskMat none;
    int hoveredHead = -2;
    for (int t = 0; t < tiles; ++t) {
        const int head = heads > 1 ? t - 1 : t;
        if (t % columns != 0) ImGui::SameLine();
        ImGui::BeginGroup();
        const bool selected = head == s.view.selectedHead;
        const char* name = nullptr;
        std::string label = head < 0 ? std::string("mean") : "head " + std::to_string(head + 1);
        // Grouped-query heads: the kv head each reads, "head 3 · kv 1".
        if (head >= 0 && s.model.kvHeads > 0) label += " · kv " + std::to_string(s.model.kvHeadOf(head) + 1);
        name = label.c_str();
        // Over a narrow tile, "h3" (and then what fits of it).
        std::string shown = label;
        if (ImGui::CalcTextSize(shown.c_str()).x > tile) {
            std::string brief = head < 0 ? label : "h" + std::to_string(head + 1);
            if (head >= 0 && s.model.kvHeads > 0) brief += "·" + std::to_string(s.model.kvHeadOf(head) + 1);
            shown =
                widgets::fitLabel(ImGui::CalcTextSize(brief.c_str()).x > tile && head >= 0 ? "h" + std::to_string(head + 1) : brief, tile);
        }
        ImGui::TextColored(selected ? ImVec4(0.94f, 0.27f, 0.27f, 1.0f) : ImGui::GetStyleColorVec4(ImGuiCol_Text), "%s", shown.c_str());
        if (!weightsFresh(s, head)) {  // still being computed: a frame or two after a change
            const ImVec2 p = ImGui::GetCursorScreenPos();
            ImGui::GetWindowDrawList()->AddRect(p, ImVec2(p.x + tile, p.y + tile), ImGui::GetColorU32(ImGuiCol_Border));
            ImGui::GetWindowDrawList()->AddText(ImVec2(p.x + 4, p.y + 4), ImGui::GetColorU32(ImGuiCol_TextDisabled), "computing…");
            ImGui::Dummy(ImVec2(tile, tile));
            ImGui::EndGroup();
            continue;
        }
        // Under a scale other than 0 … 1, a thumbnail smaller than its matrix shows block means:
        // the maxima the heatmap pools by would put a near-top weight in every block of a long
        // sentence, and a stretched map of them would be one flat colour. (Auto counts as
        // stretched here: a thumbnail this small is of a long sentence.)
        const float perCell = tile / static_cast<float>(std::max<Eigen::Index>({1, s.model.tq(), s.model.tk()}));
        const gfx::Colouring colouring = weightColouring(s);
        const bool means = perCell < 1.0f && core::resolveScale(colouring.scale, 0.0f) != core::ColourScale::Fixed;
        const gfx::HeatmapTexture& tex =
            means ? ctx.textures.get(
                        "thumb-means:" + std::to_string(head) + (head < 0 && s.view.skipFirstKey ? "/first key left out" : ""),
                        gfx::TextureStamp{s.dataVersion, head}, colouring,
                        [&] {
                            return head >= 0 ? gfx::texelsOf(s.forward.heads[static_cast<std::size_t>(head)].weights, s.settings)
                                             : gfx::meanTexelsOf(s.forward, s.settings, 1, meanOptions(s));
                        },
                        static_cast<int>(tile))
                  : headWeightsTexture(ctx, "thumb:" + std::to_string(head), head, perCell);
        const ImVec2 p = ImGui::GetCursorScreenPos();
        const float w = tile, h = tile * static_cast<float>(s.model.tq()) / static_cast<float>(std::max<Eigen::Index>(1, s.model.tk()));
        const ImVec2 q(p.x + w, p.y + std::min(h, tile));
        ctx.heatmaps.draw(ImGui::GetWindowDrawList(), tex, p, q, ImVec2(0, 0), ImVec2(1, 1));
        ImGui::InvisibleButton(("##head" + std::to_string(head)).c_str(), ImVec2(w, tile));
        if (selected)
            ImGui::GetWindowDrawList()->AddRect(ImVec2(p.x - 2, p.y - 2), ImVec2(q.x + 2, q.y + 2), IM_COL32(239, 68, 68, 255), 0, 0, 3.0f);
        if (ImGui::IsItemHovered()) {
            hoveredHead = head;
            if (head >= 0 && s.model.kvHeads > 0)
                ImGui::SetTooltip(
                    "%s: reads key/value head %d of %d (grouped-query: %d query heads share each); click to select "
                    "(keys [ and ] step through heads)",
                    name, s.model.kvHeadOf(head) + 1, s.model.kvHeads, s.model.heads / s.model.kvHeads);
            else ImGui::SetTooltip("%s: click to select (keys [ and ] step through heads)", name);
        }
        if (ImGui::IsItemClicked()) ctx.actions.emit(action::SelectHead{head});
        ImGui::EndGroup();
    }
    // The preview is this panel's while the mouse is over it; another panel's (the model view's)
    // is left alone.
    const bool over = ImGui::IsWindowHovered(ImGuiHoveredFlags_AllowWhenBlockedByActiveItem);
    if (over ? hoveredHead != s.view.previewHead || s.view.previewLayer >= 0 : m_previewing && s.view.previewHead != -2)
        ctx.actions.emit(action::SetPreviewHead{hoveredHead});
    m_previewing = over && hoveredHead != -2;
    ImGui::End();
}

}  // namespace attnviz::app
