#include "app/panels/swap_panel.hpp"

#include "app/gfx/texture_cache.hpp"
#include "app/widgets/text.hpp"
#include "core/attention/permutation.hpp"
#include "core/base/format.hpp"
#include "core/scenario/presets.hpp"
#include "core/text/tokenizer.hpp"

#include <cstdio>
#include <functional>

namespace attnviz::app {

std::string verdictText(const AppState& s) {
    if (!s.swapped()) return "identity order: swap two chips to test";
    char buf[160];
    const float d = s.equivariance.outputDiff;
    std::snprintf(buf, sizeof buf, "outputs %s permutation: ‖Y′ − P·Y‖ = %.2g", s.equivariance.holds() ? "match" : "do not match", d);
    return buf;
}

namespace {

// The first 40 tokens, each cut to 16 glyphs, on one line fitted to the panel (the whole in a
// tooltip): the line is bounded whatever the tokens.
void orderLine(const char* caption, const std::vector<std::string>& tokens) {
    std::string line = "[";
    for (std::size_t i = 0; i < tokens.size() && i < 40; ++i) line += (i ? ", " : "") + widgets::clipLabel(tokens[i], 16);
    if (tokens.size() > 40) line += ", …";
    line += "]";
    ImGui::TextDisabled("%s", caption);
    ImGui::SameLine();
    const std::string fitted = widgets::fitLabel(line, ImGui::GetContentRegionAvail().x, widgets::kTooltipGlyphs);
    ImGui::TextUnformatted(fitted.c_str());
    if (fitted != line) widgets::hoverTooltip(line);
}

}  // namespace

void SwapPanel::draw(PanelContext& ctx) {
    const AppState& s = ctx.state;
    if (!beginPanel(ctx, title())) return;
    const int n = static_cast<int>(s.model.tq());
    const bool selfAttention = !s.model.explicitQkv || s.model.tq() == s.model.tk();
    if (!selfAttention) {
        ImGui::TextWrapped("This scenario is cross-attention (%d queries, %d keys): swapping positions needs one sequence.", n,
                           static_cast<int>(s.model.tk()));
        ImGui::End();
        return;
    }
    // A short panel (a tab on a small screen) leaves out the hint and prints the verdict in the
    // regular font.
    const bool roomy = ImGui::GetContentRegionAvail().y >= 14.0f * ImGui::GetTextLineHeightWithSpacing();
    if (roomy) widgets::flowTextDisabled("Click two chips to swap their tokens.", true);
    // Chips: the current order; the first clicked chip is highlighted until the second click.
    // A chip is at most 12 ems (or the panel) wide; its tooltip quotes the whole token.
    const int shown = std::min(n, 64);
    const float chipW = std::min(ImGui::GetFontSize() * 12.0f, ImGui::GetContentRegionAvail().x - ImGui::GetStyle().FramePadding.x * 2.0f);
    for (int p = 0; p < shown; ++p) {
        const std::string& token = s.queryLabels[static_cast<std::size_t>(p)];
        const std::string chip = widgets::fitLabel(token, chipW);
        if (p > 0) widgets::sameLineIfFits(ImGui::CalcTextSize(chip.c_str()).x + ImGui::GetStyle().FramePadding.x * 2.0f);
        const bool pending = s.view.pendingSwap == p;
        const bool moved = s.model.perm[static_cast<std::size_t>(p)] != p;
        if (pending) ImGui::PushStyleColor(ImGuiCol_Button, ImVec4(0.94f, 0.27f, 0.27f, 1.0f));
        else if (moved) ImGui::PushStyleColor(ImGuiCol_Button, ImVec4(0.85f, 0.55f, 0.10f, 0.9f));
        if (widgets::button(chip, "chip" + std::to_string(p))) ctx.actions.emit(action::PickSwapChip{p});
        if (pending || moved) ImGui::PopStyleColor();
        if (chip.ends_with("…")) widgets::hoverTooltip(token);
    }
    if (n > shown) ImGui::TextDisabled("(%d more tokens)", n - shown);

    const ImGuiStyle& style = ImGui::GetStyle();
    if (ImGui::Button("Reset order")) ctx.actions.emit(action::ResetSwaps{});
    widgets::sameLineIfFits(ImGui::CalcTextSize("Shuffle").x + style.FramePadding.x * 2.0f);
    if (ImGui::Button("Shuffle")) ctx.actions.emit(action::Shuffle{static_cast<std::uint64_t>(ImGui::GetFrameCount()) + 1});
    if (!s.model.explicitQkv && !s.loaded) {  // a model's positions are its own (learned, in X already)
        widgets::sameLineIfFits(ImGui::GetFrameHeight() + style.ItemInnerSpacing.x + ImGui::CalcTextSize("positional encoding").x);
        bool pe = s.scenario.positional == core::Positional::Sinusoidal;
        if (ImGui::Checkbox("positional encoding", &pe))
            ctx.actions.emit(action::SetPositional{pe ? core::Positional::Sinusoidal : core::Positional::None});
        tooltip("Adds sinusoidal position signals to X. On: the model can tell orders apart, so the verdict flips.");
    }

    // The chips show the current order; the original one when it differs.
    if (s.swapped()) {
        std::vector<std::string> original;
        for (const auto& t : referenceModel(s).queryTokens) original.push_back(core::visibleToken(t));
        orderLine("original order", original);
    }
    const bool holds = s.equivariance.holds();
    const ImVec4 colour = !s.swapped() ? ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled)
                          : holds      ? ImVec4(0.20f, 0.75f, 0.35f, 1.0f)
                                       : ImVec4(0.95f, 0.35f, 0.25f, 1.0f);
    const bool large = roomy && ctx.fonts.large;
    if (large) ImGui::PushFont(ctx.fonts.large);
    ImGui::PushTextWrapPos(0.0f);  // wrap at the panel's edge: the verdict must be read whole
    ImGui::TextColored(colour, "%s", verdictText(s).c_str());
    ImGui::PopTextWrapPos();
    if (large) ImGui::PopFont();
    if (s.swapped()) {
        char buf[96];
        std::snprintf(buf, sizeof buf, "weights: max |A′ − P A Pᵀ| = %.2g over %d head%s", s.equivariance.maxWeightDiff(), s.model.heads,
                      s.model.heads > 1 ? "s" : "");
        widgets::wrappedTextColored(ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled), buf);
    }

    // Before and after, side by side: P A Pᵀ from the original order, and A′ on the swapped input.
    const int head = std::max(0, s.view.selectedHead);
    // The maps first; the anagram shortcuts below them when there is room left for their rows
    // (they are in Presets too).
    const float anagramsH = ImGui::GetTextLineHeightWithSpacing() + 2.0f * ImGui::GetFrameHeightWithSpacing();
    const float side = std::min(ImGui::GetContentRegionAvail().x * 0.5f - 16.0f,
                                ImGui::GetContentRegionAvail().y - 2.0f * ImGui::GetTextLineHeightWithSpacing());
    // The reference's weights reordered (P A Pᵀ) carry the reference's mask reordered the same way.
    const auto matrix = [&](const std::string& key, const char* caption, const char* meaning, const std::function<core::Mat()>& make,
                            bool reordered) {
        ImGui::BeginGroup();
        ImGui::TextUnformatted(widgets::fitLabel(caption, side).c_str());
        widgets::hoverTooltip(meaning);
        const gfx::HeatmapTexture& tex = ctx.textures.get(
            key, gfx::TextureStamp{s.dataVersion}, {s.view.colormap},
            [&] {
                const core::Mat m = make();
                gfx::MatrixSource src = gfx::texelsOf(m, s.settings);
                if (reordered && core::hasMask(s.settings))
                    for (int p = 0; p < src.rows; ++p)
                        for (int q = 0; q < src.cols; ++q)
                            src.texels[static_cast<std::size_t>(p) * src.cols + q] =
                                core::isBlocked(s.settings, s.model.perm[static_cast<std::size_t>(p)],
                                                s.model.perm[static_cast<std::size_t>(q)])
                                    ? core::kMaskedTexel
                                    : m(p, q);
                return src;
            },
            256);
        const ImVec2 p = ImGui::GetCursorScreenPos();
        ctx.heatmaps.draw(ImGui::GetWindowDrawList(), tex, p, ImVec2(p.x + side, p.y + side), ImVec2(0, 0), ImVec2(1, 1));
        ImGui::Dummy(ImVec2(side, side));
        ImGui::EndGroup();
    };
    if (isFresh(s) && headFresh(s, head) && side >= 2.0f * ImGui::GetTextLineHeight()) {
        matrix(
            "swap:before:" + std::to_string(head), "P A Pᵀ", "P A Pᵀ: the original order's weights, reordered as the tokens were",
            [&] { return core::permuteBoth(referenceForward(s).heads[static_cast<std::size_t>(head)].weights, s.model.perm); }, true);
        ImGui::SameLine(0.0f, 16.0f);
        matrix(
            "swap:after:" + std::to_string(head), "A′",
            "A′: the weights computed on the swapped input; equal to P A Pᵀ when attention is permutation-equivariant",
            [&] { return s.forward.heads[static_cast<std::size_t>(head)].weights; }, false);
    }
    if (ImGui::GetContentRegionAvail().y >= anagramsH) {
        widgets::flowTextDisabled("Anagrams (seed 000 §39.5.1):", true);
        for (const char* id : {"seed000-anagram-original", "seed000-anagram-swapped", "seed000-anagram-gibberish"}) {
            const core::Scenario& sc = core::findPreset(id)->scenario;  // shipped presets
            const std::string label = widgets::fitLabel(sc.sentence ? *sc.sentence : std::string(id),
                                                        ImGui::GetContentRegionAvail().x - style.FramePadding.x * 2.0f);
            widgets::sameLineIfFits(ImGui::CalcTextSize(label.c_str()).x + style.FramePadding.x * 2.0f);
            if (ImGui::SmallButton(label.c_str())) ctx.actions.emit(action::LoadScenario{sc, id, ""});
        }
    }
    ImGui::End();
}

}  // namespace attnviz::app
