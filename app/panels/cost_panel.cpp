#include "app/panels/cost_panel.hpp"

#include "app/widgets/charts.hpp"
#include "app/widgets/text.hpp"
#include "core/base/error.hpp"
#include "core/labs/cost.hpp"
#include "core/scenario/model.hpp"

#include <algorithm>
#include <array>
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

// The KV cache a decoder keeps: presets, the inputs, and MHA / the user's kv heads / MQA. The
// tab says what this is, so the first line is the presets (a remark beside them if it fits).
void drawKvCache(PanelContext& ctx) {
    // The inputs are the view's (view.kvCache); an edit is an action, taken in the next frame.
    core::KvCacheConfig c = ctx.state.view.kvCache;
    const core::KvCacheConfig before = c;
    struct Emit {  // whatever this frame changed, sent once on the way out
        PanelContext& ctx;
        const core::KvCacheConfig& c;
        const core::KvCacheConfig& before;
        ~Emit() {
            if (!(c == before)) ctx.actions.emit(action::SetKvCache{c});
        }
    } emit{ctx, c, before};
    const ImGuiStyle& style = ImGui::GetStyle();
    const float em = ImGui::GetFontSize();
    bool first = true;
    for (const core::KvCachePreset& p : core::kvCachePresets()) {  // one click to a published configuration
        if (!first) widgets::sameLineIfFits(ImGui::CalcTextSize(p.name).x + style.FramePadding.x * 2.0f);
        first = false;
        if (ImGui::Button(p.name)) c = p.config;
        if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", p.note);
    }
    widgets::remarkIfFits("K and V of every past token");

    const bool narrow = ImGui::GetContentRegionAvail().x < 20.0f * em;
    const float field = em * (narrow ? 2.5f : 3.0f);
    const auto number = [&](const char* label, const char* tip, auto* value, float width, bool firstInRow) {
        if (!firstInRow) widgets::sameLineIfFits(width + style.ItemInnerSpacing.x + ImGui::CalcTextSize(label).x);
        ImGui::SetNextItemWidth(width);
        constexpr bool wide = sizeof(*value) == 8;
        ImGui::InputScalar(label, wide ? ImGuiDataType_S64 : ImGuiDataType_S32, value, nullptr, nullptr, wide ? "%lld" : "%d");
        if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tip);
    };
    number("L", "layers", &c.layers, field, true);
    number("h", "query heads", &c.heads, field, false);
    number("kv", "kv heads: K and V heads kept per layer (h for MHA, 1 for MQA)", &c.kvHeads, field, false);
    number("d", "head_dim: the width of one head's K (and V)", &c.headDim, field, false);
    const char* kinds[] = {"fp8", "fp16/bf16", "fp32"};
    const char* shortKinds[] = {"fp8", "fp16", "fp32"};
    const int sizes[] = {1, 2, 4};
    int kind = static_cast<int>(std::find(std::begin(sizes), std::end(sizes), c.bytesPerValue) - std::begin(sizes));
    // narrow: no arrow, so that head_dim, the bytes and T share a line
    const float comboW = narrow ? ImGui::CalcTextSize("fp16").x + style.FramePadding.x * 2.0f
                                : ImGui::CalcTextSize("fp16/bf16").x + ImGui::GetFrameHeight() + style.FramePadding.x * 2.0f;
    widgets::sameLineIfFits(comboW);
    ImGui::SetNextItemWidth(comboW);
    const std::string preview = kind < 3 ? (narrow ? shortKinds : kinds)[kind] : std::to_string(c.bytesPerValue) + " B";
    if (ImGui::BeginCombo("##kvbytes", preview.c_str(), narrow ? ImGuiComboFlags_NoArrowButton : 0)) {
        for (int k = 0; k < 3; ++k)
            if (ImGui::Selectable(kinds[k], k == kind)) c.bytesPerValue = sizes[k];
        ImGui::EndCombo();
    }
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("bytes a value: %d (fp16 and bf16: 2)", c.bytesPerValue);
    number("T", "tokens in the sequence", &c.tokens, field * (narrow ? 1.4f : 1.6f), false);

    std::array<core::KvCacheRow, 3> rows;
    try {
        rows = core::kvCacheRows(c);
    } catch (const core::InputError& e) {
        widgets::wrappedTextColored(ImVec4(0.95f, 0.35f, 0.30f, 1.0f), e.message());
        return;
    }
    // The cells, as wide as the room allows: long headers, then short ones, then the names without
    // their kv heads, then the ratio folded into the name ("GQA ÷4": MHA's bytes ÷ 4), then the
    // names alone. Each row's tooltip says everything.
    struct Cells {
        std::string name, bareName, ratioName, token, sequence, ratio;
    };
    std::array<Cells, 3> cells;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const core::KvCacheRow& r = rows[i];
        const std::string g = std::to_string(r.groups);
        cells[i] = {std::string(r.name) + " " + std::to_string(r.kvHeads),
                    r.name,
                    r.groups == 1 ? r.name : std::string(r.name) + " ÷" + g,
                    core::formatBytes(r.perToken),
                    core::formatBytes(r.perSequence),
                    r.groups == 1 ? "1" : "1/" + g};
    }
    struct Layout {
        std::array<const char*, 4> heads;
        std::string Cells::*name;
        int columns;
    };
    const Layout layouts[] = {{{"kv heads", "per token", "per sequence", "of MHA"}, &Cells::name, 4},
                              {{"kv", "token", "all T", "of MHA"}, &Cells::name, 4},
                              {{"kv", "token", "all T", "of MHA"}, &Cells::bareName, 4},
                              {{"kv", "token", "all T", ""}, &Cells::ratioName, 3},
                              {{"kv", "token", "all T", ""}, &Cells::bareName, 3}};
    const auto cellText = [&](const Layout& l, std::size_t i, int k) -> const std::string& {
        const Cells& row = cells[i];
        return k == 0 ? row.*(l.name) : k == 1 ? row.token : k == 2 ? row.sequence : row.ratio;
    };
    const auto tableWidth = [&](const Layout& l) {
        float w = 1.0f;
        for (int k = 0; k < l.columns; ++k) {
            float col = ImGui::CalcTextSize(l.heads[static_cast<std::size_t>(k)]).x;
            for (std::size_t i = 0; i < rows.size(); ++i) col = std::max(col, ImGui::CalcTextSize(cellText(l, i, k).c_str()).x);
            w += col + 2.0f * style.CellPadding.x + 1.0f;  // and a border
        }
        return w;
    };
    const float room = ImGui::GetContentRegionAvail().x;
    const Layout* layout = &layouts[0];
    while (layout != &layouts[4] && tableWidth(*layout) > room) ++layout;

    const float rowH = ImGui::GetTextLineHeight() + 2.0f * style.CellPadding.y + 1.0f;
    if (ImGui::GetContentRegionAvail().y >= ImGui::GetTextLineHeightWithSpacing() + 4.0f * rowH + style.ItemSpacing.y)
        widgets::flowTextDisabled("a token: 2 (K, V) × L × kv × d × bytes", true);
    if (ImGui::BeginTable("kv", layout->columns, ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingStretchProp)) {
        for (int k = 0; k < layout->columns; ++k) ImGui::TableSetupColumn(layout->heads[static_cast<std::size_t>(k)]);
        ImGui::TableHeadersRow();
        for (std::size_t i = 0; i < rows.size(); ++i) {
            const core::KvCacheRow& r = rows[i];
            bool hovered = false;  // any cell of the row
            ImGui::TableNextRow();
            for (int k = 0; k < layout->columns; ++k) {
                ImGui::TableNextColumn();
                const std::string& text = cellText(*layout, i, k);
                if (k == 0 && i == 1) ImGui::TextColored(ImVec4(0.96f, 0.62f, 0.04f, 1.0f), "%s", text.c_str());  // the user's
                else ImGui::TextUnformatted(text.c_str());
                hovered |= ImGui::IsItemHovered();
            }
            if (hovered)
                ImGui::SetTooltip("%s%s: %d kv heads, %d query heads a kv head, %s of MHA\n%s a token (%llu bytes), %s for %lld tokens",
                                  r.name, i == 1 ? " (yours)" : "", r.kvHeads, r.groups, cells[i].ratio.c_str(), cells[i].token.c_str(),
                                  static_cast<unsigned long long>(r.perToken), cells[i].sequence.c_str(), c.tokens);
        }
        ImGui::EndTable();
    }
}

