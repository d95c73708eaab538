// Every layer × head's attention weights over one input, as the views of many heads read them
// (the model view, the head statistics, the head view, rollout), whatever made them: a
// checkpoint's own pass (every layer), a scenario's forward pass (one layer of heads), or maps
// computed elsewhere. The maps are views: whoever builds an AttentionMaps keeps what it reads
// alive while it is used.
#pragma once

#include "core/attention/attention.hpp"
#include "core/base/matrix.hpp"

#include <functional>
#include <string>
#include <vector>

namespace attnviz::core {

struct AttentionMaps {
    int layers = 0, heads = 0;
    Eigen::Index queries = 0, keys = 0;  // every map is [queries, keys]; queries are the first keys
    int firstLayer = 0;                  // the number of the first layer shown (a scenario of one layer of a model: that layer)
    std::vector<int> ids;                // the keys' token ids (equal tokens, equal ids); empty when there are none
    std::vector<std::string> labels;     // the keys' labels as drawn
    std::vector<Settings> settings;      // per layer: the mask the weights were made under
    std::vector<int> kvHead;             // per query head: the key/value head it reads (grouped-query); empty: its own
    std::function<MatRef(int layer, int head)> weights;
    // Optional: the caller is done with the map weights(layer, head) gave (maps read from a mapped
    // file then free that map's widened copy or give its pages back). Null: nothing to do. The
    // sweeps over every map call it; a reader that does not keeps the map until the maps die.
    std::function<void(int layer, int head)> done;

    explicit operator bool() const { return layers > 0 && heads > 0 && weights != nullptr; }
    int count() const { return layers * heads; }
    void finished(int layer, int head) const {
        if (done) done(layer, head);
    }
    // The index of (layer, head) in a [layers × heads] list, layer-major.
    int index(int layer, int head) const { return layer * heads + head; }
    const Settings& layerSettings(int layer) const { return settings[static_cast<std::size_t>(layer)]; }
};

// Token ids for labels that have none (a scenario's words): equal labels get equal ids, the
// index of their first occurrence.
std::vector<int> idsOfLabels(const std::vector<std::string>& labels);

// How a map is shrunk to a thumbnail: the mean of each block's readable weights (what a long
// map's structure shows as), or its largest weight (a single sharp weight stays visible).
enum class BlockPooling : std::uint8_t { Mean, Max };

// The map at 1/factor resolution: ⌈T_q/f⌉ × ⌈T_k/f⌉ texels, row-major, a block's mean or largest
// readable weight, or kMaskedTexel when the mask blocks every cell of the block. Max is
// poolTexels.
void poolBlocks(const MatRef& weights, const Settings& settings, int factor, BlockPooling pooling, std::vector<float>& out);

}  // namespace attnviz::core
