#include "app/panels/train_panel.hpp"

#include "app/gfx/heatmap_renderer.hpp"
#include "app/gfx/texture_cache.hpp"
#include "app/views/train_preview.hpp"
#include "app/widgets/charts.hpp"
#include "app/widgets/text.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace attnviz::app {
namespace {

std::string loss(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", v);
    return buf;
}

}  // namespace

void TrainPanel::draw(PanelContext& ctx) {
    if (!beginPanel(ctx, title())) return;
    const ImGuiStyle& style = ImGui::GetStyle();
    const float em = ImGui::GetFontSize();
    // 1. settings (fixed while a run goes on), in a row that wraps
    const TrainSnapshot snap = trainSnapshot(ctx.state);
    const bool running = snap.running;
    TrainSettings edit = ctx.state.labs.train;
    core::TrainConfig& settings = edit.config;
    bool changed = false;
    const auto labelled = [&](float field, const char* label, bool first) {
        if (!first) widgets::sameLineIfFits(field + style.ItemInnerSpacing.x + ImGui::CalcTextSize(label).x);
        ImGui::SetNextItemWidth(field);
    };
    ImGui::BeginDisabled(running);
    const char* tasks[] = {"two-relation toy", "reversal", "previous token"};
    int task = static_cast<int>(settings.task);
    labelled(em * 9.0f, "task", true);
    if (ImGui::Combo("task", &task, tasks, 3)) settings.task = static_cast<core::TrainTask>(task), changed = true;
    const bool twoRelations = settings.task == core::TrainTask::TwoRelations;
    if (!twoRelations) {
        const char* positions[] = {"learned", "sinusoidal"};
        int p = settings.positions == core::TrainPositions::Sinusoidal ? 1 : 0;
        labelled(em * 7.0f, "positions", false);
        if (ImGui::Combo("positions", &p, positions, 2))
            settings.positions = p == 1 ? core::TrainPositions::Sinusoidal : core::TrainPositions::Learned, changed = true;
        const int choices[] = {1, 2, 4};
        int heads = static_cast<int>(std::find(std::begin(choices), std::end(choices), settings.heads) - std::begin(choices));
        labelled(em * 3.5f, "heads", false);
        if (ImGui::Combo("heads", &heads,
                         "1\0"
                         "2\0"
                         "4\0\0"))
            settings.heads = choices[std::clamp(heads, 0, 2)], changed = true;
    }
    int seed = static_cast<int>(settings.seed);
    labelled(em * 5.5f, "seed", false);
    if (ImGui::InputInt("seed", &seed)) settings.seed = static_cast<std::uint64_t>(std::max(0, seed)), changed = true;
    labelled(em * 6.0f, "steps", false);
    changed |= ImGui::InputInt("steps", &edit.steps, 100);
    edit.steps = std::clamp(edit.steps, 10, 5000);
    labelled(em * 5.0f, "dropout", false);
    changed |= ImGui::SliderFloat("dropout", &settings.dropout, 0.0f, 0.5f, "%.2f", ImGuiSliderFlags_AlwaysClamp);
    widgets::hoverTooltip(
        "Attention dropout while training: each weight zeroed with probability p and the rest scaled by 1/(1−p); "
        "off when the held-out loss and the maps are computed, as at inference.");
    ImGui::EndDisabled();
    if (changed) ctx.actions.emit(action::SetTrainSettings{edit});
    const char* button = running ? "Stop" : "Train";
    widgets::sameLineIfFits(ImGui::CalcTextSize(button).x + style.FramePadding.x * 2.0f);
    if (running) {
        if (ImGui::Button("Stop")) ctx.actions.emit(action::StopTraining{});
    } else if (ImGui::Button("Train")) {
        ctx.actions.emit(action::StartTraining{edit});
    }
    const bool trained = !snap.runs.empty() && !snap.runs.front().losses.empty();
    if (trained && !running && snap.runs.back().scenario.tokens) {
        const char* whole = "Open the trained model in the main view";
        const bool fits = ImGui::CalcTextSize(whole).x + style.FramePadding.x * 2.0f <= ImGui::GetContentRegionAvail().x;
        const char* open = fits ? whole : "Open it";
        widgets::sameLineIfFits(ImGui::CalcTextSize(open).x + style.FramePadding.x * 2.0f);
        if (ImGui::Button(open)) ctx.actions.emit(action::LoadScenario{snap.runs.back().scenario, "", ""});
        if (!fits) widgets::hoverTooltip(whole);
    }
    const std::string about =
        twoRelations ? "One head against two, same budget: attend to position 2 and to the planted [1, 0] token (MSE of the maps)."
                     : "Without positions attention is permutation-equivariant and cannot solve it (Exercise 39.4); with them it can.";
    const std::string shown = widgets::fitWrapped(about, ImGui::GetContentRegionAvail().x, 2.0f * ImGui::GetTextLineHeight() + 1.0f);
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextDisabled("%s", shown.c_str());
    ImGui::PopTextWrapPos();
    if (shown != about) widgets::hoverTooltip(about);

    // 2. the runs: as they start (before Train is pressed), or as they train
    const TrainPreviewView* preview = trained ? nullptr : shownTrainPreview(ctx.state);
    if (!trained && preview == nullptr) ctx.requests.stale.insert(std::string(id()));  // made after this frame
    const std::vector<TrainRun>* runs = trained ? &snap.runs : preview ? &preview->value.runs : nullptr;
    if (!runs || runs->empty()) {
        ImGui::End();
        return;
    }
    // the maps' textures are made again for each published snapshot, or each new preview (apart
    // from the snapshots' numbers)
    drawRuns(ctx, *runs, trained, trained ? snap.version : (1ULL << 62) + preview->version, ctx.state.labs.train.steps);
    ImGui::End();
}

