#include "app/panels/attribution_panel.hpp"

#include "app/render/attribution_image.hpp"
#include "app/state/source.hpp"
#include "app/views/attribution.hpp"
#include "app/widgets/charts.hpp"
#include "app/widgets/text.hpp"
#include "core/attention/colormap.hpp"
#include "core/base/format.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

namespace attnviz::app {
namespace {

core::Rgb colourOf(double v, double range) {
    return core::colormapColor(core::ColormapKind::Diverging, static_cast<float>(v), static_cast<float>(-range), static_cast<float>(range));
}

}  // namespace

void AttributionPanel::draw(PanelContext& ctx) {
    const AppState& s = ctx.state;
    if (!beginPanel(ctx, title())) return;
    const float em = ImGui::GetFontSize();
    const core::LoadedModel* pass = checkpointPass(s);
    // The position and the target.
    if (pass != nullptr) {
        const int last = static_cast<int>(pass->run->tokens()) - 1;
        const bool atLast = s.view.attributionQuery < 0;
        if (ImGui::RadioButton("last position", atLast) && !atLast) ctx.actions.emit(action::SetAttribution{-1, s.view.attributionTarget});
        ImGui::SameLine();
        const std::string atQuery = "the selected query (" + std::to_string(std::min(s.view.selectedQuery, last) + 1) + ")";
        if (ImGui::RadioButton(atQuery.c_str(), !atLast))
            ctx.actions.emit(action::SetAttribution{std::min(s.view.selectedQuery, last), s.view.attributionTarget});
        widgets::hoverTooltip(
            "Attribute the prediction at this position (a click on a row of the heatmap or a cell of the lens selects a query).");
        if (m_shownTarget != s.view.attributionTarget) {
            m_shownTarget = s.view.attributionTarget;
            std::memset(m_target.data(), 0, m_target.size());
            std::strncpy(m_target.data(), m_shownTarget.c_str(), m_target.size() - 1);
        }
        widgets::sameLineIfFits(em * 16.0f);
        ImGui::SetNextItemWidth(em * 9.0f);
        const bool entered =
            ImGui::InputTextWithHint("##target", "the top token", m_target.data(), m_target.size(), ImGuiInputTextFlags_EnterReturnsTrue);
        widgets::hoverTooltip(
            "The target: a token (\"Mary\" reads as \" Mary\", the word inside a sentence, where that is one token), #ID for "
            "a token id, or two joined by \"-\" for their logit difference (\"Mary-John\"). Empty: the token the model ranks "
            "first there. Enter to apply.");
        ImGui::SameLine();
        if ((ImGui::Button("target") || entered) && std::string(m_target.data()) != s.view.attributionTarget)
            ctx.actions.emit(action::SetAttribution{s.view.attributionQuery, std::string(m_target.data())});
    }
    const AttributionView* view = shownAttribution(s);
    if (view == nullptr) {
        ctx.requests.stale.insert(std::string(id()));
        ImGui::TextDisabled("attributing the logit…");
        ImGui::End();
        return;
    }
    if (!view->why.empty()) {
        widgets::wrappedTextColored(ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled), view->why);
        ImGui::End();
        return;
    }
    const AttributionData& d = view->value;
    const core::decoder::LogitAttribution& t = d.terms;
    // a set width: numbers wrap whole
    const float wrap = ImGui::GetContentRegionAvail().x;
    widgets::wrappedText(attributionSubject(d) + (t.minus >= 0 ? "" : " · p = " + core::formatFixed(d.probability * 100.0, 2) + " %") +
                             (d.defaultTarget ? " (the top token)" : ""),
                         widgets::kLongTextGlyphs, wrap);
    widgets::wrappedTextColored(ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled), attributionCheck(t), widgets::kLongTextGlyphs, wrap);
    widgets::hoverTooltip(
        "Direct logit attribution (TransformerLens's apply_ln_to_stack): the stream at this position is the sum of what wrote into it; "
        "with the final norm's divisor frozen at its value here, each part's share of the target's logit is its projection through the "
        "norm onto the target's unembedding row. Red adds to the logit, blue takes away. The parts and the norm's bias add up to the "
        "logit itself, to float rounding.");

    // The grid: the embeddings on top, then a row per layer: its heads, W_O's bias (if any), its MLP.
    const bool bias = std::any_of(t.outBias.begin(), t.outBias.end(), [](double v) { return v != 0.0; });
    double range = std::abs(t.embeddings);
    for (const double v : t.headTerms) range = std::max(range, std::abs(v));
    for (const double v : t.mlpTerms) range = std::max(range, std::abs(v));
    for (const double v : t.outBias) range = std::max(range, std::abs(v));
    if (range <= 0) range = 1;
    const float lineH = ImGui::GetTextLineHeight();
    const float labelW = ImGui::CalcTextSize("embeddings").x + 0.6f * em, barW = 4.5f * em;
    const int columns = t.heads + (bias ? 1 : 0) + 1;
    const ImVec2 area = ImGui::GetContentRegionAvail();
    const float gap = 0.5f * em;
    const float cellW = std::floor(std::min((area.x - labelW - barW - gap) / static_cast<float>(columns), 4.5f * em));
    const float cellH = std::floor(std::min((area.y - 2.0f * lineH - gap) / static_cast<float>(t.layers + 1), 1.6f * em));
    if (cellW < 3.0f || cellH < 3.0f) {
        ImGui::TextDisabled("%s", widgets::fitLabel("enlarge the panel to see the attribution", area.x).c_str());
        ImGui::End();
        return;
    }
    ImDrawList* list = ImGui::GetWindowDrawList();
    const ImVec2 o = ImGui::GetCursorScreenPos();
    const float x0 = o.x + labelW, headsY = o.y + lineH, gridY = headsY + cellH + gap;
    const float biasX = x0 + cellW * static_cast<float>(t.heads) + gap, mlpX = biasX + (bias ? cellW : 0.0f);
    const bool numbers = cellW >= ImGui::CalcTextSize("-0.00").x + 0.3f * em && cellH >= lineH;
    const int step = widgets::niceStep((ImGui::CalcTextSize("99").x + 0.4f * em) / cellW);
    for (int h = 0; h < t.heads; ++h)
        if (step == 1 || (h + 1) % step == 0 || (h == 0 && step > 2)) {
            const std::string n = std::to_string(h + 1);
            list->AddText(ImVec2(x0 + cellW * (static_cast<float>(h) + 0.5f) - ImGui::CalcTextSize(n.c_str()).x * 0.5f, o.y),
                          ImGui::GetColorU32(ImGuiCol_Text), n.c_str());
        }
    if (bias) list->AddText(ImVec2(biasX, o.y), ImGui::GetColorU32(ImGuiCol_TextDisabled), widgets::fitLabel("W_O b", cellW).c_str());
    list->AddText(ImVec2(mlpX, o.y), ImGui::GetColorU32(ImGuiCol_TextDisabled), widgets::fitLabel("MLP", cellW).c_str());
    const auto cell = [&](float x, float y, double v) {
        const core::Rgb c = colourOf(v, range);
        list->AddRectFilled(ImVec2(x, y), ImVec2(x + cellW - 1.0f, y + cellH - 1.0f), widgets::toImColor(c));
        if (!numbers) return;
        const std::string text = render::attributionValueText(v);
        list->AddText(ImVec2(x + (cellW - ImGui::CalcTextSize(text.c_str()).x) * 0.5f, y + (cellH - lineH) * 0.5f),
                      widgets::contrastingText(c), text.c_str());
    };
    const auto rowLabel = [&](const std::string& text, float y) {
        list->AddText(ImVec2(x0 - ImGui::CalcTextSize(text.c_str()).x - 0.3f * em, y + (cellH - lineH) * 0.5f),
                      ImGui::GetColorU32(ImGuiCol_Text), text.c_str());
    };
    rowLabel("embeddings", headsY);
    cell(x0, headsY, t.embeddings);
    const int rowStep = widgets::niceStep(lineH / cellH);
    for (int l = 0; l < t.layers; ++l) {
        const float y = gridY + cellH * static_cast<float>(l);
        if (rowStep == 1 || (l + 1) % rowStep == 0 || (l == 0 && rowStep > 2)) rowLabel("L" + std::to_string(l + 1), y);
        for (int h = 0; h < t.heads; ++h) cell(x0 + cellW * static_cast<float>(h), y, t.head(l, h));
        if (bias) cell(biasX, y, t.outBias[static_cast<std::size_t>(l)]);
        cell(mlpX, y, t.mlpTerms[static_cast<std::size_t>(l)]);
    }
    // The selected head framed.
    if (layerCount(s) > 0 && s.view.selectedHead >= 0 && s.view.selectedHead < t.heads) {
        const float x = x0 + cellW * static_cast<float>(s.view.selectedHead), y = gridY + cellH * static_cast<float>(s.scenario.layer);
        list->AddRect(ImVec2(x - 1.0f, y - 1.0f), ImVec2(x + cellW, y + cellH), IM_COL32(239, 68, 68, 255), 0.0f, 0, 2.0f);
    }
    const float right = mlpX + cellW;
    const float gridBottom = gridY + cellH * static_cast<float>(t.layers);
    widgets::colorBar(list, ImVec2(right + 0.6f * em, headsY), ImVec2(right + 1.3f * em, std::min(gridBottom, headsY + 12.0f * em)),
                      core::ColormapKind::Diverging, static_cast<float>(-range), static_cast<float>(range), 3);

    // Hover: the term; click a head: select it.
    ImGui::SetCursorScreenPos(ImVec2(x0, gridY));
    ImGui::InvisibleButton("##attribution", ImVec2(std::max(1.0f, right - x0), std::max(1.0f, gridBottom - gridY)));
    if (ImGui::IsItemHovered()) {
        const ImVec2 m = ImGui::GetIO().MousePos;
        const int l = std::clamp(static_cast<int>((m.y - gridY) / cellH), 0, t.layers - 1);
        const float x = m.x - x0;
        std::string text;
        if (x < cellW * static_cast<float>(t.heads)) {
            const int h = std::clamp(static_cast<int>(x / cellW), 0, t.heads - 1);
            text = "layer " + std::to_string(l + 1) + " · head " + std::to_string(h + 1) + ": " + core::formatFixed(t.head(l, h), 4) +
                   "\nits output z · W_O through the final norm onto the target\nclick to select this head";
            if (ImGui::IsItemClicked()) ctx.actions.emit(action::SelectLayerHead{l, h});
        } else if (bias && m.x >= biasX && m.x < biasX + cellW) {
            text = "layer " + std::to_string(l + 1) + " · W_O's bias: " + core::formatFixed(t.outBias[static_cast<std::size_t>(l)], 4);
        } else if (m.x >= mlpX) {
            text = "layer " + std::to_string(l + 1) + " · MLP: " + core::formatFixed(t.mlpTerms[static_cast<std::size_t>(l)], 4);
        }
        if (!text.empty()) widgets::showTooltip(text);
    }
    ImGui::SetCursorScreenPos(ImVec2(o.x, gridBottom + 0.3f * em));
    ImGui::TextDisabled("embeddings %s · final norm's bias %s", core::formatFixed(t.embeddings, 3).c_str(),
                        core::formatFixed(t.finalBias, 3).c_str());
    ImGui::End();
}

}  // namespace attnviz::app
