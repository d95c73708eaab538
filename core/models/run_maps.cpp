#include "core/models/run_maps.hpp"

#include <utility>

namespace attnviz::core {

AttentionMaps runMaps(const decoder::Run& run, const decoder::Config& config, std::vector<std::string> labels) {
    AttentionMaps maps;
    maps.layers = run.layerCount();
    maps.heads = run.headCount();
    maps.queries = maps.keys = run.tokens();
    maps.ids = run.ids;
    maps.labels = std::move(labels);
    for (int l = 0; l < maps.layers; ++l) {
        Settings settings;
        settings.causal = config.causal;
        settings.window = config.window(l);
        settings.paddedKeys = run.hiddenTokens();  // a what-if's hidden tokens: blocked in every layer
        maps.settings.push_back(settings);
    }
    if (config.nKvHead != config.nHead)
        for (int h = 0; h < maps.heads; ++h) maps.kvHead.push_back(config.kvHeadOf(h));
    const decoder::Run* pass = &run;
    if (run.keepsWeights()) {
        maps.weights = [pass](int layer, int head) { return MatRef(pass->weights(layer, head)); };
    } else {
        maps.rows = [pass, config](int layer, int head, Eigen::Index r0, const Eigen::Ref<Mat>& out) {
            decoder::mapWeightRows(*pass, config, layer, head, r0, out);
        };
        maps.tiles = [pass, config](int layer, int head, Eigen::Index r0, Eigen::Index n, Eigen::Index k0, Eigen::Index k1,
                                    TileSink& sink) { decoder::mapWeightTiles(*pass, config, layer, head, r0, n, sink, k0, k1); };
    }
    return maps;
}

}  // namespace attnviz::core