// "1.573 G", "3 M": a count of operations in SI steps.
std::string flops(double v) {
    const char* units[] = {"", " k", " M", " G", " T", " P"};
    int u = 0;
    while (v >= 1000.0 && u < 5) v /= 1000.0, ++u;
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.4g%s", v, units[u]);
    return buffer;
}

// Seed 002, exercise 4: one self-attention layer's operations, term by term, at the book's
// n = 1000, d = 512 and at the scenario's own sizes.
void drawFlops(PanelContext& ctx) {
    const AppState& s = ctx.state;
    const core::LayerFlops book = core::layerFlops(1000, 512, 1, 512, 512, 1);
    const core::LayerFlops here = core::layerFlops(s.model.tq(), s.model.dModel, s.model.heads, s.model.dk, s.model.dv,
                                                   s.model.kvHeads > 0 ? s.model.kvHeads : s.model.heads);
    widgets::flowTextDisabled("FLOPs of one layer, a multiply-add = 2", true);
    struct Row {
        const char* name;
        const char* formula;
        double book, here;
    };
    const Row rows[] = {{"Q, K, V", "2 n d (h d_k + kv d_k + kv d_v)", book.projections, here.projections},
                        {"Q Kᵀ", "2 n² h d_k", book.scores, here.scores},
                        {"softmax", "3 n² h (exp, sum, divide)", book.softmax, here.softmax},
                        {"A·V", "2 n² h d_v", book.weighted, here.weighted},
                        {"total", "", book.withoutOutput(), here.withoutOutput()},
                        {"+ W_O", "2 n h d_v d", book.output, here.output}};
    const bool formulas = ImGui::GetContentRegionAvail().x >= ImGui::GetFontSize() * 26.0f;
    if (!ImGui::BeginTable("##flops", formulas ? 4 : 3, ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_RowBg)) return;
    ImGui::TableSetupColumn("");
    if (formulas) ImGui::TableSetupColumn("");
    ImGui::TableSetupColumn("n 1000, d 512");
    char scenario[64];
    std::snprintf(scenario, sizeof scenario, "n %lld, d %d", static_cast<long long>(s.model.tq()), s.model.dModel);
    ImGui::TableSetupColumn(scenario);
    ImGui::TableHeadersRow();
    for (const Row& r : rows) {
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(r.name);
        if (formulas) {
            ImGui::TableNextColumn();
            ImGui::TextDisabled("%s", r.formula);
        }
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(flops(r.book).c_str());
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(flops(r.here).c_str());
    }
    ImGui::EndTable();
    widgets::remarkIfFits("the n² terms win once n > d");
}

}  // namespace