// The loss (or, untrained, each run's loss before its first step) and each run's heads on the
// held-out example.
void TrainPanel::drawRuns(PanelContext& ctx, const std::vector<TrainRun>& runs, bool trained, std::uint64_t version, int steps) {
    const float em = ImGui::GetFontSize(), lineH = ImGui::GetTextLineHeightWithSpacing();
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    // Side by side when wide, one above the other when tall, else one at a time.
    const bool across = avail.x >= 36.0f * em, stacked = !across && avail.y >= 24.0f * lineH;
    if (!across && !stacked) {
        if (ImGui::BeginTabBar("train parts")) {
            if (ImGui::BeginTabItem(trained ? "Loss" : "Before training")) {
                ImGui::BeginChild("loss", ImVec2(0, 0), false, ImGuiWindowFlags_NoScrollbar);
                drawLoss(runs, trained, steps);
                ImGui::EndChild();
                ImGui::EndTabItem();
            }
            if (ImGui::BeginTabItem("Heads")) {
                ImGui::BeginChild("maps", ImVec2(0, 0), false, ImGuiWindowFlags_NoScrollbar);
                drawMaps(ctx, runs, trained, version);
                ImGui::EndChild();
                ImGui::EndTabItem();
            }
            ImGui::EndTabBar();
        }
        return;
    }
    ImGui::BeginChild("loss", across ? ImVec2(std::floor(avail.x * 0.45f), avail.y) : ImVec2(avail.x, std::floor(avail.y * 0.45f)), false,
                      ImGuiWindowFlags_NoScrollbar);
    drawLoss(runs, trained, steps);
    ImGui::EndChild();
    if (across) ImGui::SameLine(0.0f, em);
    ImGui::BeginChild("maps", ImVec2(0, 0), false, ImGuiWindowFlags_NoScrollbar);
    drawMaps(ctx, runs, trained, version);
    ImGui::EndChild();
}

