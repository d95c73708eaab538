#include "app/views/head_view_lines.hpp"

#include "app/state/head_summary.hpp"
#include "app/state/head_view.hpp"

namespace attnviz::app {
namespace {

HeadViewLines::Key keyOf(const AppState& state, const core::AttentionMaps& maps) {
    return {headSummaryKey(state), headViewLayer(state, maps), maps.queries, headViewHeads(state), state.view.viewTokens};
}

bool drawable(const AppState& state, const core::AttentionMaps& maps) {
    return maps && maps.queries == maps.keys && maps.heads == state.model.heads;
}

}  // namespace

bool refreshHeadViewLines(AppState& state) {
    const core::AttentionMaps maps = attentionMaps(state);
    if (!drawable(state, maps)) return false;
    HeadViewLinesView& view = state.derived.get<HeadViewLinesView>();
    const HeadViewLines::Key key = keyOf(state, maps);
    if (view.current(key)) return true;
    HeadViewLines& made = view.remake(key);
    made.lines = core::headLines(maps, key.layer, key.heads, {}, core::HeadLineRule{});
    if (key.tokens.size() > 1) made.sums = core::summedAttention(maps, key.layer, key.heads, key.tokens);
    return true;
}

const HeadViewLines* shownHeadViewLines(const AppState& state) {
    const HeadViewLinesView* view = state.derived.find<HeadViewLinesView>();
    if (!view) return nullptr;
    const core::AttentionMaps maps = attentionMaps(state);
    return drawable(state, maps) && view->current(keyOf(state, maps)) ? &view->value : nullptr;
}

}  // namespace attnviz::app
