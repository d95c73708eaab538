#include "app/panels/stats_panel.hpp"

#include "app/state/head_summary.hpp"
#include "app/state/model_view.hpp"
#include "app/state/source.hpp"
#include "app/widgets/charts.hpp"
#include "app/widgets/text.hpp"
#include "core/base/format.hpp"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

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
    {core::HeadScore::Next, "next", "Mean weight on the key just after the query (an encoder's heads; Clark et al. 2019)"},
    {core::HeadScore::Separator, "separator",
     "Mean mass on special tokens after the first ([SEP], </s>, an end of turn): where many of BERT's heads rest (Clark et al. 2019)"},
    {core::HeadScore::Punctuation, "punct.", "Mean mass on tokens of punctuation alone"},
    {core::HeadScore::InductionTest, "induction test",
     "Mean weight from a token's second copy to the token after its first (repeated random tokens)"},
    {core::HeadScore::RetrievalTest, "retrieval",
     "Mean weight from a segment repeated at the end of a long filler to the token after its first copy, over every length and "
     "depth of the retrieval test (Wu et al. 2024)"},
};
enum : int { kLayerColumn = 100, kHeadColumn, kKvColumn };

// The retrieval test's lengths when its longest is `longest`: powers of two from 1,024 up to it
// and the longest itself.
std::vector<int> retrievalLengths(int longest) {
    std::vector<int> lengths;
    for (int l = 1024; l < longest; l *= 2) lengths.push_back(l);
    lengths.push_back(longest);
    return lengths;
}

std::string lengthLabel(int tokens) { return tokens % 1024 == 0 ? std::to_string(tokens / 1024) + "k" : core::groupedNumber(tokens); }

