#include "app/panels/logit_lens_panel.hpp"

#include "app/render/logit_lens_image.hpp"
#include "app/state/source.hpp"
#include "app/views/logit_lens.hpp"
#include "app/widgets/charts.hpp"
#include "app/widgets/text.hpp"
#include "core/attention/colormap.hpp"
#include "core/base/format.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace attnviz::app {
namespace {

std::string layerName(int l) { return l == 0 ? "embeddings" : "layer " + std::to_string(l); }

// The colour bar's ticks kept at least a line apart on a bar `height` tall (the first and last
// always; a short lens of few layers has room for few).
std::vector<std::pair<float, std::string>> thinTicks(const std::vector<std::pair<float, std::string>>& ticks, float height, float lineH) {
    std::vector<std::pair<float, std::string>> out;
    for (std::size_t k = 0; k < ticks.size(); ++k) {
        const bool last = k + 1 == ticks.size();
        while (last && !out.empty() && out.size() > 1 && std::abs(out.back().first - ticks[k].first) * height < lineH) out.pop_back();
        if (last || out.empty() || std::abs(out.back().first - ticks[k].first) * height >= lineH) out.push_back(ticks[k]);
    }
    return out;
}

// The colour: the top token's probability, or a target's probability or rank; the target the
// model's final choice or the next input token.
void drawColourControls(PanelContext& ctx) {
    const AppState& s = ctx.state;
    static constexpr const char* kColours[] = {"top token's probability", "target's probability", "target's rank"};
    static constexpr const char* kTargets[] = {"the model's final choice", "the next input token"};
    const float em = ImGui::GetFontSize();
    int colour = static_cast<int>(s.view.lensColour), target = static_cast<int>(s.view.lensTarget);
    bool changed = false;
    ImGui::SetNextItemWidth(em * 12.0f);
    changed |= ImGui::Combo("colour", &colour, kColours, 3);
    widgets::hoverTooltip(
        "What colours a cell: the probability of its top token, or where a target stands there: its probability, or its rank on a "
        "log scale (the colour's top is rank 1, its bottom the vocabulary's last).");
    if (colour != static_cast<int>(LensColour::Top)) {
        widgets::sameLineIfFits(em * 13.0f + ImGui::CalcTextSize("target").x);
        ImGui::SetNextItemWidth(em * 12.0f);
        changed |= ImGui::Combo("target", &target, kTargets, 2);
        widgets::hoverTooltip(
            "The target at each position: the token the last layer ranks first there (what the model finally predicts), or the "
            "token that comes next in the text (what it should predict; none at the last position).");
    }
    if (changed) ctx.actions.emit(action::SetLensColour{static_cast<LensColour>(colour), static_cast<LensTarget>(target)});
}

}  // namespace

