#include "app/panels/swap_panel.hpp"

#include "app/gfx/heatmap_renderer.hpp"
#include "app/gfx/texture_cache.hpp"
#include "app/state/source.hpp"
#include "app/widgets/charts.hpp"
#include "app/widgets/text.hpp"
#include "core/attention/permutation.hpp"
#include "core/base/format.hpp"
#include "core/scenario/presets.hpp"
#include "core/text/tokenizer.hpp"

#include <algorithm>
#include <cstdio>
#include <functional>

namespace attnviz::app {

std::string verdictText(const AppState& s) {
    if (!s.swapped()) return "identity order: swap two chips to test";
    char buf[160];
    const float d = s.equivariance.outputDiff;
    if (!s.equivariance.holds())
        std::snprintf(buf, sizeof buf, "outputs do not match the permutation: ‖Y′ − P·Y‖ = %.2g", static_cast<double>(d));
    else if (d == 0.0f) std::snprintf(buf, sizeof buf, "outputs match the permutation: ‖Y′ − P·Y‖ = 0 exactly");
    else
        std::snprintf(buf, sizeof buf, "outputs match the permutation: ‖Y′ − P·Y‖ = 0 up to float rounding (%.2g)", static_cast<double>(d));
    return buf;
}

std::string verdictReason(const AppState& s) {
    if (!s.swapped() || s.equivariance.holds()) return "";
    std::string why;
    if (s.settings.causal)
        why +=
            "The causal mask depends on position: after the swap a token may read another set of keys (those before its new place), "
            "so A′ is not P A Pᵀ. ";
    if (capabilities(s).ownPass)
        why += "The model adds learned position embeddings to X: a moved token carries the position signal of its new place. ";
    else if (s.scenario.positional == core::Positional::Sinusoidal)
        why += "Positional encodings are added to X by position: a moved token carries the signal of its new place. ";
    else if (s.scenario.positional == core::Positional::Rope)
        why += "RoPE turns q and k by their positions: a moved token is turned by its new place, so its distances to the others change. ";
    else if (s.scenario.positional == core::Positional::Alibi)
        why += "ALiBi penalises each score by the distance |i − j|: a moved token is at other distances from the rest. ";
    if (s.settings.window > 0) why += "The sliding window depends on position: after the swap a token reads the keys near its new place. ";
    if (!why.empty()) why.pop_back();
    return why;
}

namespace {

// The first 40 tokens, each cut to 16 glyphs, on one line fitted to the panel (the whole in a
// tooltip): the line is bounded whatever the tokens.
void orderLine(const char* caption, const std::vector<std::string>& tokens) {
    std::string line = "[";
    for (std::size_t i = 0; i < tokens.size() && i < 40; ++i) line += (i ? ", " : "") + widgets::clipText(tokens[i], 16, false).text;
    if (tokens.size() > 40) line += ", …";
    line += "]";
    ImGui::TextDisabled("%s", caption);
    ImGui::SameLine();
    const std::string fitted = widgets::fitLabel(line, ImGui::GetContentRegionAvail().x, widgets::kTooltipGlyphs);
    ImGui::TextUnformatted(fitted.c_str());
    if (fitted != line) widgets::hoverTooltip(line);
}

}  // namespace

// P·Y (the original order's outputs, reordered as the tokens were) beside Y′ (the outputs on the
// swapped input), rows labelled by the swapped tokens, on one two-sided scale; then |Y′ − P·Y|
// on a scale of its own, which says whether it is float rounding.
void SwapPanel::drawOutputs(PanelContext& ctx) {
    const AppState& s = ctx.state;
    if (!s.swapped() || !isFresh(s)) return;  // the reference pass exists only for a swapped, computed state
    const core::Mat py = core::permuteRows(referenceForward(s).output, s.model.perm);
    const core::Mat& y = s.forward.output;
    const core::Mat diff = (y - py).cwiseAbs();
    const float range = std::max({py.cwiseAbs().maxCoeff(), y.cwiseAbs().maxCoeff(), 1e-30f});
    const float worst = diff.maxCoeff();
    const float em = ImGui::GetFontSize(), gap = em * 0.6f;
    float labelW = 0.0f;
    for (std::size_t i = 0; i < s.queryLabels.size() && i < 256; ++i)
        labelW = std::max(labelW, ImGui::CalcTextSize(widgets::clipLabel(s.queryLabels[i]).c_str()).x);
    labelW = std::min(labelW, 4.0f * em) + 0.6f * em;
    const ImVec2 area = ImGui::GetContentRegionAvail();
    const float top = ImGui::GetTextLineHeightWithSpacing();
    const float below = ImGui::GetTextLineHeightWithSpacing();
    const float rows = static_cast<float>(std::max<Eigen::Index>(1, y.rows())),
                cols = static_cast<float>(std::max<Eigen::Index>(1, y.cols()));
    // three maps of T × d_model side by side, each as large as the width and height allow
    const float room = area.y - top - below - 4.0f;
    // rows a line tall when there is room (cells need not be square), else thinned labels with
    // their positions
    if (std::min(room, std::max(room * 0.5f, rows * ImGui::GetTextLineHeight())) / rows < ImGui::GetTextLineHeight())
        labelW += ImGui::CalcTextSize((std::to_string(y.rows()) + " ").c_str()).x;
    const float w = std::max(em, (area.x - labelW - 2.0f * gap - 4.0f) / 3.0f);
    const float h = std::max(em, std::min(std::max(w * rows / cols, rows * ImGui::GetTextLineHeight() * 1.1f), room));
    const ImVec2 o = ImGui::GetCursorScreenPos();
    ImDrawList* list = ImGui::GetWindowDrawList();
    const std::uint64_t version = s.dataVersion;
    struct Map {
        const char* key;
        const char* caption;
        const core::Mat* m;
        gfx::Colouring colouring;
    };
    const Map maps[] = {{"swap:py", "P·Y", &py, {core::ColormapKind::Diverging, -range, range}},
                        {"swap:y", "Y′", &y, {core::ColormapKind::Diverging, -range, range}},
                        {"swap:diff", "|Y′ − P·Y|", &diff, {s.view.colormap, 0.0f, std::max(worst, 1e-30f)}}};
    float x = o.x + labelW;
    for (const Map& m : maps) {
        list->AddText(ImVec2(x, o.y), ImGui::GetColorU32(ImGuiCol_Text), widgets::fitLabel(m.caption, w).c_str());
        const gfx::HeatmapTexture& tex = ctx.textures.get(
            m.key, gfx::TextureStamp{version}, m.colouring, [&] { return gfx::texelsOf(*m.m); }, 256);
        const ImVec2 mMin(x, o.y + top), mMax(x + w, o.y + top + h);
        ctx.heatmaps.draw(list, tex, mMin, mMax, ImVec2(0, 0), ImVec2(1, 1));
        if (x == o.x + labelW) widgets::matrixLabels(list, mMin, mMax, s.queryLabels, {}, labelW);
        x += w + gap;
    }
    ImGui::Dummy(ImVec2(area.x - 4.0f, top + h));
    char caption[160];
    std::snprintf(caption, sizeof caption, "rows: tokens; colours ±%.2g (blue < 0 < red); difference 0 … %.2g%s",
                  static_cast<double>(range), static_cast<double>(worst),
                  worst == 0.0f            ? " (none)"
                  : s.equivariance.holds() ? " (float rounding)"
                                           : "");
    const std::string shown = widgets::fitLabel(caption, area.x, widgets::kTooltipGlyphs);
    ImGui::TextDisabled("%s", shown.c_str());
    if (shown != caption) widgets::hoverTooltip(caption);
}

void SwapPanel::draw(PanelContext& ctx) {
    const AppState& s = ctx.state;
    if (!beginPanel(ctx, title())) return;
    if (noModelNote(ctx, "swapping tokens needs a model to run again on the new order")) return;
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
    // At most three rows of chips (the rest are counted); a long sentence is swapped with --swap
    // or in a scenario file.
    const float chipW = std::min(ImGui::GetFontSize() * 12.0f, ImGui::GetContentRegionAvail().x - ImGui::GetStyle().FramePadding.x * 2.0f);
    const float firstRow = ImGui::GetCursorPosY();
    const float rowH = ImGui::GetFrameHeightWithSpacing();
    int shown = 0;
    for (int p = 0; p < std::min(n, 256); ++p) {
        const std::string& token = s.queryLabels[static_cast<std::size_t>(p)];
        const std::string chip = widgets::fitLabel(token, chipW);
        if (p > 0) {
            widgets::sameLineIfFits(ImGui::CalcTextSize(chip.c_str()).x + ImGui::GetStyle().FramePadding.x * 2.0f);
            if (ImGui::GetCursorPosY() >= firstRow + 2.5f * rowH) break;  // a fourth row
        }
        ++shown;
        const bool pending = s.view.pendingSwap == p;
        const bool moved = s.model.perm[static_cast<std::size_t>(p)] != p;
        if (pending) ImGui::PushStyleColor(ImGuiCol_Button, ImVec4(0.94f, 0.27f, 0.27f, 1.0f));
        else if (moved) ImGui::PushStyleColor(ImGuiCol_Button, ImVec4(0.85f, 0.55f, 0.10f, 0.9f));
        if (widgets::button(chip, "chip" + std::to_string(p))) ctx.actions.emit(action::PickSwapChip{p});
        if (pending || moved) ImGui::PopStyleColor();
        if (chip.ends_with("…")) widgets::hoverTooltip(token);
    }
    if (n > shown) {
        if (shown > 0 && ImGui::GetCursorPosX() > ImGui::GetStyle().WindowPadding.x + 1.0f) ImGui::NewLine();
        ImGui::TextDisabled("(%d more tokens)", n - shown);
    }

    const ImGuiStyle& style = ImGui::GetStyle();
    if (ImGui::Button("Reset order")) ctx.actions.emit(action::ResetSwaps{});
    widgets::sameLineIfFits(ImGui::CalcTextSize("Shuffle").x + style.FramePadding.x * 2.0f);
    if (ImGui::Button("Shuffle")) ctx.actions.emit(action::Shuffle{static_cast<std::uint64_t>(ImGui::GetFrameCount()) + 1});
    if (!s.model.explicitQkv && !capabilities(s).ownPass) {  // a model's positions are its own (learned, in X already)
        widgets::sameLineIfFits(ImGui::GetFrameHeight() + style.ItemInnerSpacing.x + ImGui::CalcTextSize("positional encoding").x);
        // On: whatever positions the scenario has (sinusoidal when it had none); off: none.
        bool pe = s.scenario.positional != core::Positional::None;
        if (ImGui::Checkbox("positional encoding", &pe))
            ctx.actions.emit(action::SetPositional{pe ? core::Positional::Sinusoidal : core::Positional::None});
        tooltip(
            "Adds sinusoidal position signals to X (RoPE and ALiBi, chosen under Controls, count as on here). On: the model can tell "
            "orders apart, so the verdict flips.");
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
        std::snprintf(buf, sizeof buf, "weights: max |A′ − P A Pᵀ| = %.2g over %d head%s",
                      static_cast<double>(s.equivariance.maxWeightDiff()), s.model.heads, s.model.heads > 1 ? "s" : "");
        widgets::wrappedTextColored(ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled), buf);
        const std::string why = verdictReason(s);
        if (!why.empty() && ImGui::GetContentRegionAvail().y >= 2.0f * ImGui::GetTextLineHeightWithSpacing()) {
            // in words, cut to what the panel leaves (whole on hover)
            const float room = std::max(ImGui::GetTextLineHeight(), ImGui::GetContentRegionAvail().y * 0.3f);
            const std::string shownWhy = widgets::fitWrapped(why, ImGui::GetContentRegionAvail().x, room);
            ImGui::PushTextWrapPos(0.0f);
            ImGui::TextUnformatted(shownWhy.c_str());
            ImGui::PopTextWrapPos();
            if (shownWhy != why) widgets::hoverTooltip(why);
        }
    }

