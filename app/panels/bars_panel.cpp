#include "app/panels/bars_panel.hpp"

#include "app/state/generation.hpp"
#include "app/state/rollout_view.hpp"
#include "app/state/shown_map.hpp"
#include "app/widgets/charts.hpp"
#include "app/widgets/text.hpp"
#include "core/attention/attention.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>
#include <vector>

namespace attnviz::app {

std::vector<int> smallMultiplePositions(int queries, int selected, int count) {
    std::vector<int> positions;
    const int n = std::min(count, queries);
    for (int k = 0; k < n; ++k)
        positions.push_back(n == 1 ? 0 : static_cast<int>(std::lround(k * (queries - 1) / static_cast<double>(n - 1))));
    if (std::find(positions.begin(), positions.end(), selected) == positions.end() && selected < queries) {
        positions.push_back(selected);
        std::sort(positions.begin(), positions.end());
    }
    positions.erase(std::unique(positions.begin(), positions.end()), positions.end());
    return positions;
}

namespace {

// Query q's weights over the keys for `head` (-1: the mean over heads), and which keys it may not see.
std::pair<std::vector<float>, std::vector<bool>> queryRow(const AppState& s, int head, int q) {
    const int tk = static_cast<int>(s.model.tk());
    std::vector<float> values(static_cast<std::size_t>(tk));
    std::vector<bool> blocked(static_cast<std::size_t>(tk));
    const core::Mat* flow = shownRollout(s);  // the rollout view: R's row q
    const core::Settings flowMask = flow ? rolloutMask(s) : core::Settings{};
    const core::Settings& mask = flow ? flowMask : s.settings;
    const core::Mat row = flow ? core::Mat(flow->row(q)) : shownRows(s, head, q, 1);  // a head's, the mean's, or R's row q
    std::vector<char> masked;
    core::blockedRow(mask, q, tk, masked);
    for (int j = 0; j < tk; ++j) {
        values[static_cast<std::size_t>(j)] = row(0, j);
        blocked[static_cast<std::size_t>(j)] = masked[static_cast<std::size_t>(j)] != 0;
    }
    return {values, blocked};
}

// `axisLargest` >= 0: the charts drawn together share the axis of their largest weight.
void queryBars(PanelContext& ctx, int head, int q, ImVec2 size, bool compact, float axisLargest = -1.0f) {
    const AppState& s = ctx.state;
    const int tk = static_cast<int>(s.model.tk());
    const auto [values, blocked] = queryRow(s, head, q);
    const ImVec2 min = ImGui::GetCursorScreenPos();
    widgets::BarChartStyle style;
    style.showValues = !compact || tk <= 12;
    style.showLabels = true;
    style.axisLargest = axisLargest;
    style.generatedFrom = static_cast<int>(generatedFrom(s));  // the keys a model generated, in amber
    // The query's own key is red when queries and keys are the same sequence.
    const int self = s.model.explicitQkv && s.model.tq() != s.model.tk() ? -1 : q;
    const int hovered = widgets::barChart(ImGui::GetWindowDrawList(), min, ImVec2(min.x + size.x, min.y + size.y), values, s.keyLabels,
                                          self, blocked, style);
    ImGui::Dummy(size);
    if (hovered >= 0 && ImGui::IsItemHovered()) {
        char value[48];
        std::snprintf(value, sizeof value, "%s%.4f",
                      blocked[static_cast<std::size_t>(hovered)] ? "masked, "
                      : s.view.rollout                           ? "R = "
                                                                 : "α = ",
                      values[static_cast<std::size_t>(hovered)]);
        constexpr std::size_t kQuote = widgets::kTooltipGlyphs / 2;  // the value after them always shows
        widgets::showTooltip("\"" + widgets::labelWithLength(s.queryLabels[static_cast<std::size_t>(q)], kQuote) + "\" → \"" +
                                 widgets::labelWithLength(s.keyLabels[static_cast<std::size_t>(hovered)], kQuote) + "\": " + value,
                             2 * widgets::kTooltipGlyphs);
    }
    if (ImGui::IsItemClicked()) ctx.actions.emit(action::SelectQuery{q});
}

}  // namespace

void BarsPanel::draw(PanelContext& ctx) {
    const AppState& s = ctx.state;
    const core::Mat* flow = shownRollout(s);
    const int head = s.view.rollout ? -1 : shownHead(s);
    if (!beginPanelFor(ctx, title(), head, true)) return;
    if (s.view.rollout && flow == nullptr) {
        widgets::flowTextDisabled(rolloutCurrent(s) ? "Rollout: " + s.rollout.why : std::string("Rollout: computing…"));
        ImGui::End();
        return;
    }
    const int q = s.view.selectedQuery;
    const bool multiples = s.view.smallMultiples;
    if (!s.view.presenter) {  // presenter mode shows no controls
        bool choice = multiples;
        if (ImGui::Checkbox("Small multiples", &choice)) ctx.actions.emit(action::SetSmallMultiples{choice});
        tooltip("Show several query positions at once, spread along the sentence, like the panel grid of seed 000 §39.6.");
        widgets::remarkIfFits(flow ? rolloutCaption(s) : headLabel(s, head));
        if (flow) tooltip(kRolloutIgnores);
    } else {
        widgets::flowTextDisabled(flow ? rolloutCaption(s) : headLabel(s, head), true);
    }
    widgets::remarkIfFits("· red = the query's own key");
    const core::Settings flowMask = flow ? rolloutMask(s) : core::Settings{};
    const core::Settings& mask = flow ? flowMask : s.settings;
    if (core::hasMask(mask)) widgets::remarkIfFits("· hatched = masked");

    const float lineH = ImGui::GetTextLineHeightWithSpacing();
    if (!multiples) {
        const core::RowStats stats = core::rowStats(flow ? core::Mat(flow->row(q)) : shownRows(s, head, q, 1));
        // The entropy's maximum: the uniform row over the keys this query may see.
        int allowed = 0;
        for (int j = 0; j < static_cast<int>(s.model.tk()); ++j) allowed += core::isBlocked(mask, q, j) ? 0 : 1;
        char buf[96];
        // A token's label can be longer than buf: composed as a string (shaped once, by flowText).
        widgets::flowText("Query " + std::to_string(q + 1) + " \"" +
                              widgets::fitLogical(s.queryLabels[static_cast<std::size_t>(q)],
                                                  std::min(ImGui::GetFontSize() * 12.0f, ImGui::GetContentRegionAvail().x * 0.3f)) +
                              "\"",
                          true);
        std::snprintf(buf, sizeof buf, "Σ = %.2f", stats.sum(0));
        widgets::flowText(buf);
        std::snprintf(buf, sizeof buf, "max = %.3f", stats.max(0));
        widgets::flowText(buf);
        std::snprintf(buf, sizeof buf, "entropy %.2f of %.2f nats", stats.entropy(0), std::log(static_cast<double>(std::max(1, allowed))));
        widgets::flowText(buf);
        if (ImGui::IsItemHovered())
            widgets::showTooltip("The row's entropy, and its largest possible value: log of the " + std::to_string(allowed) +
                                 " keys this query may attend to (a uniform row).");
        const ImVec2 avail = ImGui::GetContentRegionAvail();
        queryBars(ctx, head, q, ImVec2(avail.x, std::max(60.0f, avail.y - 4.0f)), false);
    } else {
        // As many charts as stay legible (each at least five lines tall), up to five.
        const ImVec2 avail = ImGui::GetContentRegionAvail();
        const float least = 5.0f * lineH;
        const int fit = std::clamp(static_cast<int>(avail.y / (least + lineH + 2.0f)), 1, 5);
        std::vector<int> positions = smallMultiplePositions(static_cast<int>(s.model.tq()), q, fit);
        if (static_cast<int>(positions.size()) > fit) positions = smallMultiplePositions(static_cast<int>(s.model.tq()), q, fit - 1);
        const float each =
            std::max(least * 0.6f, avail.y / static_cast<float>(positions.size()) - lineH - ImGui::GetStyle().ItemSpacing.y - 1.0f);
        float largest = 0.0f;  // one axis for every chart, so that their bars compare
        for (const int p : positions) {
            const auto [values, blocked] = queryRow(s, head, p);
            for (std::size_t j = 0; j < values.size(); ++j)
                if (!blocked[j]) largest = std::max(largest, values[j]);
        }
        for (int p : positions) {
            ImGui::TextColored(p == q ? ImVec4(0.94f, 0.27f, 0.27f, 1.0f) : ImGui::GetStyleColorVec4(ImGuiCol_Text), "Query %d \"%s\"",
                               p + 1, widgets::fitLabel(s.queryLabels[static_cast<std::size_t>(p)], avail.x * 0.8f).c_str());
            queryBars(ctx, head, p, ImVec2(avail.x, each), true, largest);
        }
    }
    ImGui::End();
}

}  // namespace attnviz::app
