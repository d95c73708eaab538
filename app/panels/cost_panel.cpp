#include "app/panels/cost_panel.hpp"

#include "app/widgets/charts.hpp"
#include "app/widgets/text.hpp"
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

// The rows of `rows` a table of `capacity` rows shows: all when they fit, else a run of
// consecutive ones around row `keep` (the user's own T).
std::pair<std::size_t, std::size_t> rowWindow(std::size_t rows, std::size_t keep, std::size_t capacity) {
    capacity = std::max<std::size_t>(1, capacity);
    if (rows <= capacity) return {0, rows};
    const std::size_t first = std::min(keep > capacity / 2 ? keep - capacity / 2 : 0, rows - capacity);
    return {first, first + capacity};
}

}  // namespace

void CostPanel::draw(PanelContext& ctx) {
    if (!beginPanel(ctx, title())) return;
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const float em = ImGui::GetFontSize();
    if (avail.x >= 52.0f * em) {  // side by side
        const float half = std::floor(avail.x * 0.48f);
        ImGui::BeginChild("wall", ImVec2(half, avail.y), false, ImGuiWindowFlags_NoScrollbar);
        drawMemoryWall(ctx);
        ImGui::EndChild();
        ImGui::SameLine();
        ImGui::BeginChild("timing", ImVec2(0, avail.y), false, ImGuiWindowFlags_NoScrollbar);
        drawTiming(ctx);
        ImGui::EndChild();
    } else if (ImGui::BeginTabBar("cost parts")) {  // one at a time, each with the whole panel
        if (ImGui::BeginTabItem("Memory wall")) {
            ImGui::BeginChild("wall", ImVec2(0, 0), false, ImGuiWindowFlags_NoScrollbar);
            drawMemoryWall(ctx);
            ImGui::EndChild();
            ImGui::EndTabItem();
        }
        if (ImGui::BeginTabItem("Timing")) {
            ImGui::BeginChild("timing", ImVec2(0, 0), false, ImGuiWindowFlags_NoScrollbar);
            drawTiming(ctx);
            ImGui::EndChild();
            ImGui::EndTabItem();
        }
        ImGui::EndTabBar();
    }
    ImGui::End();
}

