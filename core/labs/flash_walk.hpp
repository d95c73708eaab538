// The flash-attention walk: one head's attention computed in tiles of queries and keys with the
// online softmax (Dao et al. 2022, FlashAttention, Algorithm 1, forward), every step recorded so
// the app can replay it on the heatmap.
//
//   for each query tile i (rows q0 … q0 + B_r - 1):  m = -inf, l = 0, Õ = 0     [B_r], [B_r], [B_r, d_v]
//     for each key tile j (keys k0 … k0 + B_c - 1):
//       S     = Q_i K_jᵀ · c, blocked cells -inf                                  [B_r, B_c]
//       m_new = max(m, rowmax S)
//       P     = exp(S - m_new)                                                   [B_r, B_c]
//       l     = exp(m - m_new) · l + rowsum P
//       Õ     = diag(exp(m - m_new)) Õ + P V_j                                   [B_r, d_v]
//       m     = m_new
//     O_i = diag(1 / l) Õ
//
// Only one tile of scores and the m, l of its rows are held, never the T_q × T_k scores; the
// walk still ends in the same A·V as the materialised softmaxRows + outputHead, to float
// rounding (flashGap measures it). Algorithm 1 puts the key tiles in the outer loop and keeps m,
// l of every row; the walk goes a query tile at a time (FlashAttention-2's order), so a row's m
// and l live only while its tile is walked. Each row meets the key tiles in the same order
// either way: the numbers are the same.
#pragma once

#include "core/attention/attention.hpp"
#include "core/base/matrix.hpp"

#include <cstdint>
#include <vector>

namespace attnviz::core {

// Tile sizes: B_r queries by B_c keys, each >= 1 (clipped to T_q, T_k).
struct FlashTiles {
    int queries = 4, keys = 4;
};

// One (query tile, key tile) step of the walk.
struct FlashStep {
    Eigen::Index q0 = 0, rows = 0, k0 = 0, cols = 0;  // the tile: queries [q0, q0 + rows), keys [k0, k0 + cols)
    // Running m (in logit units, S = s · c) and l of the tile's rows after this step, [rows].
    // m is -inf and l 0 for a row that has read no key yet.
    Vec rowMax, rowSum;
    // [rows] exp(m_old - m_new), applied to the old l and Õ: 0 where a row reads its first key
    // (nothing before to keep), 1 while it has read none or when the tile is skipped.
    Vec rescale;
    bool skipped = false;  // every cell blocked (e.g. above the causal diagonal): nothing computed
};

struct FlashWalk {
    std::vector<FlashStep> steps;  // ⌈T_q/B_r⌉ · ⌈T_k/B_c⌉, in row-major tile order
    Mat output;                    // [T_q, d_v] O = diag(1/l) Õ; 0 for a row that reads no key
    // [T_q, T_k] A for display, recovered from the final m and l: exp(S - m) / l, blocked cells
    // and rows that read no key 0 (the scores recomputed a tile at a time, as FlashAttention's
    // backward pass does).
    Mat weights;
    // Floats held at once besides Q, K, V and O (and the display's weights): one tile of scores,
    // turned into P in place, plus the m and l of its rows.
    std::uint64_t peakFloats = 0;
    std::uint64_t materialisedFloats = 0;  // T_q · T_k: what the standard path holds for S, and again for A
};

// head.q: [T_q, d_k], head.k: [T_k, d_k], head.v: [T_k, d_v]. Each tile's scores are q_i k_jᵀ
// minus head.alibiSlope's bias (slope · |i - j| · (scaled ? √d_k : 1) in raw-score units, as
// scoreHead folds it into head.scores), times c = logitScale(d_k, settings); blocked by
// isBlocked (causal, padding, window, custom mask). Computed in float, like the engine.
// Throws InputError for tiles below 1, mismatched shapes or a readable score that is not finite
// (an overflowed Q Kᵀ, which the forward pass refuses too).
FlashWalk flashWalk(const HeadTensors& head, const Settings& settings, const FlashTiles& tiles = {});

// How far the walk is from the materialised path: the largest |walk - head| of the outputs and
// of the weights; infinity where the shapes differ (a walk of another head).
struct FlashGap {
    float output = 0, weights = 0;
};
FlashGap flashGap(const FlashWalk& walk, const HeadTensors& head);

}  // namespace attnviz::core