// The depth × length grid of the selected head's retrieval scores (the layer's mean when no head
// is selected), `height` pixels high.
void retrievalGrid(const AppState& st, const core::RetrievalScores& r, float height) {
    const int layer = st.scenario.layer, head = st.view.selectedHead;
    if (layer < 0 || layer >= r.layers) return;
    const std::size_t lengths = r.settings.lengths.size(), depths = r.settings.depths.size();
    std::vector<double> grid(lengths * depths, 0.0);  // rows: depths; columns: lengths
    for (std::size_t li = 0; li < lengths; ++li)
        for (std::size_t di = 0; di < depths; ++di) {
            double v = 0;
            if (head >= 0 && head < r.heads) v = r.mass[r.index(li, di, layer, head)];
            else {
                for (int h = 0; h < r.heads; ++h) v += r.mass[r.index(li, di, layer, h)];
                v /= r.heads;
            }
            grid[di * lengths + li] = v;
        }
    widgets::GridLabels labels;
    for (const double d : r.settings.depths) labels.rows.push_back(core::formatFixed(d * 100.0, 0) + " %");
    for (const int l : r.settings.lengths) labels.cols.push_back(lengthLabel(l));
    labels.rowCaption = "depth";
    labels.colCaption = "tokens";
    const std::string title = head >= 0 ? "Retrieval · layer " + std::to_string(layer + 1) + " · head " + std::to_string(head + 1)
                                        : "Retrieval · layer " + std::to_string(layer + 1) + " · mean of its heads";
    ImGui::TextUnformatted(widgets::fitLabel(title, ImGui::GetContentRegionAvail().x).c_str());
    const ImVec2 at = ImGui::GetCursorScreenPos();
    const float w = std::min(ImGui::GetContentRegionAvail().x, ImGui::GetFontSize() * 4.0f * static_cast<float>(lengths + 1));
    ImGui::InvisibleButton("##retrieval grid", ImVec2(std::max(w, 1.0f), height));
    const int hovered = widgets::gridChart(ImGui::GetWindowDrawList(), at, ImVec2(at.x + w, at.y + height), grid, static_cast<int>(depths),
                                           static_cast<int>(lengths), labels, st.view.colormap, 0.0f, 1.0f);
    if (hovered >= 0 && ImGui::IsItemHovered()) {
        const auto li = static_cast<std::size_t>(hovered) % lengths, di = static_cast<std::size_t>(hovered) / lengths;
        ImGui::SetTooltip(
            "%s tokens, the segment at %.0f %% of the filler: mean weight %.3f from the repeat to the token after "
            "the first copy",
            core::groupedNumber(r.settings.lengths[li]).c_str(), r.settings.depths[di] * 100.0, grid[di * lengths + li]);
    }
}

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
        ImGui::BeginDisabled(!capabilities(st).readsBack);
        if (ImGui::Button(testScores ? "Induction test again" : "Induction test")) ctx.actions.emit(action::StartInductionTest{});
        ImGui::EndDisabled();
        tooltip(capabilities(st).readsBack
                    ? "Runs the model on 10 sequences of 50 random tokens repeated twice and scores each head by its weight from a "
                      "token's second copy to the token after its first copy. Your sentence stays as it is."
                : capabilities(st).ownPass   ? "Needs a decoder: the induction and retrieval tests score heads reading back along "
                                               "the text, and this model reads every key in both directions."
                : capabilities(st).givenMaps ? "Needs a model: the test runs a checkpoint on its own random tokens, and imported attention "
                                               "has no model behind it (the duplicate and induction columns score your tokens)."
                                             : "Needs a model: the test runs the checkpoint on its own random tokens.");
        if (!test.error.empty() && test.checkpoint == checkpointOf(st))
            widgets::wrappedTextColored(ImVec4(1.0f, 0.45f, 0.4f, 1.0f), test.error);
    }

    // The retrieval test: the model's own runs on a segment repeated far from its first copy.
    const RetrievalSnapshot retrieval = st.retrieval->snapshot();
    const core::RetrievalScores* retrievalScores = retrievalTestScores(retrieval, checkpointOf(st));
    const core::LoadedModel* pass = checkpointPass(st);
    const int longestAllowed = pass ? longestTestInput(*pass->checkpoint, st.limits.maxTokens) : 0;
    // (Only for a model: the induction test's button says why a scenario or imported maps have none.)
    if (pass && retrieval.running) {
        widgets::sameLineIfFits(em * 10.0f);
        ImGui::ProgressBar(static_cast<float>(retrieval.fraction), ImVec2(std::min(em * 10.0f, ImGui::GetContentRegionAvail().x), 0),
                           "retrieval test…");
        widgets::sameLineIfFits(ImGui::CalcTextSize("Stop").x + ImGui::GetStyle().FramePadding.x * 2.0f);
        if (ImGui::Button("Stop##retrieval")) ctx.actions.emit(action::StopRetrievalTest{});
    } else if (pass && capabilities(st).readsBack) {
        const std::vector<int> choices = retrievalLengths(std::max(longestAllowed, 1));
        if (m_retrievalLongest <= 0 || m_retrievalLongest > choices.back())  // default: up to 8,192 tokens
            m_retrievalLongest = std::min(choices.back(), std::max(choices.front(), 8192));
        const char* label = retrievalScores ? "Retrieval test again" : "Retrieval test";
        widgets::sameLineIfFits(ImGui::CalcTextSize(label).x + ImGui::GetStyle().FramePadding.x * 2.0f);
        if (ImGui::Button(label)) {
            core::RetrievalSettings settings;
            settings.lengths = retrievalLengths(m_retrievalLongest);
            ctx.actions.emit(action::StartRetrievalTest{settings});
        }
        tooltip(
            "Writes a random segment of 16 tokens at 5 depths (0 %, 25 %, 50 %, 75 %, 100 %) of a filler of random tokens, "
            "repeats it at the end, and scores each head by its weight from the repeat to the token after the first copy "
            "(Wu et al. 2024: retrieval heads), at every length up to the one chosen. Your sentence stays as it is.");
        const float comboW = em * 6.5f;
        widgets::sameLineIfFits(comboW + ImGui::CalcTextSize("tokens").x);
        ImGui::SetNextItemWidth(comboW);
        if (ImGui::BeginCombo("tokens##retrieval", ("up to " + lengthLabel(m_retrievalLongest)).c_str())) {
            // 1k, 2k, 4k, … and the longest the model and the limit allow
            for (long long l = 1024;; l *= 2) {
                const auto longest = static_cast<int>(std::min<long long>(l, longestAllowed));
                if (ImGui::Selectable(("up to " + lengthLabel(longest)).c_str(), longest == m_retrievalLongest))
                    m_retrievalLongest = longest;
                if (longest == longestAllowed) break;
            }
            ImGui::EndCombo();
        }
        tooltip("The longest filler: the test runs at 1k, 2k, 4k, … tokens up to it, 5 passes each (at 32k a real model takes minutes).");
        if (!retrieval.error.empty() && retrieval.checkpoint == checkpointOf(st))
            widgets::wrappedTextColored(ImVec4(1.0f, 0.45f, 0.4f, 1.0f), retrieval.error);
    }
    if (retrievalScores) {
        // Its captions take about 3.6 lines; each depth's row at least half a line, else a note.
        const auto depths = static_cast<float>(retrievalScores->settings.depths.size());
        const float gridH = std::min(em * (1.5f * depths + 3.5f), ImGui::GetContentRegionAvail().y * 0.45f);
        if (gridH >= em * (0.5f * depths + 4.0f)) retrievalGrid(st, *retrievalScores, gridH);
        else
            widgets::wrappedTextColored(ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled),
                                        "The selected head's depth × length grid needs a taller panel; its mean is the retrieval column.");
    }

    // The table: the tests' columns once they have run.
    const bool grouped = groupedQuery(st);
    // next: an encoder's (a causal row never reads the key after it); separator: a checkpoint's
    // tokens (only a tokenizer knows its special tokens)
    const bool encoder = capabilities(st).ownPass && !capabilities(st).readsBack, tokens = checkpointOf(st) != nullptr;
    std::vector<int> shown;  // indices into kColumns
    for (int c = 0; c < static_cast<int>(std::size(kColumns)); ++c)
        if ((kColumns[c].score != core::HeadScore::InductionTest || testScores) &&
            (kColumns[c].score != core::HeadScore::RetrievalTest || retrievalScores) &&
            (kColumns[c].score != core::HeadScore::Next || encoder) && (kColumns[c].score != core::HeadScore::Separator || tokens))
            shown.push_back(c);
    const int scoreColumns = static_cast<int>(shown.size());
    const int columns = 2 + (grouped ? 1 : 0) + scoreColumns;
    const std::optional<std::vector<double>> retrievalMeans =
        retrievalScores ? std::optional(retrievalScores->headMeans(retrievalScores->mass)) : std::nullopt;
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
    for (const int c : shown)
        ImGui::TableSetupColumn(kColumns[c].header, ImGuiTableColumnFlags_PreferSortDescending, 0.0f, static_cast<ImGuiID>(c));
    ImGui::TableNextRow(ImGuiTableRowFlags_Headers);
    for (int c = 0; c < columns; ++c) {
        ImGui::TableSetColumnIndex(c);
        ImGui::TableHeader(ImGui::TableGetColumnName(c));
        const int score = c - 2 - (grouped ? 1 : 0);
        if (score >= 0) tooltip(kColumns[shown[static_cast<std::size_t>(score)]].tip);
    }

    const auto kvOf = [&](int head) { return kvHeadOf(st, head); };
    const auto value = [&](int index, ImGuiID column) -> double {
        if (column == kLayerColumn) return index / s.heads;
        if (column == kHeadColumn) return index % s.heads;
        if (column == kKvColumn) return kvOf(index % s.heads);
        const ScoreColumn& c = kColumns[column];
        if (c.score == core::HeadScore::InductionTest) return testScores ? (*testScores)[static_cast<std::size_t>(index)] : 0.0;
        if (c.score == core::HeadScore::RetrievalTest) return retrievalMeans ? (*retrievalMeans)[static_cast<std::size_t>(index)] : 0.0;
        return core::headScore(s.stats[static_cast<std::size_t>(index)], c.score);
    };
    // Sorted again only when the sort or the numbers changed (a stable sort: ties keep layer, head order).
    ImGuiTableSortSpecs* specs = ImGui::TableGetSortSpecs();
    const ImGuiID sortColumn = specs && specs->SpecsCount > 0 ? specs->Specs[0].ColumnUserID : static_cast<ImGuiID>(kLayerColumn);
    const bool descending = specs && specs->SpecsCount > 0 && specs->Specs[0].SortDirection == ImGuiSortDirection_Descending;
    std::uint64_t sortKey = 1469598103934665603ULL;
    for (const std::uint64_t v :
         {static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(s.key->run)), s.key->data, static_cast<std::uint64_t>(sortColumn),
          static_cast<std::uint64_t>(descending), static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(testScores)),
          static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(retrievalScores))})
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
            for (const int k : shown) {
                ImGui::TableSetColumnIndex(c++);
                ImGui::Text("%.3f", value(index, static_cast<ImGuiID>(k)));
            }
        }
    ImGui::EndTable();
    ImGui::End();
}

}  // namespace attnviz::app
