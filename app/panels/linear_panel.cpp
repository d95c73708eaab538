#include "app/panels/linear_panel.hpp"

#include "app/gfx/heatmap_renderer.hpp"
#include "app/gfx/texture_cache.hpp"
#include "app/widgets/charts.hpp"
#include "app/widgets/text.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>

namespace attnviz::app {

void LinearPanel::draw(PanelContext& ctx) {
    const AppState& s = ctx.state;
    const int head = std::max(0, s.view.selectedHead);
    if (!beginPanelFor(ctx, title(), head, true)) return;
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
    const LinearMaps& d = *maps;
    const core::HeadTensors& t = s.forward.heads[static_cast<std::size_t>(head)];
    const int steps = d.steps;
    const std::string h = std::to_string(head + 1);
    const std::uint64_t version = s.headVersions[static_cast<std::size_t>(head)] * 2 + (s.settings.causal ? 1 : 0);

    ImGui::TextWrapped(
        "φ(x) = elu(x) + 1 replaces exp: A[i, j] ∝ φ(q_i)·φ(k_j). Read token by token it is a fast-weight "
        "programmer (Schmidhuber 1991): S_t = S_t−1 + φ(k_t) v_tᵀ, y_t = φ(q_t)ᵀS_t / φ(q_t)ᵀz_t.");
    ImGui::Text("Head %s: recurrent and parallel (causal) forms agree: max |Δ| = %.2g", h.c_str(), static_cast<double>(d.recurrentDiff));

    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const float caption = ImGui::GetTextLineHeightWithSpacing();
    const float side = std::max(40.0f, std::min(avail.x / 4.0f - 12.0f, avail.y - 2.0f * caption - 8.0f));
    // m drawn in a box `box` on a side, keeping its aspect, colours lo … hi; its texture is
    // cached under key + head at `texVersion` (weights with the mask marked, or plain values).
    const auto matrix = [&](const std::string& key, std::uint64_t texVersion, const core::Mat& m, bool weights, int maxSide, float box,
                            float lo, float hi) {
        const gfx::HeatmapTexture& tex = ctx.textures.get(
            key + h, gfx::TextureStamp{texVersion}, {s.view.colormap, lo, hi},
            [&] { return weights ? gfx::texelsOf(m, s.settings) : gfx::texelsOf(m); }, maxSide);
        const ImVec2 p = ImGui::GetCursorScreenPos();
        const float rows = static_cast<float>(std::max<Eigen::Index>(1, m.rows())),
                    cols = static_cast<float>(std::max<Eigen::Index>(1, m.cols()));
        const float w = box * std::min(1.0f, cols / rows), hgt = box * std::min(1.0f, rows / cols);
        ctx.heatmaps.draw(ImGui::GetWindowDrawList(), tex, p, ImVec2(p.x + w, p.y + hgt), ImVec2(0, 0), ImVec2(1, 1));
        ImGui::Dummy(ImVec2(side, box));
    };
    // 1. the two maps on the same q, k: softmax is sharper, φ = elu + 1 spreads weight wider
    for (const auto& [key, label, m] :
         {std::tuple{"linear:softmax:", "softmax (exp)", &t.weights}, std::tuple{"linear:map:", "linear (elu + 1)", &d.linear.weights}}) {
        ImGui::BeginGroup();
        ImGui::TextUnformatted(label);
        matrix(key, version, *m, true, 256, side, 0.0f, 1.0f);
        ImGui::EndGroup();
        ImGui::SameLine(0.0f, 12.0f);
    }

    // 2. the fast-weight matrix after `steps` tokens, [d_k, d_v]
    ImGui::BeginGroup();
    int slider = steps;
    ImGui::SetNextItemWidth(side);
    if (ImGui::SliderInt("##steps", &slider, 0, static_cast<int>(T), "S_t after %d tokens"))
        ctx.actions.emit(action::SetFastWeightSteps{slider >= T ? -1 : slider});
    matrix("linear:fast:", version * 65536 + static_cast<std::uint64_t>(steps), d.fast, false, 0,
           side - caption,  // room for the line under it
           -d.fastRange, d.fastRange);
    ImGui::TextDisabled("%lld x %lld, colours ±%.2g", static_cast<long long>(d.fast.rows()), static_cast<long long>(d.fast.cols()),
                        static_cast<double>(d.fastRange));
    ImGui::EndGroup();
    ImGui::SameLine(0.0f, 12.0f);

    // 3. one Hopfield step: probe = the selected query, stored patterns = the keys, β = 1/√d_k
    ImGui::BeginGroup();
    const int query = d.query;
    const core::HopfieldStep& step = d.hopfield;
    ImGui::Text("Hopfield step, probe q_%d, β = 1/√%d", query + 1, s.model.dk);
    if (d.hopfieldDiff) {
        ImGui::TextDisabled("= attention row %d: max |Δ| = %.2g", query + 1, static_cast<double>(*d.hopfieldDiff));
    } else {
        ImGui::TextDisabled("(equals row %d of attention at τ = 1, scaled, no mask)", query + 1);
    }
    Eigen::Index strongest = 0;
    step.weights.maxCoeff(&strongest);
    ImGui::TextDisabled("recalls key %lld \"%s\" most (%.3f)", static_cast<long long>(strongest + 1),
                        widgets::fitLabel(s.keyLabels[static_cast<std::size_t>(strongest)], ImGui::GetFontSize() * 8.0f).c_str(),
                        static_cast<double>(step.weights(strongest)));
    std::vector<float> values(step.weights.data(), step.weights.data() + step.weights.size());
    const ImVec2 b = ImGui::GetCursorScreenPos();
    const ImVec2 size(std::max(60.0f, ImGui::GetContentRegionAvail().x - 4.0f), side - 2.0f * caption);
    widgets::BarChartStyle style;
    style.showValues = T <= 12;
    style.showLabels = T <= 24;
    widgets::barChart(ImGui::GetWindowDrawList(), b, ImVec2(b.x + size.x, b.y + size.y), values, s.keyLabels, query,
                      std::vector<bool>(values.size(), false), style);
    ImGui::Dummy(size);
    ImGui::EndGroup();
    ImGui::End();
}

}  // namespace attnviz::app