void CostPanel::draw(PanelContext& ctx) {
    if (!beginPanel(ctx, title())) return;
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const float em = ImGui::GetFontSize();
    // the memory wall and the KV cache are both memory: they share one place as tabs
    const auto memoryTab = [&](const char* label, const char* id, const auto& drawPart) {
        if (!ImGui::BeginTabItem(label)) return;
        ImGui::BeginChild(id, ImVec2(0, 0), false, ImGuiWindowFlags_NoScrollbar);
        drawPart();
        ImGui::EndChild();
        ImGui::EndTabItem();
    };
    const auto wall = [&] { drawMemoryWall(ctx); };
    const auto kv = [&] { drawKvCache(ctx); };
    const auto work = [&] { drawFlops(ctx); };
    if (avail.x >= 52.0f * em) {  // side by side
        const float half = std::floor(avail.x * 0.48f);
        ImGui::BeginChild("memory", ImVec2(half, avail.y), false, ImGuiWindowFlags_NoScrollbar);
        if (ImGui::BeginTabBar("memory parts")) {
            memoryTab("Memory wall", "wall", wall);
            memoryTab("KV cache", "kv", kv);
            memoryTab("FLOPs", "flops", work);
            ImGui::EndTabBar();
        }
        ImGui::EndChild();
        ImGui::SameLine();
        ImGui::BeginChild("timing", ImVec2(0, avail.y), false, ImGuiWindowFlags_NoScrollbar);
        drawTiming(ctx);
        ImGui::EndChild();
    } else if (ImGui::BeginTabBar("cost parts")) {  // one at a time, each with the whole panel
        memoryTab("Memory wall", "wall", wall);
        memoryTab("KV cache", "kv", kv);
        memoryTab("FLOPs", "flops", work);
        memoryTab("Timing", "timing", [&] { drawTiming(ctx); });
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
