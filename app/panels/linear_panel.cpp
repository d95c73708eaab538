#include "app/panels/linear_panel.hpp"

#include "app/gfx/heatmap_renderer.hpp"
#include "app/gfx/texture_cache.hpp"
#include "app/widgets/charts.hpp"
#include "app/widgets/text.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace attnviz::app {
namespace {

// 12 as "₁₂".
std::string subscript(long long n) {
    static const char* const kDigits[] = {"₀", "₁", "₂", "₃", "₄", "₅", "₆", "₇", "₈", "₉"};
    std::string out;
    for (const char c : std::to_string(n)) out += c == '-' ? "₋" : kDigits[c - '0'];
    return out;
}

std::vector<std::string> positions(Eigen::Index n) {
    std::vector<std::string> out;
    for (Eigen::Index i = 0; i < n; ++i) out.push_back(std::to_string(i + 1));
    return out;
}

// The width a colour bar of `kind` needs beside a map for labels like `widest`.
float colourBarWidth(const char* widest) {
    return 18.0f + ImGui::GetFontSize() * 0.8f + ImGui::CalcTextSize(widest).x + ImGui::GetStyle().ItemSpacing.x;
}

}  // namespace

void LinearPanel::draw(PanelContext& ctx) {
    const AppState& s = ctx.state;
    const int head = std::max(0, s.view.selectedHead);
    if (!beginPanelFor(ctx, title(), head, true)) return;
    if (noModelNote(ctx, "linear attention needs the queries, keys and values")) return;
    const Eigen::Index T = s.model.tq();
    if (!linearInputs(s)) {
        ImGui::TextWrapped("Linear attention is shown for self-attention up to %lld tokens (here %lld queries, %lld keys).",
                           static_cast<long long>(kMaxLinearTokens), static_cast<long long>(T), static_cast<long long>(s.model.tk()));
        ImGui::End();
        return;
    }
    const LinearMaps* maps = linearMaps(s);
    if (!maps) {  // made by the state's next recompute (a frame after a change)
        ImGui::TextDisabled("computing…");
        ImGui::End();
        return;
    }
    const float em = ImGui::GetFontSize(), lineH = ImGui::GetTextLineHeightWithSpacing();
    const float width = ImGui::GetContentRegionAvail().x;
    // The idea in two formulas, cut to three lines where room is short (whole on hover).
    const std::string formula =
        "φ(x) = elu(x) + 1 replaces exp: A[i, j] ∝ φ(qᵢ)·φ(kⱼ). Read token by token it is a fast-weight programmer "
        "(Schmidhuber 1991): Sₜ = Sₜ₋₁ + φ(kₜ) vₜᵀ, yₜ = φ(qₜ)ᵀSₜ / φ(qₜ)ᵀzₜ.";
    const bool roomy = ImGui::GetContentRegionAvail().y > 16.0f * lineH;
    const std::string shown = widgets::fitWrapped(formula, width, (roomy ? 3.0f : 2.0f) * ImGui::GetTextLineHeight() + 1.0f);
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextUnformatted(shown.c_str());
    ImGui::PopTextWrapPos();
    if (shown != formula) widgets::hoverTooltip(formula);
    char agree[96];
    std::snprintf(agree, sizeof agree, "max |Δ| = %.2g", static_cast<double>(maps->recurrentDiff));
    widgets::flowText("Head " + std::to_string(head + 1) + ": recurrent and parallel", true);
    widgets::flowText("(causal) forms agree:");
    widgets::flowText(agree);

    // Three parts side by side when the panel is wide, else one at a time.
    const ImVec2 area = ImGui::GetContentRegionAvail();
    if (area.x >= 50.0f * em && area.y >= 7.0f * lineH) {
        const float gap = ImGui::GetStyle().ItemSpacing.x;
        const float a = std::floor(area.x * 0.42f), b = std::floor(area.x * 0.24f);
        ImGui::BeginChild("maps", ImVec2(a - gap, area.y), false, ImGuiWindowFlags_NoScrollbar);
        drawMaps(ctx, *maps);
        ImGui::EndChild();
        ImGui::SameLine();
        ImGui::BeginChild("fast", ImVec2(b - gap, area.y), false, ImGuiWindowFlags_NoScrollbar);
        drawFastWeights(ctx, *maps);
        ImGui::EndChild();
        ImGui::SameLine();
        ImGui::BeginChild("hopfield", ImVec2(0, area.y), false, ImGuiWindowFlags_NoScrollbar);
        drawHopfield(ctx, *maps);
        ImGui::EndChild();
    } else if (ImGui::BeginTabBar("linear parts")) {
        const auto part = [&](const char* label, const char* id, void (LinearPanel::*drawPart)(PanelContext&, const LinearMaps&)) {
            if (!ImGui::BeginTabItem(label)) return;
            ImGui::BeginChild(id, ImVec2(0, 0), false, ImGuiWindowFlags_NoScrollbar);
            (this->*drawPart)(ctx, *maps);
            ImGui::EndChild();
            ImGui::EndTabItem();
        };
        part("Maps", "maps", &LinearPanel::drawMaps);
        part("Fast weights", "fast", &LinearPanel::drawFastWeights);
        part("Hopfield", "hopfield", &LinearPanel::drawHopfield);
        ImGui::EndTabBar();
    }
    ImGui::End();
}

