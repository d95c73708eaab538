#include "core/attention/rollout.hpp"

#include "core/attention/kernels.hpp"
#include "core/attention/tasks.hpp"
#include "core/base/error.hpp"
#include "core/base/format.hpp"

#include <algorithm>

namespace attnviz::core {

const char* rolloutHeadsName(RolloutHeads heads) { return heads == RolloutHeads::Max ? "max" : "mean"; }

RolloutHeads parseRolloutHeads(const std::string& name, const std::string& where) {
    if (name == "mean") return RolloutHeads::Mean;
    if (name == "max") return RolloutHeads::Max;
    throw InputError(where, "unknown rule " + quoteValue(name) + " for the heads (known: mean, max)");
}

std::string rolloutRule(const RolloutOptions& options) {
    std::string rule = "R = Â^L … Â^1, Â = ½·";
    rule += options.heads == RolloutHeads::Max ? "max" : "mean";
    rule += " over heads of A + ½·I, rows renormalised to 1";
    if (options.skipFirstKey) rule += "; first key left out (each head's rows renormalised over keys 2 … T first)";
    return rule;
}

Mat rolloutLayer(const AttentionMaps& maps, int layer, const RolloutOptions& options) {
    const Eigen::Index t = maps.queries;
    Mat fused = Mat::Zero(t, t);
    const auto fuse = [&](const auto& a, int h) {
        if (options.heads == RolloutHeads::Mean) fused += a;
        else if (h == 0) fused = a;
        else fused = fused.cwiseMax(a);
    };
    // 1. heads: each head's rows (renormalised past the first key if asked), then mean or max
    Mat made;  // a map made on demand
    for (int h = 0; h < maps.heads; ++h) {
        const MatRef a = maps.map(layer, h, made);
        if (!options.skipFirstKey || t < 2) fuse(a, h);
        else fuse(withoutFirstKey(a), h);  // only then is a head copied
        maps.finished(layer, h);
    }
    if (options.heads == RolloutHeads::Mean) fused /= static_cast<float>(maps.heads);
    // 2. residual: ½ Ā + ½ I, rows to 1
    fused *= 0.5f;
    fused.diagonal().array() += 0.5f;
    for (Eigen::Index i = 0; i < t; ++i) fused.row(i) /= fused.row(i).sum();  // ≥ ½ on the diagonal
    return fused;
}

Mat attentionRollout(const AttentionMaps& maps, int last, const RolloutOptions& options) {
    if (!maps) throw InputError("rollout", "there are no attention maps to roll out");
    if (maps.queries != maps.keys)
        throw InputError("rollout", "needs self-attention (every query a key), but the maps are " + shapeString(maps.queries, maps.keys));
    if (last < 0 || last >= maps.layers)
        throw InputError("rollout", "layer " + std::to_string(maps.firstLayer + last) + " is not one of the maps' layers " +
                                        std::to_string(maps.firstLayer) + " … " + std::to_string(maps.firstLayer + maps.layers - 1));
    const Eigen::Index t = maps.queries;
    Mat joint = rolloutLayer(maps, 0, options);
    Mat next(t, t);
    PackedColumns packed;
    constexpr Eigen::Index kBlock = 96;  // rows per product: a multiple of the kernels' six-row tiles
    const Eigen::Index blocks = (t + kBlock - 1) / kBlock;
    // 3. flow: R ← Âˡ · R, layer by layer; a causal Âˡ is zero past the diagonal, so each block of
    // rows reads only the keys its last row may see
    for (int l = 1; l <= last; ++l) {
        const Mat layer = rolloutLayer(maps, l, options);
        const bool causal = maps.layerSettings(l).causal;
        packColumns(joint, packed);
        forEachTask(blocks, [&](Eigen::Index b) {
            const Eigen::Index r0 = b * kBlock, rows = std::min(kBlock, t - r0);
            weighValues(layer.middleRows(r0, rows), joint, packed, next.middleRows(r0, rows), causal ? r0 : -1);
        });
        joint.swap(next);
    }
    return joint;
}

}  // namespace attnviz::core
