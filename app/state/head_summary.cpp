#include "app/state/head_summary.hpp"

#include <algorithm>

namespace attnviz::app {

int shownMapLayer(const AppState& state) { return layerCount(state) > 0 ? state.scenario.layer : 0; }

PassKey headSummaryKey(const AppState& state) {
    PassKey key = passKey(state);
    key.skipFirstKey = state.view.skipFirstKey;
    return key;
}

bool headSummaryCurrent(const AppState& state) { return state.headSummary.current(headSummaryKey(state)); }

bool summarizeHeads(AppState& state) {
    if (headSummaryCurrent(state)) return true;
    const core::AttentionMaps maps = attentionMaps(state);
    if (!maps) return false;
    HeadSummary s;
    s.version = state.headSummary.version;
    s.restart(headSummaryKey(state));
    s.layers = maps.layers;
    s.heads = maps.heads;
    s.firstLayer = maps.firstLayer;
    s.queries = maps.queries;
    s.keys = maps.keys;
    const Eigen::Index longest = std::max<Eigen::Index>({1, maps.queries, maps.keys});
    s.factor = static_cast<int>((longest + kThumbnailTexels - 1) / kThumbnailTexels);
    core::HeadSweep sweep = core::sweepHeads(
        maps, {.stats = {.skipFirstKey = state.view.skipFirstKey}, .everyKey = state.view.skipFirstKey, .factor = s.factor});
    s.stats = std::move(sweep.stats);
    s.everyKey = std::move(sweep.everyKey);
    s.side = sweep.side;
    s.sideKeys = sweep.sideKeys;
    s.means = std::move(sweep.means);
    s.maxima = std::move(sweep.maxima);
    if (const core::ImportedAttention* file = mapsFile(state); file && file->changed())
        return false;  // read partly as zeros: the last summary stays
    for (const float v : s.means)
        if (!core::isMaskedTexel(v)) s.largestMean = std::max(s.largestMean, v);
    for (const float v : s.maxima)
        if (!core::isMaskedTexel(v)) s.largestMax = std::max(s.largestMax, v);
    state.headSummary = std::move(s);
    return true;
}

}  // namespace attnviz::app