// Softmax's map beside the linear map on the same q and k, token labels left and above, one
// colour bar (0 … 1) for both: softmax is sharper, φ = elu + 1 spreads weight wider.
void LinearPanel::drawMaps(PanelContext& ctx, const LinearMaps& d) {
    const AppState& s = ctx.state;
    const core::HeadTensors& t = s.forward.heads[static_cast<std::size_t>(d.head)];
    const float em = ImGui::GetFontSize(), lineH = ImGui::GetTextLineHeight(), gap = em;
    const ImVec2 area = ImGui::GetContentRegionAvail();
    const auto T = static_cast<float>(s.queryLabels.size());
    float tokenW = 0.0f;
    for (std::size_t i = 0; i < s.queryLabels.size() && i < 256; ++i)
        tokenW = std::max(tokenW, ImGui::CalcTextSize(widgets::clipLabel(s.queryLabels[i]).c_str()).x);
    tokenW = std::min(tokenW, 5.0f * em);
    const float barW = colourBarWidth("0.00");
    const float top = ImGui::GetTextLineHeightWithSpacing() + lineH + 0.5f * em;  // caption, then column labels
    // Side by side or one above the other, whichever gives the larger maps; rows too thin for a
    // line of text are labelled with their positions ("3 sat"), which takes room too.
    const auto sides = [&](float labelW) {
        const float across = std::min((area.x - labelW - gap - barW - 2.0f) / 2.0f, area.y - top - 0.5f * em);
        const float stacked = std::min(area.x - labelW - barW - 2.0f, (area.y - 2.0f * top - 0.5f * em) / 2.0f);
        return std::pair{across, stacked};
    };
    float labelW = tokenW + 0.6f * em;
    auto [across, stacked] = sides(labelW);
    if (std::max(across, stacked) / T < lineH) {
        labelW += ImGui::CalcTextSize((std::to_string(s.queryLabels.size()) + " ").c_str()).x;
        std::tie(across, stacked) = sides(labelW);
    }
    const bool above = stacked > across;
    const float side = std::floor(std::max(2.0f * em, above ? stacked : across));
    const ImVec2 o = ImGui::GetCursorScreenPos();
    ImDrawList* list = ImGui::GetWindowDrawList();
    const std::uint64_t version = s.headVersions[static_cast<std::size_t>(d.head)] * 2 + (s.settings.causal ? 1 : 0);
    const std::string h = std::to_string(d.head + 1);
    const ImU32 accent = IM_COL32(239, 68, 68, 255);
    ImVec2 at(o.x + labelW, o.y);
    ImVec2 end = at;
    for (const auto& [key, caption, m] :
         {std::tuple{"linear:softmax:", "softmax (exp)", &t.weights}, std::tuple{"linear:map:", "linear (elu + 1)", &d.linear.weights}}) {
        const gfx::HeatmapTexture& tex = ctx.textures.get(
            key + h, gfx::TextureStamp{version}, {s.view.colormap, 0.0f, 1.0f}, [&] { return gfx::texelsOf(*m, s.settings); }, 256);
        const std::string shown = widgets::fitLabel(caption, side + (above ? barW : 0.0f));
        list->AddText(at, ImGui::GetColorU32(ImGuiCol_Text), shown.c_str());
        const ImVec2 mMin(at.x, at.y + top), mMax(at.x + side, at.y + top + side);
        ctx.heatmaps.draw(list, tex, mMin, mMax, ImVec2(0, 0), ImVec2(1, 1));
        const bool first = at.x == o.x + labelW && at.y == o.y;
        widgets::matrixLabels(list, mMin, mMax, first || above ? s.queryLabels : std::vector<std::string>{}, s.keyLabels, labelW, d.query,
                              accent);
        end = mMax;
        if (above) at.y += top + side + 0.5f * em;
        else at.x += side + gap;
    }
    widgets::colorBar(list, ImVec2(end.x + 0.6f * em, end.y - side), ImVec2(end.x + barW, end.y), s.view.colormap, 0.0f, 1.0f,
                      side > 6.0f * lineH ? 5 : 2);
    ImGui::Dummy(ImVec2(std::min(area.x, end.x + barW - o.x), end.y - o.y));
}

