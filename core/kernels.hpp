// The attention's largest product, scores = q kᵀ, as a register-tiled kernel.
//
// Eigen repacks kᵀ on every call, and the forward pass calls it once per block of query rows
// (so that the block's scores are still in cache for the softmax and A·V). Here k is packed once
// per head, into panels of 16 keys, and each 6 × 16 tile of scores is accumulated in AVX2
// registers over d_k: ~17% faster than Eigen for the scores of a head at T = 2048, d_k = 64.
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

}  // namespace attnviz::core