// The loss curves, or, untrained, each run's loss before its first step.
void TrainPanel::drawLoss(const std::vector<TrainRun>& runs, bool trained, int steps) {
    const float lineH = ImGui::GetTextLineHeightWithSpacing();
    const ImU32 colours[] = {IM_COL32(239, 68, 68, 255), IM_COL32(16, 185, 129, 255)};
    std::vector<widgets::Series> series;
    float top = 0;
    for (std::size_t r = 0; r < runs.size(); ++r) {
        series.push_back({runs[r].losses, colours[r % 2], runs[r].label + " (held-out " + loss(runs[r].heldOut) + ")"});
        for (const float l : runs[r].losses) top = std::max(top, l);
    }
    if (trained) {
        if (ImGui::GetContentRegionAvail().y < 4.0f * lineH) {  // no room for a plot: the numbers alone
            for (std::size_t r = 0; r < series.size() && ImGui::GetContentRegionAvail().y >= lineH; ++r)
                widgets::flowText(series[r].label, r == 0);
            return;
        }
        if (ImGui::GetContentRegionAvail().y > 8.0f * lineH) widgets::flowText("loss per step", true);
        widgets::legend(series);
        const ImVec2 p = ImGui::GetCursorScreenPos();
        const ImVec2 size(ImGui::GetContentRegionAvail().x - 2.0f, ImGui::GetContentRegionAvail().y - 2.0f);
        if (size.y < 2.0f * lineH) return;
        widgets::LineAxes axes;
        axes.xMax = static_cast<float>(std::max<std::size_t>(static_cast<std::size_t>(steps), runs.front().losses.size()) - 1);
        axes.unitSteps = true;
        axes.legendInside = false;
        widgets::linePlot(ImGui::GetWindowDrawList(), p, ImVec2(p.x + size.x, p.y + size.y), series, 0.0f, std::max(0.1f, top), "step",
                          axes);
        ImGui::Dummy(size);
    } else {
        if (ImGui::GetContentRegionAvail().y > 6.0f * lineH) widgets::flowText("Before training, on a held-out batch:", true);
        for (std::size_t r = 0; r < runs.size() && ImGui::GetContentRegionAvail().y >= ImGui::GetTextLineHeight(); ++r) {
            ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(colours[r % 2]), "%s", widgets::clipLabel(runs[r].label).c_str());
            widgets::remarkIfFits("loss " + loss(runs[r].heldOut));
        }
        const std::string what = "Train runs " + std::to_string(steps) + " steps of Adam on both, side by side; the curves appear here.";
        const float room = ImGui::GetContentRegionAvail().y - 2.0f;
        if (room < ImGui::GetTextLineHeight()) return;
        const std::string fitted = widgets::fitWrapped(what, ImGui::GetContentRegionAvail().x, room);
        ImGui::PushTextWrapPos(0.0f);
        ImGui::TextDisabled("%s", fitted.c_str());
        ImGui::PopTextWrapPos();
    }
}

// Each run's heads on the held-out example, one row a run, tiles as large as the space allows,
// one colour bar for all (0 … 1).
void TrainPanel::drawMaps(PanelContext& ctx, const std::vector<TrainRun>& runs, bool trained, std::uint64_t version) {
    const float em = ImGui::GetFontSize(), lineH = ImGui::GetTextLineHeightWithSpacing();
    const ImVec2 room = ImGui::GetContentRegionAvail();
    std::size_t heads = 1;
    for (const TrainRun& r : runs) heads = std::max(heads, r.maps.size());
    const float gap = ImGui::GetStyle().ItemSpacing.x;
    const float barW = 18.0f + em * 0.8f + ImGui::CalcTextSize("0.00").x;
    const auto rows = static_cast<float>(runs.size());
    const float side = std::floor(
        std::max(em, std::min((room.x - barW - gap * static_cast<float>(heads)) / static_cast<float>(heads), room.y / rows - lineH - gap)));
    ImDrawList* list = ImGui::GetWindowDrawList();
    const ImVec2 origin = ImGui::GetCursorScreenPos();
    for (std::size_t r = 0; r < runs.size(); ++r) {
        const std::string caption = runs[r].label + (trained ? "" : " (untrained)");
        ImGui::TextUnformatted(widgets::fitLabel(caption, room.x).c_str());
        for (std::size_t h = 0; h < runs[r].maps.size(); ++h) {
            if (h) ImGui::SameLine(0.0f, gap);
            const core::Mat map = runs[r].maps[h].cast<float>();
            const gfx::HeatmapTexture& tex =
                ctx.textures.get("train:" + std::to_string(r) + ":" + std::to_string(h), gfx::TextureStamp{version},
                                 {ctx.state.view.colormap}, [&] { return gfx::texelsOf(map); });
            const ImVec2 q = ImGui::GetCursorScreenPos();
            ctx.heatmaps.draw(list, tex, q, ImVec2(q.x + side, q.y + side), ImVec2(0, 0), ImVec2(1, 1));
            ImGui::Dummy(ImVec2(side, side));
            if (ImGui::IsItemHovered())
                widgets::showTooltip(runs[r].label + ", head " + std::to_string(h + 1) +
                                     ": rows are queries, columns keys (held-out example)");
        }
    }
    // one colour bar for every map (0 … 1)
    const float x = origin.x + static_cast<float>(heads) * (side + gap) + em * 0.2f;
    const float y0 = origin.y + lineH, y1 = ImGui::GetCursorScreenPos().y - ImGui::GetStyle().ItemSpacing.y;
    if (x + barW <= origin.x + room.x + 1.0f && y1 - y0 > 2.0f * lineH)
        widgets::colorBar(list, ImVec2(x, y0), ImVec2(x + barW - em * 0.6f, y1), ctx.state.view.colormap, 0.0f, 1.0f,
                          y1 - y0 > 6.0f * lineH ? 5 : 2);
}

}  // namespace attnviz::app