// The fast-weight matrix S after the first t tokens, [d_k, d_v], on a two-sided colour scale:
// blue below 0, white at 0, red above.
void LinearPanel::drawFastWeights(PanelContext& ctx, const LinearMaps& d) {
    const AppState& s = ctx.state;
    const float em = ImGui::GetFontSize();
    const Eigen::Index T = s.model.tq();
    int slider = d.steps;
    ImGui::SetNextItemWidth(ImGui::GetContentRegionAvail().x);
    const std::string format = "Sₜ after t = %d tokens";
    if (ImGui::SliderInt("##steps", &slider, 0, static_cast<int>(T), format.c_str()))
        ctx.actions.emit(action::SetFastWeightSteps{slider >= T ? -1 : slider});
    char range[48];
    std::snprintf(range, sizeof range, "±%.2g", static_cast<double>(d.fastRange));
    const std::string caption = std::to_string(d.fast.rows()) + " × " + std::to_string(d.fast.cols()) + " (dₖ × dᵥ), blue < 0 < red";
    const ImVec2 area = ImGui::GetContentRegionAvail();
    const float lineH = ImGui::GetTextLineHeight(), labelW = ImGui::CalcTextSize("00").x + 0.6f * em;
    const float barW = colourBarWidth("-0.00");
    const float top = lineH + 0.5f * em, below = ImGui::GetTextLineHeightWithSpacing() + ImGui::GetStyle().ItemSpacing.y;
    const float box = std::floor(std::max(2.0f * em, std::min(area.x - labelW - barW - 2.0f, area.y - top - below - 2.0f)));
    const float rows = static_cast<float>(std::max<Eigen::Index>(1, d.fast.rows())),
                cols = static_cast<float>(std::max<Eigen::Index>(1, d.fast.cols()));
    const float w = box * std::min(1.0f, cols / rows), hgt = box * std::min(1.0f, rows / cols);
    const std::string h = std::to_string(d.head + 1);
    const std::uint64_t version =
        (s.headVersions[static_cast<std::size_t>(d.head)] * 2 + (s.settings.causal ? 1 : 0)) * 65536 + static_cast<std::uint64_t>(d.steps);
    const gfx::HeatmapTexture& tex =
        ctx.textures.get("linear:fast:" + h, gfx::TextureStamp{version}, {core::ColormapKind::Diverging, -d.fastRange, d.fastRange},
                         [&] { return gfx::texelsOf(d.fast); });
    const ImVec2 o = ImGui::GetCursorScreenPos();
    ImDrawList* list = ImGui::GetWindowDrawList();
    const ImVec2 mMin(o.x + labelW, o.y + top), mMax(mMin.x + w, mMin.y + hgt);
    ctx.heatmaps.draw(list, tex, mMin, mMax, ImVec2(0, 0), ImVec2(1, 1));
    widgets::matrixLabels(list, mMin, mMax, positions(d.fast.rows()), positions(d.fast.cols()), labelW);
    widgets::colorBar(list, ImVec2(mMax.x + 0.6f * em, mMin.y), ImVec2(mMax.x + barW, mMax.y), core::ColormapKind::Diverging, -d.fastRange,
                      d.fastRange, hgt > 6.0f * lineH ? 5 : 3);
    ImGui::Dummy(ImVec2(std::min(area.x, labelW + w + barW), top + hgt));
    widgets::flowTextDisabled(caption, true);
    if (ImGui::IsItemHovered()) widgets::showTooltip(caption + ", colours " + range);
}

// One Hopfield step: probe = the selected query, stored patterns = the keys, β = 1/√d_k.
void LinearPanel::drawHopfield(PanelContext& ctx, const LinearMaps& d) {
    const AppState& s = ctx.state;
    const Eigen::Index T = s.model.tq();
    const core::HopfieldStep& step = d.hopfield;
    const std::string row = std::to_string(d.query + 1);
    widgets::flowText("Hopfield step, probe q" + subscript(d.query + 1) + ",", true);
    widgets::flowText("β = 1/√" + std::to_string(s.model.dk));
    char diff[64];
    if (d.hopfieldDiff) {
        std::snprintf(diff, sizeof diff, "max |Δ| = %.2g", static_cast<double>(*d.hopfieldDiff));
        widgets::flowTextDisabled("= attention row " + row + ":", true);
        widgets::flowTextDisabled(diff);
    } else {
        widgets::flowTextDisabled("(equals row " + row + " of attention at τ = 1, scaled, no mask)", true);
    }
    Eigen::Index strongest = 0;
    step.weights.maxCoeff(&strongest);
    char most[32];
    std::snprintf(most, sizeof most, "most (%.3f)", static_cast<double>(step.weights(strongest)));
    widgets::flowTextDisabled("recalls key " + std::to_string(strongest + 1) + " \"" +
                                  widgets::fitLogical(s.keyLabels[static_cast<std::size_t>(strongest)], ImGui::GetFontSize() * 8.0f) + "\"",
                              true);
    widgets::flowTextDisabled(most);
    const std::vector<float> values(step.weights.data(), step.weights.data() + step.weights.size());
    const ImVec2 b = ImGui::GetCursorScreenPos();
    const ImVec2 size(std::max(60.0f, ImGui::GetContentRegionAvail().x - 4.0f),
                      std::max(2.0f * ImGui::GetTextLineHeight(), ImGui::GetContentRegionAvail().y - 2.0f));
    widgets::BarChartStyle style;
    style.showValues = T <= 12;
    style.showLabels = T <= 24;
    widgets::barChart(ImGui::GetWindowDrawList(), b, ImVec2(b.x + size.x, b.y + size.y), values, s.keyLabels, d.query,
                      std::vector<bool>(values.size(), false), style);
    ImGui::Dummy(size);
}

}  // namespace attnviz::app