void CostPanel::drawMemoryWall(PanelContext& ctx) {
    const core::MemoryWall& wall = ctx.state.view.wall;
    const ImGuiStyle& style = ImGui::GetStyle();
    const float em = ImGui::GetFontSize();
    widgets::flowText("The O(T²) memory wall (§39.3.2)", true);
    widgets::remarkIfFits("one T × T matrix per example, head and layer");

    core::MemoryWall edit = wall;
    bool changed = false;
    const bool narrow = ImGui::GetContentRegionAvail().x < 20.0f * em;
    const float field = em * (narrow ? 3.0f : 4.0f);
    const auto number = [&](const char* label, long long* value, float width, bool first) {
        if (!first) widgets::sameLineIfFits(width + style.ItemInnerSpacing.x + ImGui::CalcTextSize(label).x);
        ImGui::SetNextItemWidth(width);
        changed |= ImGui::InputScalar(label, ImGuiDataType_S64, value, nullptr, nullptr, "%lld", ImGuiInputTextFlags_EnterReturnsTrue);
    };
    number("B", &edit.batch, field, true);
    number("h", &edit.heads, field, false);
    number("L", &edit.layers, field, false);
    const char* kinds[] = {"fp8 (1 byte)", "fp16 (2 bytes)", "fp32 (4 bytes)", "fp64 (8 bytes)"};
    const char* shortKinds[] = {"fp8", "fp16", "fp32", "fp64"};
    const int sizes[] = {1, 2, 4, 8};
    int kind = static_cast<int>(std::find(std::begin(sizes), std::end(sizes), wall.bytesPerValue) - std::begin(sizes));
    const float comboW = ImGui::CalcTextSize(narrow ? "fp64" : "fp64 (8 bytes)").x + ImGui::GetFrameHeight() + style.FramePadding.x * 2.0f;
    widgets::sameLineIfFits(comboW);
    ImGui::SetNextItemWidth(comboW);
    if (ImGui::Combo("##bytes", &kind, narrow ? shortKinds : kinds, 4)) edit.bytesPerValue = sizes[std::clamp(kind, 0, 3)], changed = true;
    if (narrow && ImGui::IsItemHovered()) ImGui::SetTooltip("bytes a value");
    number("T", &edit.tokens, field * 1.4f, false);
    if (changed) ctx.actions.emit(action::SetMemoryWall{edit});

    const std::uint64_t memory = core::physicalMemoryBytes();
    std::vector<long long> tokens = core::memoryWallTokens();
    const bool own = std::find(tokens.begin(), tokens.end(), wall.tokens) == tokens.end();
    if (own) tokens.insert(std::upper_bound(tokens.begin(), tokens.end(), wall.tokens), wall.tokens);
    const auto rows = core::memoryWall(wall, tokens, memory);
    // as many rows as the space below holds, the user's T among them; the formula goes first
    // when there is no room for two
    const float rowH = ImGui::GetTextLineHeight() + 2.0f * style.CellPadding.y + 1.0f;
    const bool formula =
        ImGui::GetContentRegionAvail().y >= 2.0f * ImGui::GetTextLineHeightWithSpacing() + 3.0f * rowH + style.ItemSpacing.y;
    if (formula) widgets::flowText("bytes × B × h × L × T²", true);
    widgets::flowTextDisabled("this machine: " + core::formatBytes(memory), !formula);
    const float room = ImGui::GetContentRegionAvail().y - rowH - style.ItemSpacing.y - 2.0f;
    const std::size_t yours = static_cast<std::size_t>(
        std::find_if(rows.begin(), rows.end(), [&](const auto& r) { return r.tokens == wall.tokens; }) - rows.begin());
    const auto [first, last] = rowWindow(rows.size(), yours, static_cast<std::size_t>(std::max(1.0f, room / rowH)));
    // narrow: the size of one matrix only on hover
    if (ImGui::BeginTable("wall", narrow ? 3 : 4, ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingStretchProp)) {
        ImGui::TableSetupColumn("T");
        if (!narrow) ImGui::TableSetupColumn("one matrix");
        ImGui::TableSetupColumn(narrow ? "all" : "all stored");
        ImGui::TableSetupColumn(narrow ? "fits" : "fits here");
        ImGui::TableHeadersRow();
        for (std::size_t i = first; i < last; ++i) {
            const core::MemoryWallRow& r = rows[i];
            ImGui::TableNextRow();
            ImGui::TableNextColumn();
            if (own && r.tokens == wall.tokens)
                ImGui::TextColored(ImVec4(0.96f, 0.62f, 0.04f, 1.0f), narrow ? "%lld" : "%lld (yours)", r.tokens);
            else ImGui::Text("%lld", r.tokens);
            if (!narrow) {
                ImGui::TableNextColumn();
                ImGui::Text("%.1f MiB", r.perMatrixMiB);
            }
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(gib(r.totalGiB).c_str());
            ImGui::TableNextColumn();
            ImGui::TextColored(r.fits ? ImVec4(0.20f, 0.75f, 0.35f, 1.0f) : ImVec4(0.95f, 0.35f, 0.25f, 1.0f), "%s", r.fits ? "yes" : "no");
            if (ImGui::IsItemHovered())
                ImGui::SetTooltip("T = %lld: %.1f MiB a matrix, %s in all", r.tokens, r.perMatrixMiB, gib(r.totalGiB).c_str());
        }
        ImGui::EndTable();
    }
}

