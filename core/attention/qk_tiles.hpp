// One head's weights made again from what they are made of: its queries and keys as the scores
// see them, and each query's largest score and log-sum of an online softmax. A pass that keeps no
// map (decoder::mapWeightTiles) and a file of queries and keys (ImportedAttention) hand the same
// tiles to the same readers (TileSink) through weightTiles.
#pragma once

#include "core/attention/attention_maps.hpp"
#include "core/base/matrix.hpp"

#include <vector>

namespace attnviz::core {

// How a head's weights are made from its scores s_ij = q_i · k_j: A_ij = exp(scale · (s_ij −
// top_i) − sum_i) over the keys query i reads, 0 elsewhere. A causal query reads keys j ≤ i, and
// with a window only i − j < window; a query of a non-causal map reads every key. `hidden`: keys no
// query reads (ascending).
struct QkMask {
    float scale = 1;
    bool causal = true;
    int window = 0;
    const std::vector<int>* hidden = nullptr;
    float softcap = 0;  // the scores soft-capped first (capScores); top and sum are of the capped scores
};

// The keys [lo, hi) query i reads of `keys` (before the hidden ones are left out): keyBand's.
KeyBand readableKeys(const QkMask& mask, Eigen::Index i, Eigen::Index keys);

// The rows a block of a tiled map holds (TileSink's), and the keys of its tiles.
inline constexpr Eigen::Index kWeightTileRows = 96;

// The keys [first, end) that rows [r0, r0 + n) read of keys [k0, k1) (out of `keys`), first
// rounded down to a tile's edge (kAttentionTileKeys): what weightTiles' `k` must hold.
struct KeyRange {
    Eigen::Index first = 0, end = 0;
};
KeyRange tileKeyRange(const QkMask& mask, Eigen::Index keys, Eigen::Index r0, Eigen::Index n, Eigen::Index k0, Eigen::Index k1);

// Rows [r0, r0 + q.rows()) of the map, keys [k0, k1) asked for, handed to `sink` in TileSink's
// order: blocks of kWeightTileRows rows, each block's tiles of kAttentionTileKeys keys from the
// last down, each weight with its log. q: the rows' queries; k: keys range.first … range.end − 1
// (tileKeyRange); top and sum: indexed by query (a query whose sum is not finite reads no key:
// its row is 0). `keys`: the map's keys.
void weightTiles(const MatRef& q, const MatRef& k, KeyRange range, const float* top, const float* sum, const QkMask& mask,
                 Eigen::Index keys, Eigen::Index r0, Eigen::Index k0, Eigen::Index k1, TileSink& sink);

// Each query's largest score top_i over the keys it reads and sum_i = log Σ_j exp(scale · (s_ij −
// top_i)), a tile of keys at a time with an online softmax (no row of scores is ever whole): what
// weightTiles makes the weights from, so that each row sums to 1. q: queries first … first +
// q.rows() − 1; k: keys 0 … k.rows() − 1 (at least those the queries read), of a map of `keys`
// keys; top and sum hold q.rows() floats. A query left with no key gets top 0 and sum −∞. False
// when a score is not finite.
bool logSumExp(const MatRef& q, const MatRef& k, const QkMask& mask, Eigen::Index keys, Eigen::Index first, float* top, float* sum);

// A sink that writes the tiles into rows [r0, r0 + out.rows()) of a map: out [n, keys], zero
// where no tile reached.
class RowsSink : public TileSink {
public:
    RowsSink(const Eigen::Ref<Mat>& out, Eigen::Index r0) : m_out(out), m_r0(r0) { m_out.setZero(); }
    void tile(const MatRef& w, const MatRef* logs, Eigen::Index r0, Eigen::Index c0) override;
    void rowsDone(Eigen::Index, Eigen::Index) override {}

private:
    Eigen::Ref<Mat> m_out;
    Eigen::Index m_r0;
};

}  // namespace attnviz::core
