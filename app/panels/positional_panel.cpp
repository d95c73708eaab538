#include "app/panels/positional_panel.hpp"

#include "app/gfx/texture_cache.hpp"
#include "app/widgets/charts.hpp"
#include "core/scenario/embedding.hpp"

#include <algorithm>

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
    const bool on = s.scenario.positional == core::Positional::Sinusoidal;
    const int dModel = std::max(2, s.model.dModel);
    const int T = static_cast<int>(s.model.tq());
    ImGui::TextWrapped(on ? "On: PE is added to X (not concatenated). Base 10000."
                          : "Off: X is the embeddings alone; the model cannot see order.");
    const int positions = std::clamp(T, 64, 256);  // enough to see the slow waves, few enough to see the fast ones
    const core::Mat curve = core::sinusoidalEncoding(positions, dModel);
    const auto column = [&](int d) {
        std::vector<float> y(static_cast<std::size_t>(positions));
        for (int p = 0; p < positions; ++p) y[static_cast<std::size_t>(p)] = curve(p, d);
        return y;
    };
    const int slow = std::max(0, (dModel / 2) & ~1);
    std::vector<widgets::Series> series = {{column(0), IM_COL32(59, 130, 246, 255), "dim 0 (fast)"},
                                           {column(slow), IM_COL32(245, 158, 11, 255), "dim " + std::to_string(slow) + " (slow)"}};
    if (dModel > 4) series.push_back({column(2), IM_COL32(16, 185, 129, 255), "dim 2"});
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const float plotH = std::max(60.0f, avail.y * 0.45f);
    const ImVec2 p = ImGui::GetCursorScreenPos();
    widgets::linePlot(ImGui::GetWindowDrawList(), p, ImVec2(p.x + avail.x, p.y + plotH), series, -1.0f, 1.0f, "position");
    ImGui::Dummy(ImVec2(avail.x, plotH));
    ImGui::TextDisabled("PE matrix (%d positions × %d dims), −1 … 1", T, dModel);
    const gfx::HeatmapTexture& tex = ctx.textures.get(
        "pe", gfx::TextureStamp{.rows = T, .cols = dModel}, {s.view.colormap, -1.0f, 1.0f},
        [&] { return gfx::texelsOf(core::sinusoidalEncoding(T, dModel)); }, 512);
    const ImVec2 q = ImGui::GetCursorScreenPos();
    const ImVec2 rest = ImGui::GetContentRegionAvail();
    // Rows = positions, columns = dimensions; fill the width, keep cells no taller than wide x 2.
    const float w = rest.x;
    const float h = std::max(20.0f, std::min(rest.y - 4.0f, w / static_cast<float>(dModel) * 2.0f * static_cast<float>(T)));
    ctx.heatmaps.draw(ImGui::GetWindowDrawList(), tex, q, ImVec2(q.x + w, q.y + h), ImVec2(0, 0), ImVec2(1, 1));
    ImGui::Dummy(ImVec2(w, h));
    ImGui::End();
}

}  // namespace attnviz::app
