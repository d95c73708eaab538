#include "app/panels/what_if_panel.hpp"

#include "app/gfx/heatmap_renderer.hpp"
#include "app/gfx/texture_cache.hpp"
#include "app/state/source.hpp"
#include "app/views/what_if_view.hpp"
#include "app/widgets/charts.hpp"
#include "app/widgets/text.hpp"
#include "core/attention/compare.hpp"
#include "core/text/tokenizer.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace attnviz::app {
namespace {

using Kind = core::decoder::Intervention::Kind;

// At most this many edits are listed (each a line of text and a button); the rest are counted.
constexpr std::size_t kListedEdits = 48;
// Rows of the next-token table.
constexpr std::size_t kNextRows = 10;

// The token a row of the shown layer is: its position in the text (before the swaps).
int textPosition(const AppState& s, int shown) {
    if (s.swapped() && shown >= 0 && static_cast<std::size_t>(shown) < s.model.perm.size())
        return s.model.perm[static_cast<std::size_t>(shown)];
    return shown;
}

std::string tokenText(const AppState& s, int position) {
    const auto p = static_cast<std::size_t>(position);
    const std::vector<std::string>& labels = checkpointPass(s)->labels;
    return p < labels.size() ? widgets::clipLabel(core::visibleToken(labels[p]), 16) : std::string();
}

// The buttons: ablate the selected head (zero, mean) and hide the selected token, then undo,
// redo and clear.
void editButtons(PanelContext& ctx) {
    const AppState& s = ctx.state;
    const int layer = s.scenario.layer, head = s.view.selectedHead;
    // The window counts from 1 (the command line's L.H from 0).
    const std::string lh = head >= 0 ? "L" + std::to_string(layer + 1) + " H" + std::to_string(head + 1) : "";
    const auto ablated = [&](bool mean) {
        return std::find(s.scenario.ablations.begin(), s.scenario.ablations.end(), core::HeadAblation{layer, head, mean}) !=
               s.scenario.ablations.end();
    };
    ImGui::BeginDisabled(head < 0 || ablated(false));
    if (widgets::button("Zero " + (head >= 0 ? lh : std::string("head")), "whatif-zero"))
        ctx.actions.emit(action::AblateHead{layer, head, false});
    ImGui::EndDisabled();
    widgets::hoverTooltip(head < 0 ? "Select one head (not the mean) to ablate it."
                                   : "Zero this head's output (A·V, before W_O; W_O's bias is still added) and run the model again from "
                                     "this layer.");
    ImGui::SameLine();
    ImGui::BeginDisabled(head < 0 || ablated(true));
    if (widgets::button("Mean " + (head >= 0 ? lh : std::string("head")), "whatif-mean"))
        ctx.actions.emit(action::AblateHead{layer, head, true});
    ImGui::EndDisabled();
    widgets::hoverTooltip("Replace this head's output by its mean over the sentence's positions.");
    const int token = textPosition(s, s.view.selectedQuery);
    const bool hidden = std::find(s.scenario.hiddenTokens.begin(), s.scenario.hiddenTokens.end(), token) != s.scenario.hiddenTokens.end();
    const std::string hide = "Hide token " + std::to_string(token + 1) + " " + tokenText(s, token);
    widgets::sameLineIfFits(ImGui::CalcTextSize(hide.c_str()).x + ImGui::GetStyle().FramePadding.x * 2.0f);
    ImGui::BeginDisabled(hidden);
    if (widgets::button(hide, "whatif-hide")) ctx.actions.emit(action::HideToken{token});
    ImGui::EndDisabled();
    widgets::hoverTooltip("Hide the selected token from every query's keys in every layer (click a heatmap row to select one).");
    ImGui::BeginDisabled(s.whatIf.undo.empty());
    if (widgets::button("Undo", "whatif-undo")) ctx.actions.emit(action::UndoWhatIf{});
    ImGui::EndDisabled();
    ImGui::SameLine();
    ImGui::BeginDisabled(s.whatIf.redo.empty());
    if (widgets::button("Redo", "whatif-redo")) ctx.actions.emit(action::RedoWhatIf{});
    ImGui::EndDisabled();
    ImGui::SameLine();
    const WhatIfEdits edits = whatIfEdits(s.scenario);
    ImGui::BeginDisabled(edits.empty());
    if (widgets::button("Clear", "whatif-clear")) ctx.actions.emit(action::ClearWhatIf{});
    ImGui::EndDisabled();
}

// The edits, one a line with a button that removes it.
void editList(PanelContext& ctx) {
    const AppState& s = ctx.state;
    const WhatIfEdits edits = whatIfEdits(s.scenario);
    if (edits.empty()) {
        ImGui::TextDisabled("No edits: the model's own pass.");
        return;
    }
    for (std::size_t n = 0; n < edits.size() && n < kListedEdits; ++n) {
        const core::decoder::Intervention e = whatIfEdit(edits, n);
        ImGui::PushID(static_cast<int>(n));
        if (ImGui::SmallButton("×")) ctx.actions.emit(action::RemoveWhatIfEdit{static_cast<int>(n)});
        widgets::hoverTooltip("Remove this edit");
        ImGui::SameLine();
        std::vector<std::string> labels;
        if (e.kind == Kind::HideToken) labels.assign(static_cast<std::size_t>(e.token) + 1, ""), labels.back() = tokenText(s, e.token);
        widgets::label(whatIfEditText(e, labels));
        ImGui::PopID();
    }
    if (edits.size() > kListedEdits) ImGui::TextDisabled("… and %zu more", edits.size() - kListedEdits);
    const int from = checkpointPass(s)->run->computedFrom(), layers = layerCount(s);
    char line[160];
    if (from == 0) std::snprintf(line, sizeof line, "Ran every layer again (a hidden token changes the first layer on).");
    else std::snprintf(line, sizeof line, "Ran layers %d … %d again; %d … %d reused.", from + 1, layers, 1, from);
    widgets::wrappedTextColored(ImGui::GetStyle().Colors[ImGuiCol_TextDisabled], line);
}

// The next tokens before and after, sorted by |Δ log-probability|.
void nextTable(const AppState& s) {
    if (!ImGui::BeginTable("whatif-next", 4, ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV))
        return;
    ImGui::TableSetupColumn("next token", ImGuiTableColumnFlags_WidthStretch);
    ImGui::TableSetupColumn("before");
    ImGui::TableSetupColumn("after");
    ImGui::TableSetupColumn("Δ log p");
    ImGui::TableHeadersRow();
    const core::LoadedModel& pass = *checkpointPass(s);
    for (std::size_t i = 0; i < pass.nextChanges.size() && i < kNextRows; ++i) {
        const core::decoder::NextTokenChange& c = pass.nextChanges[i];
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        widgets::label(core::visibleToken(core::decoder::tokenLabel(*pass.checkpoint, c.id)), 24);
        ImGui::TableNextColumn();
        ImGui::Text("%.2g", static_cast<double>(c.before));
        ImGui::TableNextColumn();
        ImGui::Text("%.2g", static_cast<double>(c.after));
        ImGui::TableNextColumn();
        const ImVec4 colour = c.deltaLogProb > 0 ? ImVec4(0.85f, 0.35f, 0.3f, 1.0f) : ImVec4(0.35f, 0.55f, 0.95f, 1.0f);
        ImGui::TextColored(colour, "%+.3f", c.deltaLogProb);
    }
    ImGui::EndTable();
}

// Every head's moved measure as a layer × head grid (rows: layers), in the view's colormap from 0
// to the largest; ablated heads outlined, the shown head framed. A click shows that layer and head.
void movedGrid(PanelContext& ctx, const std::vector<double>& moved, float width, float height) {
    const AppState& s = ctx.state;
    const core::LoadedModel& pass = *checkpointPass(s);
    const int layers = pass.layers(), heads = pass.checkpoint->config().nHead;
    const float em = ImGui::GetFontSize();
    ImGui::TextUnformatted("How far each head's map moved");
    const float labelW = ImGui::CalcTextSize("000 ").x;
    const float cell =
        std::max(3.0f, std::min((width - labelW) / static_cast<float>(heads), (height - 1.5f * em) / static_cast<float>(layers)));
    const ImVec2 o = ImGui::GetCursorScreenPos();
    const ImVec2 gridMin(o.x + labelW, o.y);
    ImDrawList* list = ImGui::GetWindowDrawList();
    double largest = 0;
    for (const double m : moved) largest = std::max(largest, m);
    const auto hi = static_cast<float>(std::max(largest, 1e-6));
    const int step = std::max(1, static_cast<int>(std::ceil(ImGui::GetTextLineHeight() / cell)));
    for (int l = 0; l < layers; ++l) {
        if (l % step == 0)
            list->AddText(ImVec2(o.x, gridMin.y + cell * static_cast<float>(l) + (cell - ImGui::GetTextLineHeight()) * 0.5f),
                          ImGui::GetColorU32(ImGuiCol_TextDisabled), std::to_string(l + 1).c_str());
        for (int h = 0; h < heads; ++h) {
            const auto m = static_cast<float>(moved[static_cast<std::size_t>(l * heads + h)]);
            const ImVec2 a(gridMin.x + cell * static_cast<float>(h), gridMin.y + cell * static_cast<float>(l));
            const ImVec2 b(a.x + cell - 1.0f, a.y + cell - 1.0f);
            list->AddRectFilled(a, b, widgets::toImColor(core::colormapColor(s.view.colormap, m, 0.0f, hi)));
        }
    }
    for (const core::HeadAblation& e : s.scenario.ablations) {
        if (e.layer >= layers || e.head >= heads) continue;
        const ImVec2 a(gridMin.x + cell * static_cast<float>(e.head), gridMin.y + cell * static_cast<float>(e.layer));
        list->AddRect(a, ImVec2(a.x + cell - 1.0f, a.y + cell - 1.0f), IM_COL32(255, 150, 40, 255), 0.0f, 0, 2.0f);
    }
    if (s.view.selectedHead >= 0) {
        const ImVec2 a(gridMin.x + cell * static_cast<float>(s.view.selectedHead), gridMin.y + cell * static_cast<float>(s.scenario.layer));
        list->AddRect(ImVec2(a.x - 1, a.y - 1), ImVec2(a.x + cell, a.y + cell), ImGui::GetColorU32(ImGuiCol_Text), 0.0f, 0, 1.5f);
    }
    const ImVec2 size(cell * static_cast<float>(heads), cell * static_cast<float>(layers));
    ImGui::SetCursorScreenPos(gridMin);
    ImGui::InvisibleButton("whatif-grid", ImVec2(std::max(size.x, 1.0f), std::max(size.y, 1.0f)));
    if (ImGui::IsItemHovered()) {
        const ImVec2 mouse = ImGui::GetIO().MousePos;
        const int h = std::clamp(static_cast<int>((mouse.x - gridMin.x) / cell), 0, heads - 1);
        const int l = std::clamp(static_cast<int>((mouse.y - gridMin.y) / cell), 0, layers - 1);
        char tip[96];
        std::snprintf(tip, sizeof tip, "layer %d · head %d: moved %.4f%s", l + 1, h + 1, moved[static_cast<std::size_t>(l * heads + h)],
                      l < pass.run->computedFrom() ? " (reused)" : "");
        widgets::showTooltip(tip);
        if (ImGui::IsItemClicked()) ctx.actions.emit(action::SelectLayerHead{l, h});
    }
    char caption[96];
    std::snprintf(caption, sizeof caption, "0 … %.3g; outlined: ablated", static_cast<double>(hi));
    ImGui::TextDisabled("%s", widgets::fitLabel(caption, width).c_str());
    widgets::hoverTooltip(core::movedRule());
}

}  // namespace

