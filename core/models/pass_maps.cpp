#include "core/models/pass_maps.hpp"

#include "core/models/run_maps.hpp"
#include "core/text/tokenizer.hpp"

#include <utility>

namespace attnviz::core {

AttentionMaps passMaps(const LoadedModel& loaded) {
    std::vector<std::string> labels;
    labels.reserve(loaded.labels.size());
    for (const std::string& label : loaded.labels) labels.push_back(visibleToken(label));
    AttentionMaps maps = runMaps(*loaded.run, loaded.checkpoint->config(), std::move(labels));
    maps.kinds = tokenKinds(*loaded.checkpoint, loaded.run->ids);
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
    maps.kinds = punctuationKinds(model.keyTokens);
    maps.settings = {settings};
    if (model.kvHeads > 0)
        for (int h = 0; h < maps.heads; ++h) maps.kvHead.push_back(model.kvHeadOf(h));
    const Forward* pass = &forward;
    maps.weights = [pass](int, int head) { return MatRef(pass->heads[static_cast<std::size_t>(head)].weights); };
    return maps;
}

}  // namespace attnviz::core
