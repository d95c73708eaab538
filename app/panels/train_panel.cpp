#include "app/panels/train_panel.hpp"

#include "app/gfx/heatmap_renderer.hpp"
#include "app/gfx/texture_cache.hpp"
#include "app/widgets/charts.hpp"

#include <algorithm>
#include <string>

namespace attnviz::app {
namespace {

const char* positionsName(core::TrainPositions p) {
    switch (p) {
        case core::TrainPositions::None: return "no positions";
        case core::TrainPositions::Learned: return "learned positions";
        case core::TrainPositions::Sinusoidal: return "sinusoidal positions";
    }
    return "";
}

}  // namespace

TrainPanel::TrainPanel() { settings.task = core::TrainTask::TwoRelations; }

TrainPanel::~TrainPanel() { stop(); }

std::vector<core::TrainConfig> TrainPanel::runs() const {
    core::TrainConfig a = settings, b = settings;
    if (settings.task == core::TrainTask::TwoRelations) {
        a.heads = 1, b.heads = 2;  // same budget: d_model 4 either way
        a.learningRate = b.learningRate = 5e-3;
    } else {
        a.positions = core::TrainPositions::None;  // Exercise 39.4: without positions, then with
        if (b.positions == core::TrainPositions::None) b.positions = core::TrainPositions::Learned;
    }
    return {a, b};
}

void TrainPanel::start(int steps) {
    m_job.stop();
    const std::vector<core::TrainConfig> configs = runs();
    {
        const std::lock_guard lock(m_mutex);
        m_progress.clear();
        for (const core::TrainConfig& c : configs) {
            Progress p;
            p.config = c;
            p.label = c.task == core::TrainTask::TwoRelations ? std::to_string(c.heads) + (c.heads > 1 ? " heads" : " head")
                                                              : positionsName(c.positions);
            m_progress.push_back(p);
        }
    }
    m_job.start([this, configs, steps](const std::atomic<bool>& cancel) {
        std::vector<core::Trainer> trainers(configs.begin(), configs.end());
        for (int s = 0; s < steps && !cancel; ++s) {
            std::vector<double> losses;
            for (core::Trainer& t : trainers) losses.push_back(t.step());
            const bool publish = s % 10 == 9 || s + 1 == steps;
            std::vector<std::vector<core::MatD>> maps;
            std::vector<double> heldOut;
            if (publish)
                for (const core::Trainer& t : trainers) maps.push_back(t.sampleAttention()), heldOut.push_back(t.heldOutLoss());
            const std::lock_guard lock(m_mutex);
            for (std::size_t r = 0; r < trainers.size(); ++r) {
                m_progress[r].losses.push_back(static_cast<float>(losses[r]));
                if (!publish) continue;
                m_progress[r].maps = maps[r];
                m_progress[r].heldOut = heldOut[r];
                m_progress[r].scenario = trainers[r].toScenario();
            }
            if (publish) ++m_version;
        }
    });
}

void TrainPanel::stop() { m_job.stop(); }

std::vector<TrainPanel::Progress> TrainPanel::progress(std::uint64_t* version) const {
    const std::lock_guard lock(m_mutex);
    if (version) *version = m_version;
    return m_progress;
}

void TrainPanel::draw(PanelContext& ctx) {
    if (!beginPanel(ctx, title())) return;
    const float field = ImGui::GetFontSize() * 9.0f;
    // 1. settings (fixed while a run goes on)
    const bool running = m_job.running();
    ImGui::BeginDisabled(running);
    const char* tasks[] = {"two-relation toy", "reversal", "previous token"};
    int task = static_cast<int>(settings.task);
    ImGui::SetNextItemWidth(field);
    if (ImGui::Combo("task", &task, tasks, 3)) settings.task = static_cast<core::TrainTask>(task);
    ImGui::SameLine();
    const bool twoRelations = settings.task == core::TrainTask::TwoRelations;
    if (!twoRelations) {
        const char* positions[] = {"learned", "sinusoidal"};
        int p = settings.positions == core::TrainPositions::Sinusoidal ? 1 : 0;
        ImGui::SetNextItemWidth(field * 0.8f);
        if (ImGui::Combo("positions", &p, positions, 2))
            settings.positions = p == 1 ? core::TrainPositions::Sinusoidal : core::TrainPositions::Learned;
        ImGui::SameLine();
        const int choices[] = {1, 2, 4};
        int heads = static_cast<int>(std::find(std::begin(choices), std::end(choices), settings.heads) - std::begin(choices));
        ImGui::SetNextItemWidth(field * 0.6f);
        if (ImGui::Combo("heads", &heads, "1\0" "2\0" "4\0\0")) settings.heads = choices[std::clamp(heads, 0, 2)];
        ImGui::SameLine();
    }
    int seed = static_cast<int>(settings.seed);
    ImGui::SetNextItemWidth(field * 0.6f);
    if (ImGui::InputInt("seed", &seed)) settings.seed = static_cast<std::uint64_t>(std::max(0, seed));
    ImGui::SameLine();
    ImGui::SetNextItemWidth(field * 0.6f);
    ImGui::InputInt("steps", &m_steps, 100);
    m_steps = std::clamp(m_steps, 10, 5000);
    ImGui::EndDisabled();
    ImGui::SameLine();
    if (running) {
        if (ImGui::Button("Stop")) stop();
    } else if (ImGui::Button("Train")) {
        start(m_steps);
    }
    std::uint64_t version = 0;
    const std::vector<Progress> runs = progress(&version);
    ImGui::TextDisabled(twoRelations ? "One head against two, same budget: attend to position 2 and to the planted [1, 0] token (MSE of the maps)."
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
    const float side = std::max(40.0f, std::min((avail.x - plotW - 24.0f) / 4.0f - 8.0f, plotH / 2.0f - 2.0f * ImGui::GetTextLineHeightWithSpacing()));
    for (std::size_t r = 0; r < runs.size(); ++r) {
        ImGui::TextUnformatted(runs[r].label.c_str());
        for (std::size_t h = 0; h < runs[r].maps.size(); ++h) {
            if (h) ImGui::SameLine();
            const core::Mat map = runs[r].maps[h].cast<float>();
            const gfx::HeatmapTexture& tex = ctx.textures.get("train:" + std::to_string(r) + ":" + std::to_string(h), gfx::TextureStamp{version},
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
