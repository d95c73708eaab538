#include "app/state/head_summary.hpp"

#include "core/text/tokenizer.hpp"

#include <algorithm>

namespace attnviz::app {

core::AttentionMaps attentionMaps(const AppState& state) {
    core::AttentionMaps maps;
    if (state.loaded) {
        const core::decoder::Run& run = *state.loaded.run;
        const core::decoder::Config& config = state.loaded.checkpoint->config();
        maps.layers = run.layerCount();
        maps.heads = run.headCount();
        maps.queries = maps.keys = run.tokens();
        maps.ids = run.ids;
        maps.labels.reserve(state.loaded.labels.size());
        for (const std::string& label : state.loaded.labels) maps.labels.push_back(core::visibleToken(label));
        for (int l = 0; l < maps.layers; ++l) {
            core::Settings settings;
            settings.causal = true;
            settings.window = config.window(l);
            maps.settings.push_back(settings);
        }
        if (config.nKvHead != config.nHead)
            for (int h = 0; h < maps.heads; ++h) maps.kvHead.push_back(config.kvHeadOf(h));
        const core::decoder::Run* pass = &run;
        maps.weights = [pass](int layer, int head) { return core::MatRef(pass->weights(layer, head)); };
        return maps;
    }
    if (!weightsFresh(state, -1) || state.forward.heads.empty()) return maps;
    maps.layers = 1;
    maps.heads = static_cast<int>(state.forward.heads.size());
    maps.queries = state.model.tq();
    maps.keys = state.model.tk();
    maps.labels = state.keyLabels;
    maps.ids = core::idsOfLabels(state.model.keyTokens);
    maps.settings = {state.settings};
    if (state.model.kvHeads > 0)
        for (int h = 0; h < maps.heads; ++h) maps.kvHead.push_back(state.model.kvHeadOf(h));
    const core::Forward* forward = &state.forward;
    maps.weights = [forward](int, int head) { return core::MatRef(forward->heads[static_cast<std::size_t>(head)].weights); };
    return maps;
}

HeadSummary::Key headSummaryKey(const AppState& state) {
    if (state.loaded) return {state.loaded.run.get(), 0, state.view.skipFirstKey};
    return {nullptr, state.dataVersion, state.view.skipFirstKey};
}

bool headSummaryCurrent(const AppState& state) { return state.headSummary.key == headSummaryKey(state); }

bool summarizeHeads(AppState& state) {
    if (headSummaryCurrent(state)) return true;
    const core::AttentionMaps maps = attentionMaps(state);
    if (!maps) return false;
    HeadSummary s;
    s.key = headSummaryKey(state);
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
    }
    for (const float v : s.means)
        if (!core::isMaskedTexel(v)) s.largestMean = std::max(s.largestMean, v);
    for (const float v : s.maxima)
        if (!core::isMaskedTexel(v)) s.largestMax = std::max(s.largestMax, v);
    state.headSummary = std::move(s);
    return true;
}

}  // namespace attnviz::app