void CostPanel::drawTiming(PanelContext& ctx) {
    const CostSnapshot sweep = costSnapshot(ctx.state);
    const std::vector<core::CostPoint>& pts = sweep.points;
    const int d = CostSweepJob::kWidth;
    widgets::flowText("RNN vs self-attention (§39.3), d = " + std::to_string(d), true);
    if (sweep.running) {
        widgets::sameLineIfFits(ImGui::CalcTextSize("Stop").x + ImGui::GetStyle().FramePadding.x * 2.0f);
        if (ImGui::Button("Stop")) ctx.actions.emit(action::StopCostSweep{});
        widgets::remarkIfFits("measuring…");
    } else {
        const char* label = pts.empty() ? "Measure on this machine" : "Measure again";
        widgets::sameLineIfFits(ImGui::CalcTextSize(label).x + ImGui::GetStyle().FramePadding.x * 2.0f);
        if (ImGui::Button(label)) ctx.actions.emit(action::StartCostSweep{});
    }

    // Before a measurement: the work each does, counted (the same on every machine). After: the
    // times, with what they say.
    const bool measured = !pts.empty();
    widgets::LogSeries rnn{{}, {}, IM_COL32(59, 130, 246, 255), measured ? "RNN, sequential (one core)" : "RNN: 2 T d²"};
    widgets::LogSeries attn{{}, {}, IM_COL32(245, 158, 11, 255), measured ? "attention, parallel (all cores)" : "attention: 2 T² d"};
    std::string below, caption;
    if (measured) {
        for (const core::CostPoint& p : pts) {
            rnn.x.push_back(static_cast<double>(p.tokens)), rnn.y.push_back(p.rnnMs);
            attn.x.push_back(static_cast<double>(p.tokens)), attn.y.push_back(p.attentionMs);
        }
        const core::CostSummary summary = core::summariseCost(pts);
        below = summary.ratio;
        caption = summary.verdict;
    } else {
        for (const long long t : CostSweepJob::sweepTokens()) {
            const core::CostPoint w = core::costWork(t, d);
            rnn.x.push_back(static_cast<double>(t)), rnn.y.push_back(w.rnnMultiplyAdds);
            attn.x.push_back(static_cast<double>(t)), attn.y.push_back(w.attentionMultiplyAdds);
        }
        const long long top = CostSweepJob::sweepTokens().back();
        below = "equal at T = d = " + std::to_string(d) + "; at T = " + std::to_string(top) + " attention does " + std::to_string(top / d) +
                "× the RNN's multiply-adds";
        caption = "Its work can still take less time: the T × T products run on every core, while each RNN step waits for the last.";
    }
    const float width = ImGui::GetContentRegionAvail().x;
    const float belowH = ImGui::CalcTextSize(below.c_str(), nullptr, false, width).y;
    const float lineH = ImGui::GetTextLineHeightWithSpacing();
    const float room = ImGui::GetContentRegionAvail().y;
    // the plot keeps at least 8 lines when it can; the caption takes what is left, or goes
    const float captionH =
        std::max(0.0f, std::min(ImGui::CalcTextSize(caption.c_str(), nullptr, false, width).y, room - belowH - 8.0f * lineH));
    const float plotH = std::max(3.0f * lineH, room - belowH - captionH - 2.0f * ImGui::GetStyle().ItemSpacing.y - 2.0f);
    const ImVec2 p = ImGui::GetCursorScreenPos();
    widgets::logLogPlot(ImGui::GetWindowDrawList(), p, ImVec2(p.x + width - 4.0f, p.y + plotH), {rnn, attn}, "sequence length T",
                        measured ? "ms per forward pass" : "multiply-adds per forward pass");
    ImGui::Dummy(ImVec2(width - 4.0f, plotH));
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextUnformatted(below.c_str());
    ImGui::PopTextWrapPos();
    if (measured && ImGui::IsItemHovered()) {
        const core::CostPoint& last = pts.back();
        ImGui::SetTooltip(
            "one pass at T = %lld: RNN %.3g ms, %lld steps, %.3g multiply-adds; attention %.3g ms, %.3g multiply-adds, %.3g exp",
            last.tokens, last.rnnMs, last.rnnSteps, last.rnnMultiplyAdds, last.attentionMs, last.attentionMultiplyAdds, last.attentionExps);
    }
    if (captionH >= ImGui::GetTextLineHeight()) {
        const std::string shown = widgets::fitWrapped(caption, width, captionH);
        ImGui::PushTextWrapPos(0.0f);
        ImGui::TextDisabled("%s", shown.c_str());
        ImGui::PopTextWrapPos();
        if (shown != caption) widgets::hoverTooltip(caption);
    }
}

}  // namespace attnviz::app
