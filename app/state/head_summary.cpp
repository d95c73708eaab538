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
    s.stats = core::allHeadStats(maps, {.skipFirstKey = state.view.skipFirstKey});
    if (state.view.skipFirstKey) s.everyKey = core::allHeadStats(maps);
    const Eigen::Index longest = std::max<Eigen::Index>({1, maps.queries, maps.keys});
    s.factor = static_cast<int>((longest + kThumbnailTexels - 1) / kThumbnailTexels);
    s.side = core::pooledSize(maps.queries, s.factor);
    s.sideKeys = core::pooledSize(maps.keys, s.factor);
    const auto size = static_cast<std::size_t>(s.side * s.sideKeys);
    s.means.resize(size * static_cast<std::size_t>(maps.count()));
    s.maxima.resize(s.means.size());
    const int count = maps.count();
#pragma omp parallel for schedule(dynamic)
    for (int k = 0; k < count; ++k) {
        const int layer = k / maps.heads, head = k % maps.heads;
        std::vector<float> texels;
        const core::MatRef w = maps.weights(layer, head);
        const core::Settings& settings = maps.layerSettings(layer);
        core::poolBlocks(w, settings, s.factor, core::BlockPooling::Mean, texels);
        std::copy(texels.begin(), texels.end(), s.means.begin() + static_cast<std::ptrdiff_t>(size * static_cast<std::size_t>(k)));
        core::poolBlocks(w, settings, s.factor, core::BlockPooling::Max, texels);
        std::copy(texels.begin(), texels.end(), s.maxima.begin() + static_cast<std::ptrdiff_t>(size * static_cast<std::size_t>(k)));
        maps.finished(layer, head);
    }
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