void LogitLensPanel::draw(PanelContext& ctx) {
    const AppState& s = ctx.state;
    if (!beginPanel(ctx, title())) return;
    // The colour first: set while a lens for another target is being made, it can be set back.
    if (!s.view.presenter && checkpointPass(s) != nullptr) drawColourControls(ctx);
    const LensView* view = shownLogitLens(s);
    if (view == nullptr) {
        ctx.requests.stale.insert(std::string(id()));  // made on the worker; taken in after a frame
        const double done = lensRunning(s) ? lensProgress(s) : 0.0;
        ImGui::TextDisabled("reading every layer through the unembedding… %d %%", static_cast<int>(std::lround(done * 100.0)));
        ImGui::End();
        return;
    }
    if (!view->why.empty()) {
        widgets::wrappedTextColored(ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled), view->why);
        ImGui::End();
        return;
    }
    const core::decoder::LogitLens& lens = view->value.lens;
    const core::LoadedModel* pass = checkpointPass(s);
    const std::vector<std::string>& tokens = pass != nullptr ? pass->labels : s.queryLabels;
    const Eigen::Index total = pass != nullptr ? pass->run->tokens() : lens.first + lens.positions;
    const LensColour colour = s.view.lensColour;
    const LensScale scale = lensScale(view->value, colour);
    // a cell is grey where its position has no target (the text's last, for the next input token), as in the figure
    const bool grey = colour != LensColour::Top && std::find(lens.targets.begin(), lens.targets.end(), -1) != lens.targets.end();
    widgets::wrappedTextColored(ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled),
                                "each cell: the token the stream after that layer predicts next there, coloured by " + scale.words +
                                    (grey ? " (grey: none)" : "") + " · positions " + std::to_string(lens.first + 1) + " … " +
                                    std::to_string(lens.first + lens.positions) + " of " + std::to_string(total),
                                widgets::kLongTextGlyphs, ImGui::GetContentRegionAvail().x);
    widgets::hoverTooltip(
        "The logit lens (nostalgebraist, 2020): each layer's residual stream read as the model reads its last one, through its final "
        "norm and unembedding (and, for Gemma 2, its final soft-capping). Layer 0 is the embeddings; the last row is the model's own "
        "prediction. Hover a cell for its five most likely tokens and where the target (the model's final choice, or the next input "
        "token) ranks there.");

    const float em = ImGui::GetFontSize(), lineH = ImGui::GetTextLineHeight();
    float labelW = 0.0f;
    for (int l = 0; l < lens.layers; ++l) labelW = std::max(labelW, ImGui::CalcTextSize(layerName(l).c_str()).x);
    labelW += 0.6f * em;
    const ImVec2 area = ImGui::GetContentRegionAvail();
    float tickW = 0.0f;  // the colour bar's widest label ("#50,257" for a rank)
    for (const auto& tick : scale.ticks) tickW = std::max(tickW, ImGui::CalcTextSize(tick.second.c_str()).x);
    const float barW = 1.8f * em + tickW;
    const float cellW = std::floor(std::min((area.x - labelW - barW) / static_cast<float>(lens.positions), 7.0f * em));
    const float cellH = std::floor(std::min((area.y - 2.0f * lineH) / static_cast<float>(lens.layers), 1.8f * em));
    if (cellW < 2.0f || cellH < 2.0f) {
        ImGui::TextDisabled("%s", widgets::fitLabel("enlarge the panel to see the lens", area.x).c_str());
        ImGui::End();
        return;
    }
    const ImVec2 o = ImGui::GetCursorScreenPos();
    const ImVec2 min(o.x + labelW, o.y),
        max(min.x + cellW * static_cast<float>(lens.positions), min.y + cellH * static_cast<float>(lens.layers));
    ImDrawList* list = ImGui::GetWindowDrawList();
    // Text in a cell only where it reads (at least three glyphs wide, a line high): bounded by the
    // panel's size, as the cells are.
    const bool words = cellW >= 2.5f * em && cellH >= lineH;
    for (int l = 0; l < lens.layers; ++l) {
        const float y = min.y + cellH * static_cast<float>(l);
        const std::string name = layerName(l);
        if (cellH >= lineH * 0.9f || l == 0 || l == lens.layers - 1)
            list->AddText(ImVec2(min.x - ImGui::CalcTextSize(name.c_str()).x - 0.3f * em, y + (cellH - lineH) * 0.5f),
                          ImGui::GetColorU32(ImGuiCol_Text), name.c_str());
        for (Eigen::Index p = 0; p < lens.positions; ++p) {
            const float shade = lensShade(view->value, colour, l, p);
            const core::Rgb c = render::lensCellColour(s.view.colormap, shade);
            const ImVec2 a(min.x + cellW * static_cast<float>(p), y);
            list->AddRectFilled(a, ImVec2(a.x + cellW - 1.0f, a.y + cellH - 1.0f), widgets::toImColor(c));
            if (!words) continue;
            const std::string text =
                widgets::fitLabel(view->value.topLabels[lens.at(l, p) * static_cast<std::size_t>(lens.k)], cellW - 0.3f * em);
            const float tw = ImGui::CalcTextSize(text.c_str()).x;
            list->AddText(ImVec2(a.x + (cellW - tw) * 0.5f, a.y + (cellH - lineH) * 0.5f), widgets::contrastingText(c), text.c_str());
        }
    }
    // The input tokens below their columns, thinned to what fits.
    const int step = widgets::niceStep(4.0f * em / cellW);
    for (Eigen::Index p = 0; p < lens.positions; ++p) {
        const Eigen::Index position = lens.first + p;
        if (step > 1 && (position + 1) % step != 0 && p != 0) continue;
        const std::string label =
            widgets::fitLabel(static_cast<std::size_t>(position) < tokens.size() ? tokens[static_cast<std::size_t>(position)] : "",
                              cellW * static_cast<float>(step) - 0.3f * em);
        const float tw = ImGui::CalcTextSize(label.c_str()).x;
        // a generated token's label in amber
        const bool made = pass != nullptr && pass->generated > 0 && position >= total - static_cast<Eigen::Index>(pass->generated);
        list->AddText(ImVec2(min.x + cellW * (static_cast<float>(p) + 0.5f) - tw * 0.5f, max.y + 0.2f * em),
                      made ? widgets::generatedColour() : ImGui::GetColorU32(ImGuiCol_Text), label.c_str());
    }
    // The selected query's column framed.
    if (const Eigen::Index q = s.view.selectedQuery - lens.first; q >= 0 && q < lens.positions)
        list->AddRect(ImVec2(min.x + cellW * static_cast<float>(q) - 1.0f, min.y - 1.0f),
                      ImVec2(min.x + cellW * static_cast<float>(q + 1), max.y + 1.0f), IM_COL32(239, 68, 68, 255), 0.0f, 0, 2.0f);
    widgets::colorBar(list, ImVec2(max.x + 0.6f * em, min.y), ImVec2(max.x + 1.3f * em, min.y + std::min(max.y - min.y, 12.0f * em)),
                      s.view.colormap, thinTicks(scale.ticks, std::min(max.y - min.y, 12.0f * em), lineH));

    // Hover: the cell's five most likely tokens, the target's probability and rank; click: select.
    ImGui::SetCursorScreenPos(min);
    ImGui::InvisibleButton("##logit lens", ImVec2(std::max(1.0f, max.x - min.x), std::max(1.0f, max.y - min.y)));
    if (ImGui::IsItemHovered()) {
        const ImVec2 m = ImGui::GetIO().MousePos;
        const int l = std::clamp(static_cast<int>((m.y - min.y) / cellH), 0, lens.layers - 1);
        const auto p = std::clamp<Eigen::Index>(static_cast<Eigen::Index>((m.x - min.x) / cellW), 0, lens.positions - 1);
        const Eigen::Index position = lens.first + p;
        std::string text = layerName(l) + " · position " + std::to_string(position + 1) + " " +
                           (static_cast<std::size_t>(position) < tokens.size() ? tokens[static_cast<std::size_t>(position)] : "") + "\n";
        for (int j = 0; j < lens.k; ++j) {
            const std::size_t at = lens.at(l, p) * static_cast<std::size_t>(lens.k) + static_cast<std::size_t>(j);
            text += "\n" + std::to_string(j + 1) + ". " + view->value.topLabels[at] + "  " +
                    core::formatFixed(lens.top[at].prob * 100.0, 1) + " %";
        }
        if (lens.targets[static_cast<std::size_t>(p)] >= 0)
            text += "\n\n" + std::string(lensTargetName(view->value.target)) + " " + view->value.targetLabels[static_cast<std::size_t>(p)] +
                    ": " + core::formatFixed(lens.targetProb[lens.at(l, p)] * 100.0, 2) + " %, rank " +
                    std::to_string(lens.targetRank[lens.at(l, p)]);
        text += "\nclick to select this position" + std::string(l > 0 ? " and layer" : "");
        widgets::showTooltip(text);
        if (ImGui::IsItemClicked()) {
            ctx.actions.emit(action::SelectQuery{static_cast<int>(position)});
            if (l > 0) ctx.actions.emit(action::SelectLayer{l - 1});
        }
    }
    ImGui::End();
}

}  // namespace attnviz::app
