#include "core/models/pass_maps.hpp"

#include "core/text/tokenizer.hpp"

namespace attnviz::core {

AttentionMaps passMaps(const LoadedModel& loaded) {
    AttentionMaps maps;
    const decoder::Run& run = *loaded.run;
    const decoder::Config& config = loaded.checkpoint->config();
    maps.layers = run.layerCount();
    maps.heads = run.headCount();
    maps.queries = maps.keys = run.tokens();
    maps.ids = run.ids;
    maps.labels.reserve(loaded.labels.size());
    for (const std::string& label : loaded.labels) maps.labels.push_back(visibleToken(label));
    for (int l = 0; l < maps.layers; ++l) {
        Settings settings;
        settings.causal = true;
        settings.window = config.window(l);
        maps.settings.push_back(settings);
    }
    if (config.nKvHead != config.nHead)
        for (int h = 0; h < maps.heads; ++h) maps.kvHead.push_back(config.kvHeadOf(h));
    const decoder::Run* pass = &run;
    maps.weights = [pass](int layer, int head) { return MatRef(pass->weights(layer, head)); };
    return maps;
}

AttentionMaps forwardMaps(const Model& model, const Forward& forward, const Settings& settings, std::vector<std::string> keyLabels) {
    AttentionMaps maps;
    maps.layers = 1;
    maps.heads = static_cast<int>(forward.heads.size());
    maps.queries = model.tq();
    maps.keys = model.tk();
    maps.labels = std::move(keyLabels);
    maps.ids = idsOfLabels(model.keyTokens);
    maps.settings = {settings};
    if (model.kvHeads > 0)
        for (int h = 0; h < maps.heads; ++h) maps.kvHead.push_back(model.kvHeadOf(h));
    const Forward* pass = &forward;
    maps.weights = [pass](int, int head) { return MatRef(pass->heads[static_cast<std::size_t>(head)].weights); };
    return maps;
}

}  // namespace attnviz::core
