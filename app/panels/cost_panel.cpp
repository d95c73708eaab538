#include "app/panels/cost_panel.hpp"

#include "app/widgets/charts.hpp"
#include "core/scenario/model.hpp"

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>

namespace attnviz::app {
namespace {

std::string gib(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f GiB", v);  // as seed 000 prints it
    return buf;
}

}  // namespace

void CostPanel::draw(PanelContext& ctx) {
    if (!beginPanel(ctx, title())) return;
    const float width = ImGui::GetContentRegionAvail().x;
    ImGui::BeginChild("wall", ImVec2(width * 0.48f, 0), false);
    drawMemoryWall(ctx, width * 0.48f);
    ImGui::EndChild();
    ImGui::SameLine();
    ImGui::BeginChild("timing", ImVec2(0, 0), false);
    drawTiming(ctx);
    ImGui::EndChild();
    ImGui::End();
}

void CostPanel::drawMemoryWall(PanelContext& ctx, float width) {
    const core::MemoryWall& wall = ctx.state.view.wall;
    ImGui::TextUnformatted("The O(T²) memory wall (§39.3.2)");
    ImGui::TextDisabled("bytes x B x h x L x T², one T x T matrix per example, head, layer");
    core::MemoryWall edit = wall;
    bool changed = false;
    const float field = ImGui::GetFontSize() * 4.5f;
    ImGui::SetNextItemWidth(field);
    changed |= ImGui::InputScalar("B", ImGuiDataType_S64, &edit.batch, nullptr, nullptr, "%lld", ImGuiInputTextFlags_EnterReturnsTrue);
    ImGui::SameLine();
    ImGui::SetNextItemWidth(field);
    changed |= ImGui::InputScalar("h", ImGuiDataType_S64, &edit.heads, nullptr, nullptr, "%lld", ImGuiInputTextFlags_EnterReturnsTrue);
    ImGui::SameLine();
    ImGui::SetNextItemWidth(field);
    changed |= ImGui::InputScalar("L", ImGuiDataType_S64, &edit.layers, nullptr, nullptr, "%lld", ImGuiInputTextFlags_EnterReturnsTrue);
    ImGui::SameLine();
    const char* kinds[] = {"fp8 (1 byte)", "fp16 (2 bytes)", "fp32 (4 bytes)", "fp64 (8 bytes)"};
    const int sizes[] = {1, 2, 4, 8};
    int kind = static_cast<int>(std::find(std::begin(sizes), std::end(sizes), wall.bytesPerValue) - std::begin(sizes));
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 7.5f);
    if (ImGui::Combo("##bytes", &kind, kinds, 4)) edit.bytesPerValue = sizes[std::clamp(kind, 0, 3)], changed = true;
    ImGui::SameLine();
    ImGui::SetNextItemWidth(field * 1.4f);
    changed |= ImGui::InputScalar("T", ImGuiDataType_S64, &edit.tokens, nullptr, nullptr, "%lld", ImGuiInputTextFlags_EnterReturnsTrue);
    if (changed) ctx.actions.emit(action::SetMemoryWall{edit});

    const std::uint64_t memory = core::physicalMemoryBytes();
    std::vector<long long> tokens = core::memoryWallTokens();
    const bool own = std::find(tokens.begin(), tokens.end(), wall.tokens) == tokens.end();
    if (own) tokens.insert(std::upper_bound(tokens.begin(), tokens.end(), wall.tokens), wall.tokens);
    const auto rows = core::memoryWall(wall, tokens, memory);
    ImGui::Text("This machine: %s of memory", core::formatBytes(memory).c_str());
    if (ImGui::BeginTable("wall", 4, ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingStretchProp,
                          ImVec2(width - 8.0f, 0))) {
        ImGui::TableSetupColumn("T");
        ImGui::TableSetupColumn("one matrix");
        ImGui::TableSetupColumn("all stored");
        ImGui::TableSetupColumn("fits here");
        ImGui::TableHeadersRow();
        for (const core::MemoryWallRow& r : rows) {
            ImGui::TableNextRow();
            ImGui::TableNextColumn();
            if (own && r.tokens == wall.tokens) ImGui::TextColored(ImVec4(0.96f, 0.62f, 0.04f, 1.0f), "%lld (yours)", r.tokens);
            else ImGui::Text("%lld", r.tokens);
            ImGui::TableNextColumn();
            ImGui::Text("%.1f MiB", r.perMatrixMiB);
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(gib(r.totalGiB).c_str());
            ImGui::TableNextColumn();
            ImGui::TextColored(r.fits ? ImVec4(0.20f, 0.75f, 0.35f, 1.0f) : ImVec4(0.95f, 0.35f, 0.25f, 1.0f), "%s", r.fits ? "yes" : "no");
        }
        ImGui::EndTable();
    }
}

void CostPanel::drawTiming(PanelContext& ctx) {
    ImGui::TextUnformatted("RNN vs self-attention on this machine (§39.3), d = 64");
    const CostSnapshot sweep = costSnapshot(ctx.state);
    const std::vector<core::CostPoint>& pts = sweep.points;
    if (sweep.running) {
        if (ImGui::Button("Stop")) ctx.actions.emit(action::StopCostSweep{});
        ImGui::SameLine();
        ImGui::TextDisabled("measuring… (the window stays responsive)");
    } else if (ImGui::Button(pts.empty() ? "Measure" : "Measure again")) {
        ctx.actions.emit(action::StartCostSweep{});
    }
    widgets::LogSeries rnn{{}, {}, IM_COL32(59, 130, 246, 255), "RNN, sequential (one core)"};
    widgets::LogSeries attn{{}, {}, IM_COL32(245, 158, 11, 255), "self-attention, parallel (all cores)"};
    for (const core::CostPoint& p : pts) {
        rnn.x.push_back(static_cast<double>(p.tokens)), rnn.y.push_back(p.rnnMs);
        attn.x.push_back(static_cast<double>(p.tokens)), attn.y.push_back(p.attentionMs);
    }
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const float tableH = ImGui::GetTextLineHeightWithSpacing() * 3.2f;
    const ImVec2 p = ImGui::GetCursorScreenPos();
    const ImVec2 size(avail.x - 4.0f, std::max(80.0f, avail.y - tableH));
    if (pts.empty()) {
        ImGui::TextWrapped(
            "Times one forward pass of each for T = 16 … 4096 tokens: the RNN walks T steps in "
            "sequence (O(T d²)), attention does two T x T products (O(T² d)) that need not wait.");
    } else {
        widgets::logLogPlot(ImGui::GetWindowDrawList(), p, ImVec2(p.x + size.x, p.y + size.y), {rnn, attn}, "sequence length T",
                            "ms per forward pass");
        ImGui::Dummy(size);
        const core::CostPoint& last = pts.back();
        ImGui::Text("T = %lld: RNN %.2f ms, attention %.2f ms (RNN / attention = %.2fx)", last.tokens, last.rnnMs, last.attentionMs,
                    last.rnnOverAttention());
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip(
                "one pass at T = %lld: RNN %lld steps, %.3g multiply-adds; attention %.3g multiply-adds, "
                "%.3g exp",
                last.tokens, last.rnnSteps, last.rnnMultiplyAdds, last.attentionMultiplyAdds, last.attentionExps);
        ImGui::TextDisabled(
            "Attention's work grows as T², the RNN's as T; attention wins where its T x T products "
            "can use more cores than the RNN's T steps can wait for.");
    }
}

}  // namespace attnviz::app
