// The attention's two T × T products, scores = q kᵀ and output = weights v, as register-tiled
// kernels.
//
// Eigen repacks kᵀ on every call, and the forward pass calls it once per block of query rows
// (so that the block's scores are still in cache for the softmax and A·V). Here k is packed once
// per head, into panels of 16 keys, and each 6 × 16 tile of scores is accumulated in AVX2
// registers over d_k: ~17% faster than Eigen for the scores of a head at T = 2048, d_k = 64.
// A·V likewise: Eigen repacks v for every block of rows, here v is packed once per head, into
// panels of 16 columns, and a causal block reads only the keys its rows can see.
// Without AVX2 and FMA (a portable build) the same functions use Eigen's product.
#pragma once

#include "core/matrix.hpp"

#include <vector>

namespace attnviz::core {

// k: [T_k, d_k] repacked as ⌊T_k/16⌋ panels of [d_k][16] (key-minor); the last T_k mod 16 keys
// are not packed (scoreRows reads them from k).
struct PackedKeys {
    std::vector<float> panels;
};
void packKeys(const MatRef& k, PackedKeys& out);

// scores: [rows, T_k] = q [rows, d_k] · kᵀ, for one block of queries; `packed` is packKeys(k).
// With AVX2, every score is the same chain of fused multiply-adds, d = 0 … d_k - 1, whatever the
// block, the row's place in a tile or the key's place in a panel: permuting the tokens permutes
// the scores exactly.
void scoreRows(const MatRef& q, const MatRef& k, const PackedKeys& packed, Eigen::Ref<Mat> scores);

// v: [T_k, d_v] repacked as ⌊d_v/16⌋ panels of [T_k][16] (column-minor); the last d_v mod 16
// columns are not packed (weighValues reads them from v).
struct PackedValues {
    std::vector<float> panels;
};
void packValues(const MatRef& v, PackedValues& out);

// out: [rows, d_v] = weights [rows, T_k] · v [T_k, d_v], for one block of queries; `packed` is
// packValues(v). causalFrom >= 0: the block's first row is query causalFrom of a causal mask, so
// row r's weights are zero past key causalFrom + r and those keys are not read.
// With AVX2, every output is the same chain of fused multiply-adds over the keys it reads, in
// key order, whatever the block or the row's place in a tile.
void weighValues(const MatRef& weights, const MatRef& v, const PackedValues& packed, Eigen::Ref<Mat> out,
                 Eigen::Index causalFrom = -1);

}  // namespace attnviz::core
