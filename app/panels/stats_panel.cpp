#include "app/panels/stats_panel.hpp"

#include "app/state/head_summary.hpp"
#include "app/state/model_view.hpp"
#include "app/state/source.hpp"
#include "app/widgets/text.hpp"
#include "core/base/format.hpp"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <numeric>

namespace attnviz::app {
namespace {

// The table's columns after layer, head and kv head: one per statistic, then the induction test.
struct ScoreColumn {
    core::HeadScore score;
    const char* header;
    const char* tip;
};
constexpr ScoreColumn kColumns[] = {
    {core::HeadScore::Entropy, "entropy", "Mean over rows of −Σ A ln A (nats)"},
    {core::HeadScore::EntropyShare, "share", "Entropy ÷ ln(keys the row may read): 1 = uniform, 0 = one key"},
    {core::HeadScore::Distance, "distance", "Mean over rows of Σ A·|i − j|: how far back a head reads"},
    {core::HeadScore::Self, "self", "Mean weight on the query's own key"},
    {core::HeadScore::Previous, "previous", "Mean weight on the key just before the query"},
    {core::HeadScore::First, "first", "Mean weight on the first key (a sink)"},
    {core::HeadScore::FirstK, "first k",
     "Mean mass on the first k tokens over the rows after them (StreamingLLM's attention sinks: k = 4); k is set above"},
    {core::HeadScore::Duplicate, "duplicate", "Share of attention on earlier copies of the query's token"},
    {core::HeadScore::Induction, "induction", "Share of attention on the token after an earlier copy of the query's token"},
    {core::HeadScore::InductionTest, "induction test",
     "Mean weight from a token's second copy to the token after its first (repeated random tokens)"},
};
enum : int { kLayerColumn = 100, kHeadColumn, kKvColumn };

}  // namespace

void StatsPanel::draw(PanelContext& ctx) {
    const AppState& st = ctx.state;
    if (!beginPanel(ctx, title())) return;
    if (!headSummaryCurrent(st)) {
        if (headSweepNote(ctx, id())) {
            ImGui::End();
            return;
        }
        ctx.requests.stale.insert(std::string(id()));
        if (const core::ImportedAttention* file = mapsFile(st); file && (!file->checkedAll() || file->changed())) importCheckNote(st);
        else ImGui::TextDisabled(!capabilities(st).ownPass && !weightsFresh(st, -1) ? "computing every head…" : "summarizing every head…");
        ImGui::End();
        return;
    }
    if (const core::ImportedAttention* file = mapsFile(st); file && file->changed())
        importCheckNote(st);  // the last good summary stays, said to be so
    const HeadSummary& s = st.headSummary;
    const float em = ImGui::GetFontSize();

    // The sink share at ε.
    const double share = core::sinkShare(s.sinkStats(), st.view.sinkEpsilon);
    const int sinks = static_cast<int>(std::lround(share * static_cast<double>(s.stats.size())));
    char head[64];
    std::snprintf(head, sizeof head, st.view.presenter ? "Sink share %.0f %% at ε = %.2f" : "Sink share %.0f %%", share * 100.0,
                  st.view.sinkEpsilon);
    ImGui::TextUnformatted(widgets::fitLabel(head, ImGui::GetContentRegionAvail().x).c_str());
    const float sliderW = std::min(em * 7.0f, ImGui::GetContentRegionAvail().x);
    if (!st.view.presenter) {
        widgets::sameLineIfFits(sliderW);
        float eps = st.view.sinkEpsilon;
        ImGui::SetNextItemWidth(sliderW);
        if (ImGui::SliderFloat("##sink epsilon", &eps, 0.0f, 1.0f, "ε = %.2f", ImGuiSliderFlags_AlwaysClamp))
            ctx.actions.emit(action::SetSinkEpsilon{eps});
    }
    char rule[160];
    std::snprintf(rule, sizeof rule,
                  "%d of %d heads put more than ε = %.2f of their attention on the first token, on average (Gu et al. 2025)", sinks,
                  static_cast<int>(s.stats.size()), st.view.sinkEpsilon);
    if (!st.view.presenter) widgets::wrappedTextColored(ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled), rule);
    // Leaving out the first key: what a head does with the rest of each row (a sink hides it).
    if (!st.view.presenter) {
        bool skip = st.view.skipFirstKey;
        if (ImGui::Checkbox("leave out the first key", &skip)) ctx.actions.emit(action::SetSkipFirstKey{skip});
        if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", core::headStatsRule({.skipFirstKey = true}).c_str());
        // k of the "first k" column, beside it where the line has the room (else --first-tokens):
        // the first tokens a sink is made of.
        const float kW = em * 5.0f, kRoom = kW + ImGui::GetStyle().ItemInnerSpacing.x + ImGui::CalcTextSize("first k").x;
        const float right = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
        if (ImGui::GetItemRectMax().x + ImGui::GetStyle().ItemSpacing.x + kRoom <= right) {
            ImGui::SameLine();
            int k = st.view.firstTokens;
            ImGui::SetNextItemWidth(kW);
            if (ImGui::InputInt("first k", &k, 1, 4) && k >= 1 && k <= kMaxFirstTokens) ctx.actions.emit(action::SetFirstTokens{k});
            tooltip(
                "k of the \"first k\" column: each head's mean mass on the first k tokens over the rows after them (StreamingLLM "
                "keeps 4 initial tokens as attention sinks).");
        }
    }
    if (st.view.skipFirstKey)
        widgets::wrappedTextColored(ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled),
                                    core::headStatsRule({.skipFirstKey = true}) + "; the sink share reads every key");

    // The induction test: a model's own run on repeated random tokens, on a worker thread.
    const InductionSnapshot test = st.induction->snapshot();
    const std::vector<double>* testScores = inductionTestScores(test, checkpointOf(st));
    if (test.running) {
        ImGui::ProgressBar(static_cast<float>(test.fraction), ImVec2(std::min(em * 10.0f, ImGui::GetContentRegionAvail().x), 0),
                           "induction test…");
        widgets::sameLineIfFits(ImGui::CalcTextSize("Stop").x + ImGui::GetStyle().FramePadding.x * 2.0f);
        if (ImGui::Button("Stop")) ctx.actions.emit(action::StopInductionTest{});
    } else {
        ImGui::BeginDisabled(!capabilities(st).ownPass);
        if (ImGui::Button(testScores ? "Induction test again" : "Induction test")) ctx.actions.emit(action::StartInductionTest{});
        ImGui::EndDisabled();
        tooltip(capabilities(st).ownPass
                    ? "Runs the model on 10 sequences of 50 random tokens repeated twice and scores each head by its weight from a "
                      "token's second copy to the token after its first copy. Your sentence stays as it is."
                : capabilities(st).givenMaps ? "Needs a model: the test runs a checkpoint on its own random tokens, and imported attention "
                                               "has no model behind it (the duplicate and induction columns score your tokens)."
                                             : "Needs a model: the test runs the checkpoint on its own random tokens.");
        if (!test.error.empty() && test.checkpoint == checkpointOf(st))
            widgets::wrappedTextColored(ImVec4(1.0f, 0.45f, 0.4f, 1.0f), test.error);
    }

    // The table.
    const bool grouped = groupedQuery(st);
    constexpr int kColumnCount = static_cast<int>(std::size(kColumns));  // the test's last
    const int scoreColumns = testScores ? kColumnCount : kColumnCount - 1;
    const int columns = 2 + (grouped ? 1 : 0) + scoreColumns;
    // As wide as the panel (columns share it, their text clipped when narrow); rows scroll.
    const ImGuiTableFlags flags = ImGuiTableFlags_Sortable | ImGuiTableFlags_ScrollY | ImGuiTableFlags_RowBg |
                                  ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingStretchProp | ImGuiTableFlags_Hideable;
    // Too low for a header and a row: no table rather than one past the panel's edge.
    if (ImGui::GetContentRegionAvail().y < ImGui::GetFrameHeightWithSpacing() * 2.0f ||
        !ImGui::BeginTable("##head stats", columns, flags, ImGui::GetContentRegionAvail())) {
        ImGui::End();
        return;
    }
    ImGui::TableSetupScrollFreeze(0, 1);
    ImGui::TableSetupColumn("layer", ImGuiTableColumnFlags_DefaultSort, 0.0f, kLayerColumn);
    ImGui::TableSetupColumn("head", 0, 0.0f, kHeadColumn);
    if (grouped) ImGui::TableSetupColumn("kv", 0, 0.0f, kKvColumn);
    for (int c = 0; c < scoreColumns; ++c)
        ImGui::TableSetupColumn(kColumns[c].header, ImGuiTableColumnFlags_PreferSortDescending, 0.0f, static_cast<ImGuiID>(c));
    ImGui::TableNextRow(ImGuiTableRowFlags_Headers);
    for (int c = 0; c < columns; ++c) {
        ImGui::TableSetColumnIndex(c);
        ImGui::TableHeader(ImGui::TableGetColumnName(c));
        const int score = c - 2 - (grouped ? 1 : 0);
        if (score >= 0) tooltip(kColumns[score].tip);
    }

    const auto kvOf = [&](int head) { return kvHeadOf(st, head); };
    const auto value = [&](int index, ImGuiID column) -> double {
        if (column == kLayerColumn) return index / s.heads;
        if (column == kHeadColumn) return index % s.heads;
        if (column == kKvColumn) return kvOf(index % s.heads);
        const ScoreColumn& c = kColumns[column];
        if (c.score == core::HeadScore::InductionTest) return testScores ? (*testScores)[static_cast<std::size_t>(index)] : 0.0;
        return core::headScore(s.stats[static_cast<std::size_t>(index)], c.score);
    };
    // Sorted again only when the sort or the numbers changed (a stable sort: ties keep layer, head order).
    ImGuiTableSortSpecs* specs = ImGui::TableGetSortSpecs();
    const ImGuiID sortColumn = specs && specs->SpecsCount > 0 ? specs->Specs[0].ColumnUserID : static_cast<ImGuiID>(kLayerColumn);
    const bool descending = specs && specs->SpecsCount > 0 && specs->Specs[0].SortDirection == ImGuiSortDirection_Descending;
    std::uint64_t sortKey = 1469598103934665603ULL;
    for (const std::uint64_t v :
         {static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(s.key->run)), s.key->data, static_cast<std::uint64_t>(sortColumn),
          static_cast<std::uint64_t>(descending), static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(testScores))})
        sortKey = (sortKey ^ v) * 1099511628211ULL;
    if (sortKey != m_sortedFor || m_rows.size() != s.stats.size() || (specs && specs->SpecsDirty)) {
        m_rows.resize(s.stats.size());
        std::iota(m_rows.begin(), m_rows.end(), 0);
        std::stable_sort(m_rows.begin(), m_rows.end(), [&](int a, int b) {
            const double va = value(a, sortColumn), vb = value(b, sortColumn);
            return descending ? va > vb : va < vb;
        });
        m_sortedFor = sortKey;
        if (specs) specs->SpecsDirty = false;
    }

    // Only the rows in view are drawn (1,200 for GPT-2 XL).
    const int selectedLayer = layerCount(st) > 0 ? st.scenario.layer - s.firstLayer : 0;
    ImGuiListClipper clipper;
    clipper.Begin(static_cast<int>(m_rows.size()));
    while (clipper.Step())
        for (int r = clipper.DisplayStart; r < clipper.DisplayEnd; ++r) {
            const int index = m_rows[static_cast<std::size_t>(r)];
            const int layer = index / s.heads, head = index % s.heads;
            ImGui::TableNextRow();
            ImGui::TableSetColumnIndex(0);
            char label[32];
            std::snprintf(label, sizeof label, "%d##row%d", s.firstLayer + layer + 1, index);
            const bool selected = layer == selectedLayer && head == st.view.selectedHead;
            if (ImGui::Selectable(label, selected, ImGuiSelectableFlags_SpanAllColumns))
                ctx.actions.emit(action::SelectLayerHead{s.firstLayer + layer, head});
            ImGui::TableSetColumnIndex(1);
            ImGui::Text("%d", head + 1);
            int c = 2;
            if (grouped) {
                ImGui::TableSetColumnIndex(c++);
                ImGui::Text("%d", kvOf(head) + 1);
            }
            for (int k = 0; k < scoreColumns; ++k) {
                ImGui::TableSetColumnIndex(c++);
                ImGui::Text("%.3f", value(index, static_cast<ImGuiID>(k)));
            }
        }
    ImGui::EndTable();
    ImGui::End();
}

}  // namespace attnviz::app
