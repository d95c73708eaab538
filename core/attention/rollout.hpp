// Attention rollout (Abnar & Zuidema 2020, "Quantifying Attention Flow in Transformers"): how much
// each input token flows into each position after several layers, if a layer's heads were its
// only mixing and the residual stream carried as much as the attention.
//
// For layer l with heads' weights Aˡₕ [T, T] (row = query, col = key; a blocked key holds 0):
//   1. heads    Āˡ = meanₕ Aˡₕ (or the elementwise maxₕ Aˡₕ);
//   2. residual Âˡ = ½ Āˡ + ½ I, each row renormalised to sum 1;
//   3. flow     R = Âᴸ · … · Â¹ (the first layer rightmost): row i of R is how much each input
//               token j flows into position i at layer L.
// With the first key left out, each head's row i is first renormalised over the keys j ≥ 1
// (a row that reads no key past the first stays 0, so its Â row is the identity's).
// What rollout ignores: the values (a head that attends to a token but reads a zero value still
// "moves" it), the MLPs, LayerNorm, and the residual's real weight against the attention's (½ is
// a guess, the same in every layer).
#pragma once

#include "core/attention/attention_maps.hpp"
#include "core/base/matrix.hpp"

#include <cstdint>
#include <string>

namespace attnviz::core {

// How a layer's heads become one map: their mean (Abnar & Zuidema's default), or the largest
// weight any head gives each cell (their "max" fusion: a flow any one head carries is kept).
enum class RolloutHeads : std::uint8_t { Mean, Max };
const char* rolloutHeadsName(RolloutHeads heads);  // "mean", "max"
// Throws InputError(where, …) on an unknown name.
RolloutHeads parseRolloutHeads(const std::string& name, const std::string& where);

struct RolloutOptions {
    RolloutHeads heads = RolloutHeads::Mean;
    bool skipFirstKey = false;  // each head's rows renormalised over keys j ≥ 1 before the heads are fused
    bool operator==(const RolloutOptions&) const = default;
};

// The rule in words, for a caption, a tooltip or an export ("R = Â^L … Â^1, Â = ½·mean over heads
// of A + ½·I, rows renormalised to 1").
std::string rolloutRule(const RolloutOptions& options);

// One layer's Â: [T, T], rows summing to 1 (steps 1 and 2 above).
Mat rolloutLayer(const AttentionMaps& maps, int layer, const RolloutOptions& options);

// R = Â^last … Â^0 (layers 0 … last of the maps, counted from the maps' first): [T, T].
// Throws InputError("rollout", …) when the maps are not square (rollout needs self-attention:
// every query is also a key) or `last` is not one of their layers. A causal layer's product reads
// only the keys at or before each row (the kernels' causal A·V), so a causal model's R costs about
// a third of the dense product.
Mat attentionRollout(const AttentionMaps& maps, int last, const RolloutOptions& options);

}  // namespace attnviz::core
