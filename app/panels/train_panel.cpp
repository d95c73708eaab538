#include "app/panels/train_panel.hpp"

#include "app/gfx/heatmap_renderer.hpp"
#include "app/gfx/texture_cache.hpp"
#include "app/widgets/charts.hpp"

#include <algorithm>
#include <string>

namespace attnviz::app {

void TrainPanel::draw(PanelContext& ctx) {
    if (!beginPanel(ctx, title())) return;
    const float field = ImGui::GetFontSize() * 9.0f;
    // 1. settings (fixed while a run goes on)
    const TrainSnapshot snap = trainSnapshot(ctx.state);
    const bool running = snap.running;
    TrainSettings edit = ctx.state.labs.train;
    core::TrainConfig& settings = edit.config;
    bool changed = false;
    ImGui::BeginDisabled(running);
    const char* tasks[] = {"two-relation toy", "reversal", "previous token"};
    int task = static_cast<int>(settings.task);
    ImGui::SetNextItemWidth(field);
    if (ImGui::Combo("task", &task, tasks, 3)) settings.task = static_cast<core::TrainTask>(task), changed = true;
    ImGui::SameLine();
    const bool twoRelations = settings.task == core::TrainTask::TwoRelations;
    if (!twoRelations) {
        const char* positions[] = {"learned", "sinusoidal"};
        int p = settings.positions == core::TrainPositions::Sinusoidal ? 1 : 0;
        ImGui::SetNextItemWidth(field * 0.8f);
        if (ImGui::Combo("positions", &p, positions, 2))
            settings.positions = p == 1 ? core::TrainPositions::Sinusoidal : core::TrainPositions::Learned, changed = true;
        ImGui::SameLine();
        const int choices[] = {1, 2, 4};
        int heads = static_cast<int>(std::find(std::begin(choices), std::end(choices), settings.heads) - std::begin(choices));
        ImGui::SetNextItemWidth(field * 0.6f);
        if (ImGui::Combo("heads", &heads,
                         "1\0"
                         "2\0"
                         "4\0\0"))
            settings.heads = choices[std::clamp(heads, 0, 2)], changed = true;
        ImGui::SameLine();
    }
    int seed = static_cast<int>(settings.seed);
    ImGui::SetNextItemWidth(field * 0.6f);
    if (ImGui::InputInt("seed", &seed)) settings.seed = static_cast<std::uint64_t>(std::max(0, seed)), changed = true;
    ImGui::SameLine();
    ImGui::SetNextItemWidth(field * 0.6f);
    changed |= ImGui::InputInt("steps", &edit.steps, 100);
    edit.steps = std::clamp(edit.steps, 10, 5000);
    ImGui::EndDisabled();
    if (changed) ctx.actions.emit(action::SetTrainSettings{edit});
    ImGui::SameLine();
    if (running) {
        if (ImGui::Button("Stop")) ctx.actions.emit(action::StopTraining{});
    } else if (ImGui::Button("Train")) {
        ctx.actions.emit(action::StartTraining{edit});
    }
    const std::uint64_t version = snap.version;
    const std::vector<TrainRun>& runs = snap.runs;
    ImGui::TextDisabled(
        twoRelations ? "One head against two, same budget: attend to position 2 and to the planted [1, 0] token (MSE of the maps)."
                     : "Without positions attention is permutation-equivariant and cannot solve it (Exercise 39.4); with them it can.");
    if (runs.empty()) {
        ImGui::End();
        return;
    }
    if (!running && runs.back().scenario.tokens && ImGui::Button("Open the trained model in the main view"))
        ctx.actions.emit(action::LoadScenario{runs.back().scenario, "", ""});

    // 2. the loss curves, and each run's heads on the held-out example
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const float plotW = avail.x * 0.45f, plotH = std::max(60.0f, avail.y - 4.0f);
    float top = 0;
    std::vector<widgets::Series> series;
    const ImU32 colours[] = {IM_COL32(239, 68, 68, 255), IM_COL32(16, 185, 129, 255)};
    for (std::size_t r = 0; r < runs.size(); ++r) {
        series.push_back({runs[r].losses, colours[r % 2],
                          runs[r].label + (runs[r].losses.empty() ? "" : ": " + std::to_string(runs[r].heldOut).substr(0, 6))});
        for (float l : runs[r].losses) top = std::max(top, l);
    }
    const ImVec2 p = ImGui::GetCursorScreenPos();
    if (!series.front().y.empty())
        widgets::linePlot(ImGui::GetWindowDrawList(), p, ImVec2(p.x + plotW, p.y + plotH), series, 0.0f, std::max(0.1f, top), "step");
    ImGui::Dummy(ImVec2(plotW, plotH));
    ImGui::SameLine(0.0f, 12.0f);
    ImGui::BeginGroup();
    const float side =
        std::max(40.0f, std::min((avail.x - plotW - 24.0f) / 4.0f - 8.0f, plotH / 2.0f - 2.0f * ImGui::GetTextLineHeightWithSpacing()));
    for (std::size_t r = 0; r < runs.size(); ++r) {
        ImGui::TextUnformatted(runs[r].label.c_str());
        for (std::size_t h = 0; h < runs[r].maps.size(); ++h) {
            if (h) ImGui::SameLine();
            const core::Mat map = runs[r].maps[h].cast<float>();
            const gfx::HeatmapTexture& tex =
                ctx.textures.get("train:" + std::to_string(r) + ":" + std::to_string(h), gfx::TextureStamp{version},
                                 {ctx.state.view.colormap}, [&] { return gfx::texelsOf(map); });
            const ImVec2 q = ImGui::GetCursorScreenPos();
            ctx.heatmaps.draw(ImGui::GetWindowDrawList(), tex, q, ImVec2(q.x + side, q.y + side), ImVec2(0, 0), ImVec2(1, 1));
            ImGui::Dummy(ImVec2(side, side));
        }
    }
    ImGui::EndGroup();
    ImGui::End();
}

}  // namespace attnviz::app