    // Before and after, side by side: P A Pᵀ from the original order, and A′ on the swapped input
    // (the selected head, or the mean over heads); then the outputs P·Y and Y′ with their
    // difference, one tab each when the tokens have been swapped.
    const int head = s.view.selectedHead;
    const std::string which = head < 0 ? "mean" : std::to_string(head);
    // The maps first; the anagram shortcuts below them when there is room left for their rows
    // (they are in Presets too).
    const float anagramsH = ImGui::GetTextLineHeightWithSpacing() + 2.0f * ImGui::GetFrameHeightWithSpacing();
    const auto weightsOf = [&](const core::Forward& f) {
        return head < 0 ? core::meanWeights(f) : core::Mat(f.heads[static_cast<std::size_t>(head)].weights);
    };
    const float captionH = 2.0f * ImGui::GetTextLineHeightWithSpacing();
    const bool outputs =
        s.swapped() && isFresh(s) &&
        ImGui::GetContentRegionAvail().y >= ImGui::GetFrameHeightWithSpacing() + captionH + 2.0f * ImGui::GetTextLineHeight();
    bool showOutputs = false;
    if (outputs && ImGui::BeginTabBar("swap maps")) {
        if (ImGui::BeginTabItem(head < 0 ? "Weights (mean)" : "Weights")) ImGui::EndTabItem();
        if (ImGui::BeginTabItem("Outputs Y")) showOutputs = true, ImGui::EndTabItem();
        ImGui::EndTabBar();
    }
    if (!showOutputs) {
        const float side =
            std::min(ImGui::GetContentRegionAvail().x * 0.5f - 16.0f,
                     ImGui::GetContentRegionAvail().y - ImGui::GetTextLineHeightWithSpacing() - ImGui::GetStyle().ItemSpacing.y);
        // The reference's weights reordered (P A Pᵀ) carry the reference's mask reordered the same way.
        const auto matrix = [&](const std::string& key, const std::string& caption, const char* meaning,
                                const std::function<core::Mat()>& make, bool reordered) {
            ImGui::BeginGroup();
            ImGui::TextUnformatted(widgets::fitLabel(caption, side).c_str());
            widgets::hoverTooltip(meaning);
            const gfx::HeatmapTexture& tex = ctx.textures.get(
                key, gfx::TextureStamp{s.dataVersion}, weightColouring(s),  // the view's colour scale: readable at long T
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
        const std::string of = head < 0 ? " (mean of " + std::to_string(s.model.heads) + (s.model.heads == 1 ? " head)" : " heads)") : "";
        if (isFresh(s) && (head < 0 || headFresh(s, head)) && side >= 2.0f * ImGui::GetTextLineHeight()) {
            matrix(
                "swap:before:" + which, "P A Pᵀ" + of, "P A Pᵀ: the original order's weights, reordered as the tokens were",
                [&] { return core::permuteBoth(weightsOf(referenceForward(s)), s.model.perm); }, true);
            ImGui::SameLine(0.0f, 16.0f);
            matrix(
                "swap:after:" + which, "A′" + of,
                "A′: the weights computed on the swapped input; equal to P A Pᵀ when attention is permutation-equivariant",
                [&] { return weightsOf(s.forward); }, false);
        }
    } else {
        drawOutputs(ctx);
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
