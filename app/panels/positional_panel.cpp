#include "app/panels/positional_panel.hpp"

#include "app/gfx/texture_cache.hpp"
#include "app/widgets/charts.hpp"
#include "app/widgets/text.hpp"
#include "core/scenario/embedding.hpp"

#include <algorithm>
#include <cstdio>

namespace attnviz::app {

namespace {

// A model's learned positions: wpe's rows for the sentence's T positions, on a range symmetric
// about 0 from their largest magnitude.
void learnedPositions(PanelContext& ctx) {
    const AppState& s = ctx.state;
    const auto wpe = s.loaded.checkpoint->wpe().map();
    const auto T = static_cast<int>(s.model.tq()), d = static_cast<int>(wpe.cols());
    const core::Mat rows = wpe.topRows(T);
    const float range = std::max(rows.cwiseAbs().maxCoeff(), 1e-6f);
    ImGui::TextWrapped(
        "%s learns its positions: row p of wpe is added to the embedding of the token at position p, before layer 1. "
        "Layer %d sees them only through the residual stream.",
        s.loaded.checkpoint->name().c_str(), s.scenario.layer + 1);
    ImGui::TextDisabled("wpe, positions 0 … %d × %d dims, %.3g … %.3g", T - 1, d, -range, range);
    const gfx::HeatmapTexture& tex = ctx.textures.get(
        "wpe", gfx::TextureStamp{.data = reinterpret_cast<std::uintptr_t>(s.loaded.checkpoint.get()), .rows = T, .cols = d},
        {s.view.colormap, -range, range}, [&] { return gfx::texelsOf(rows); }, 512);
    const ImVec2 q = ImGui::GetCursorScreenPos(), rest = ImGui::GetContentRegionAvail();
    const float w = rest.x, h = std::max(20.0f, std::min(rest.y - 4.0f, w / static_cast<float>(d) * 2.0f * static_cast<float>(T)));
    ctx.heatmaps.draw(ImGui::GetWindowDrawList(), tex, q, ImVec2(q.x + w, q.y + h), ImVec2(0, 0), ImVec2(1, 1));
    ImGui::Dummy(ImVec2(w, h));
}

}  // namespace

void PositionalPanel::draw(PanelContext& ctx) {
    const AppState& s = ctx.state;
    if (!beginPanel(ctx, title())) return;
    if (s.loaded) {
        learnedPositions(ctx);
        ImGui::End();
        return;
    }
    if (s.model.explicitQkv) {
        widgets::wrappedText("This scenario gives Q, K and V directly: there is no X for positions to be added to.");
        ImGui::End();
        return;
    }
    const bool on = s.scenario.positional == core::Positional::Sinusoidal;
    const int dModel = std::max(2, s.model.dModel);
    const int T = static_cast<int>(s.model.tq());
    widgets::wrappedText(on ? "On: PE is added to X (not concatenated). Base 10000."
                            : "Off: X is the embeddings alone; the model cannot see order.");
    // The fastest pair, a middle one and the slowest, as continuous curves over the sentence's
    // positions 0 … T−1, a dot at each token.
    std::vector<int> shown = {0};
    if (dModel >= 4) shown.push_back((dModel / 2) & ~1);
    if (dModel >= 6) shown.push_back(dModel - 2);
    const ImU32 colours[] = {IM_COL32(59, 130, 246, 255), IM_COL32(245, 158, 11, 255), IM_COL32(16, 185, 129, 255)};
    const float xMax = static_cast<float>(std::max(1, T - 1));
    constexpr int kSamples = 256;
    std::vector<widgets::Series> series;
    for (std::size_t k = 0; k < shown.size(); ++k) {
        const int dim = shown[k];
        std::vector<float> y(kSamples);
        for (int i = 0; i < kSamples; ++i)
            y[static_cast<std::size_t>(i)] = static_cast<float>(core::sinusoidalValue(xMax * i / (kSamples - 1), dim, dModel));
        char name[64];
        std::snprintf(name, sizeof name, "dim %d, λ %.3g", dim, core::sinusoidalWavelength(dim, dModel));
        series.push_back({std::move(y), colours[k], name});
    }
    widgets::legend(series);
    if (ImGui::IsItemHovered()) widgets::showTooltip("λ: the wavelength in positions, 2π · 10000^(2i/d_model) for dims 2i and 2i+1.");
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const float lineH = ImGui::GetTextLineHeightWithSpacing();
    const float plotH = std::max(3.0f * lineH, avail.y < 12.0f * lineH ? avail.y - 4.0f : (avail.y - lineH) * 0.5f);
    const ImVec2 p = ImGui::GetCursorScreenPos();
    widgets::linePlot(ImGui::GetWindowDrawList(), p, ImVec2(p.x + avail.x, p.y + plotH), series, -1.0f, 1.0f, "position",
                      {.xMax = xMax, .dotWholeX = true, .legendInside = false});
    ImGui::Dummy(ImVec2(avail.x, plotH));
    // The matrix only where it has the room to be read.
    if (ImGui::GetContentRegionAvail().y < 4.0f * lineH) {
        ImGui::End();
        return;
    }
    char caption[96];
    std::snprintf(caption, sizeof caption, "PE: %d positions × %d dims", T, dModel);
    widgets::flowTextDisabled(caption, true);
    // The matrix: rows = positions, columns = dimensions, with its colour bar on the right.
    const gfx::HeatmapTexture& tex = ctx.textures.get(
        "pe", gfx::TextureStamp{.rows = T, .cols = dModel}, {s.view.colormap, -1.0f, 1.0f},
        [&] { return gfx::texelsOf(core::sinusoidalEncoding(T, dModel)); }, 512);
    const ImVec2 q = ImGui::GetCursorScreenPos();
    const ImVec2 rest = ImGui::GetContentRegionAvail();
    const float barW = ImGui::CalcTextSize("-1.00").x + ImGui::GetFontSize() * 2.0f;
    const float axisW = ImGui::CalcTextSize(std::to_string(T - 1).c_str()).x + 4.0f;
    const float w = std::max(20.0f, rest.x - barW - axisW - 8.0f);
    const float h = std::max(20.0f, std::min(rest.y - lineH - 4.0f, w / static_cast<float>(dModel) * 2.0f * static_cast<float>(T)));
    ImDrawList* list = ImGui::GetWindowDrawList();
    const ImVec2 m0(q.x + axisW, q.y), m1(q.x + axisW + w, q.y + h);
    ctx.heatmaps.draw(list, tex, m0, m1, ImVec2(0, 0), ImVec2(1, 1));
    const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);
    // Axes: position 0 and T − 1 down the left, dimension 0 and d − 1 under the matrix.
    list->AddText(ImVec2(q.x, m0.y), text, "0");
    const std::string lastRow = std::to_string(T - 1), lastDim = std::to_string(dModel - 1);
    list->AddText(ImVec2(m0.x - 4.0f - ImGui::CalcTextSize(lastRow.c_str()).x, m1.y - ImGui::GetTextLineHeight()), text, lastRow.c_str());
    list->AddText(ImVec2(m0.x, m1.y + 2.0f), text, "dim 0");
    list->AddText(ImVec2(m1.x - ImGui::CalcTextSize(lastDim.c_str()).x, m1.y + 2.0f), text, lastDim.c_str());
    widgets::colorBar(list, ImVec2(m1.x + 8.0f, m0.y), ImVec2(m1.x + 8.0f + barW, m1.y), s.view.colormap, -1.0f, 1.0f, 3);
    ImGui::Dummy(ImVec2(rest.x, h + lineH));
    ImGui::End();
}

}  // namespace attnviz::app