void WhatIfPanel::draw(PanelContext& ctx) {
    const AppState& s = ctx.state;
    if (!beginPanel(ctx, title())) return;
    const core::LoadedModel* pass = checkpointPass(s);
    if (pass == nullptr) {
        widgets::wrappedText("What-if needs a model: File → Open model folder, or --model DIR.");
        widgets::hoverTooltip(
            "A what-if edits a model's pass: ablate a head (its output zeroed, or replaced by its mean over the positions) or hide a "
            "token from every layer's keys, and see the next token and every later map change.");
        ImGui::End();
        return;
    }
    const bool edited = pass->edited();
    const WhatIfView* made = shownWhatIf(s);
    if (made == nullptr) {
        ctx.requests.stale.insert(std::string(id()));  // made after this frame
        ImGui::TextDisabled("comparing the passes…");
        ImGui::End();
        return;
    }
    const WhatIfMaps& maps = made->value;
    const ImVec2 area = ImGui::GetContentRegionAvail();
    const float em = ImGui::GetFontSize();
    const bool wide = area.x >= 42.0f * em;
    const float leftW = wide ? std::min(area.x * 0.42f, 30.0f * em) : area.x;
    // Wide: the edits and the table in a column of their own (scrolling), the maps beside it;
    // narrow: one above the other, the panel scrolling.
    const bool column = !wide || ImGui::BeginChild("whatif-edits", ImVec2(leftW, area.y), false);
    if (column) {
        editButtons(ctx);
        ImGui::Separator();
        editList(ctx);
        if (edited) {
            ImGui::Spacing();
            nextTable(s);
        }
    }
    if (wide) ImGui::EndChild();
    if (!edited) {
        ImGui::End();
        return;
    }
    if (wide) ImGui::SameLine();
    // Beside the list: as tall as the panel; below it (the panel scrolls): about half the width.
    const ImVec2 rest =
        wide ? ImVec2(area.x - leftW - ImGui::GetStyle().ItemSpacing.x, area.y)
             : ImVec2(ImGui::GetContentRegionAvail().x, std::max(ImGui::GetContentRegionAvail().y, std::min(area.x * 0.5f, 24.0f * em)));
    const float gridW = std::min(rest.x * 0.5f, std::max(rest.y, 10.0f * em));
    ImGui::BeginGroup();
    movedGrid(ctx, maps.moved, gridW, rest.y - 2.5f * em);
    ImGui::EndGroup();
    ImGui::SameLine();
    // The shown head's map after − before, blue < 0 < red, on ±its largest change.
    ImGui::BeginGroup();
    const int layer = s.scenario.layer, head = s.view.selectedHead;
    if (head < 0) {
        ImGui::TextDisabled("Select one head for its map after − before.");
    } else {
        const gfx::TextureStamp key{made->version, head, 1, layer, 0};
        char caption[96];
        std::snprintf(caption, sizeof caption, "L%d H%d after − before: ±%.3g", layer + 1, head + 1, static_cast<double>(maps.range));
        const float mapW = std::max(4.0f * em, ImGui::GetContentRegionAvail().x - 0.5f * em);
        ImGui::TextUnformatted(widgets::fitLabel(caption, mapW).c_str());
        const float side = std::max(2.0f * em, std::min(mapW, rest.y - 3.0f * em));
        if (maps.diff.size() > 0) {
            const float r = maps.range > 0 ? maps.range : 1.0f;
            const gfx::HeatmapTexture& tex = ctx.textures.get(
                "whatif:diff", key, gfx::Colouring{core::ColormapKind::Diverging, -r, r}, [&] { return gfx::texelsOf(maps.diff); }, 512);
            const ImVec2 p = ImGui::GetCursorScreenPos();
            ctx.heatmaps.draw(ImGui::GetWindowDrawList(), tex, p, ImVec2(p.x + side, p.y + side), ImVec2(0, 0), ImVec2(1, 1));
            ImGui::Dummy(ImVec2(side, side));
            widgets::hoverTooltip(maps.range == 0 ? "This head's map did not change (a layer below the first edit, or an ablation's own "
                                                    "layer: it reads the same input)."
                                                  : "Rows: queries, columns: keys. Red: more weight after the edit, blue: less.");
        }
        ImGui::TextDisabled("%s", widgets::fitLabel("blue < 0 < red", side).c_str());
    }
    ImGui::EndGroup();
    ImGui::End();
}

}  // namespace attnviz::app
