#include "core/models/run_maps.hpp"

#include "core/text/tokenizer.hpp"

#include <optional>
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

std::vector<std::uint8_t> tokenKinds(const decoder::Checkpoint& model, const std::vector<int>& ids) {
    const ModelTokenizer& tokenizer = model.tokenizer();
    const std::optional<int> mask = tokenizer.maskId();
    std::vector<std::uint8_t> kinds(ids.size(), 0);
    for (std::size_t i = 0; i < ids.size(); ++i) {
        const int id = ids[i];
        if (!tokenizer.hasId(id)) continue;
        if (tokenizer.isSpecial(id)) {
            if (i > 0 && id != mask) kinds[i] = kSeparatorToken;
        } else if (isPunctuation(tokenizer.tokenBytes(id))) {
            kinds[i] = kPunctuationToken;
        }
    }
    return kinds;
}

std::vector<std::uint8_t> punctuationKinds(const std::vector<std::string>& labels) {
    std::vector<std::uint8_t> kinds;
    kinds.reserve(labels.size());
    for (const std::string& label : labels) kinds.push_back(isPunctuation(label) ? kPunctuationToken : 0);
    return kinds;
}

}  // namespace attnviz::core
