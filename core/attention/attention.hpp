// Scaled dot-product attention, one stage at a time, every intermediate kept for display.
//
//   per head h:  q = x W_Q[:, h*d_k : (h+1)*d_k]         [T_q, d_k]
//                k = x W_K[:, h*d_k : (h+1)*d_k]         [T_k, d_k]
//                v = x W_V[:, h*d_v : (h+1)*d_v]         [T_k, d_v]
//                scores  = q kᵀ                           [T_q, T_k]  (raw, unscaled)
//                weights = softmax_rows(scores * c, mask) [T_q, T_k]  c = 1 / (√d_k · τ), or 1 / τ unscaled
//                output  = weights v                      [T_q, d_v]
//   concat = [output_0 | … | output_{h-1}]               [T_q, h*d_v]
//   output = concat W_O                                   [T_q, d_model]  (concat itself without W_O)
//
// The stages are separate functions so that a caller can recompute only what changed:
// a temperature or mask change needs softmaxRows + outputs, never new scores.
#pragma once

#include "core/attention/kernels.hpp"
#include "core/base/matrix.hpp"

#include <algorithm>
#include <array>
#include <vector>

namespace attnviz::core {

struct Settings {
    float temperature = 1.0f;     // τ > 0; divides the logits (τ < 1 sharpens, τ > 1 flattens)
    bool scaled = true;           // divide by √d_k (false: by 1, seed 003's saturation demo)
    bool causal = false;          // key j > query i is blocked
    std::vector<int> paddedKeys;  // key indices blocked for every query
    MaskMat custom;               // [T_q, T_k], true = blocked; empty = none
    // A sliding window of w keys (0: none): causal, query i reads i - w < j <= i; otherwise
    // |i - j| < w.
    int window = 0;
};

// true where a window of `window` keys (0: none) keeps query i from key j.
inline bool outsideWindow(int window, bool causal, Eigen::Index i, Eigen::Index j) {
    if (window <= 0) return false;
    return causal ? j <= i - window : (j > i ? j - i : i - j) >= window;
}

// The keys [lo, hi) query i reads out of `keys` under a causal mask and a window of `window` keys
// (0: none) alone, padded keys and a custom mask aside: the band every map maker and every reader
// of a map's rows share.
struct KeyBand {
    Eigen::Index lo = 0, hi = 0;
};
inline KeyBand keyBand(bool causal, int window, Eigen::Index i, Eigen::Index keys) {
    const Eigen::Index lo = window > 0 ? std::clamp<Eigen::Index>(i - window + 1, 0, keys) : 0;
    return {lo, std::clamp<Eigen::Index>(causal ? i + 1 : window > 0 ? i + window : keys, lo, keys)};
}
inline KeyBand keyBand(const Settings& settings, Eigen::Index i, Eigen::Index keys) {
    return keyBand(settings.causal, settings.window, i, keys);
}

// true where query i may not read key j.
bool isBlocked(const Settings& settings, Eigen::Index i, Eigen::Index j);
// The whole mask as a matrix: [T_q, T_k], true = blocked.
MaskMat blockedMatrix(const Settings& settings, Eigen::Index tq, Eigen::Index tk);

bool hasMask(const Settings& settings);

// A weight matrix as texels for display: [T_q, T_k] row-major floats, masked cells set to
// kMaskedTexel (far below any value a heatmap shows), so the shader can hatch them.
inline constexpr float kMaskedTexel = -3.0e38f;
inline constexpr float kMaskedBelow = -1.0e38f;  // a texel below this is masked
inline bool isMaskedTexel(float v) { return v < kMaskedBelow; }
void toTexels(const MatRef& weights, const Settings& settings, std::vector<float>& out);

// The same at 1/factor resolution, for a map drawn smaller than one pixel per cell: texel
// (r, c) is the largest readable weight of the cells [r·f, r·f + f) × [c·f, c·f + f) (clipped
// at the edges), or kMaskedTexel when every cell of the block is masked. out is
// ⌈T_q/f⌉ × ⌈T_k/f⌉, row-major. Taking the maximum keeps a single sharp weight visible however
// far the map is shrunk (sampling or averaging would lose it). factor 1 is toTexels.
void poolTexels(const MatRef& weights, const Settings& settings, int factor, std::vector<float>& out);
inline Eigen::Index pooledSize(Eigen::Index cells, int factor) { return (cells + factor - 1) / factor; }

// c in logits = scores * c.
float logitScale(int dk, const Settings& settings);
// ALiBi's penalty per step of distance in raw-score units: slope / c at τ = 1 (slope · √d_k, or
// the slope unscaled), so that scores · c holds the scaled logits minus slope · |i - j|. The scores
// are folded with it once (scoreHead, attendHead) and the flash walk's tiles the same way.
double alibiStep(float slope, int dk, const Settings& settings);

// Soft-capped logits in raw-score units (Gemma 2): s ← (cap / c) · tanh(c · s / cap), so that
// c · s becomes cap · tanh(c · s / cap); c is the logits' scale at τ = 1. cap 0: unchanged. Each
// element's value depends on it alone (not on its place in the buffer).
void capScores(Eigen::Ref<Mat> scores, float scale, float cap);

// Each row's largest raw score over all keys and over the keys up to its query (what a causal
// mask leaves readable), [T_q] each; NaN where one of those scores is NaN. Computed with the
// scores: max(s · c) = c · max(s) for c > 0, so a temperature change or a causal toggle reads
// these instead of passing over the T_q × T_k scores once more.
struct ScoreMaxima {
    Vec all, causal;
    void resize(Eigen::Index queries) { all.resize(queries), causal.resize(queries); }
};
// Rows firstRow … firstRow + scores.rows() - 1 of `out`, which must have at least that many.
void scoreMaxima(const MatRef& scores, Eigen::Index firstRow, ScoreMaxima& out);

// weights: [T_q, T_k]. Row-wise softmax of scores * scale over the keys a query may read:
//   1. row max of the raw scores over readable keys (scale > 0 keeps the argmax)
//   2. exp((score - max) * scale) for readable keys: never overflows, never NaN for finite
//      scores whatever τ; exactly 0 for blocked keys
//   3. divide by the row sum (>= 1, the max term is exp(0))
// A row whose every key is blocked is all zeros, never NaN. Returns false when some row's
// readable scores are not finite (an overflowed Q Kᵀ); such rows are zero.
// maxima: scoreMaxima of these scores, for step 1 without a mask per cell (else ignored), or null.
bool softmaxRows(const MatRef& scores, float scale, const Settings& settings, Mat& weights, const ScoreMaxima* maxima = nullptr);
// The same for a block of rows: scores and weights hold queries firstRow … firstRow + rows - 1
// (the mask is applied by absolute query index); weights must already have the block's shape;
// maxima, when given, covers every query (indexed by query).
bool softmaxRows(const MatRef& scores, float scale, const Settings& settings, Eigen::Ref<Mat> weights, Eigen::Index firstRow,
                 const ScoreMaxima* maxima = nullptr);

// A row's weights made again from its raw scores as the pass's softmax left them (its largest
// score `top` and logSum = log Σ exp(scale · (s − top))): weights[j] = exp(scale · (raw[j] − top)
// − logSum) and logs[j] their natural logs, n keys (each at most 1: a row's weights never exceed
// it). The exponentials are the pass's own (base 2, vectorised), not a call to exp per weight.
void weightsOfLogits(const float* raw, float* weights, float* logs, Eigen::Index n, float top, float scale, float logSum);

// The keys of one tile of attendTiled: its scores and weights, [rows, 256] each, stay in L2.
inline constexpr Eigen::Index kAttentionTileKeys = 256;

// One head's causal attention for the queries first … first + rows - 1 (q's rows), a tile of
// kAttentionTileKeys keys at a time with an online softmax (FlashAttention's: each row's largest
// score so far, its sum rescaled when that grows), so that no row of scores or weights is ever
// whole: out [rows, d_v] = A v. A query reads keys j ≤ i (and i - j < window when window > 0)
// but the `hidden` ones (ascending). top and sum [rows]: each row's largest score and
// log Σ_j exp(scale · (s_ij - top)), what the row-block softmax's largest weight gives
// (-log of it), to float rounding; a row with no key gets 0, -∞ and zeros. keys = packKeys(k),
// values = packColumns(v), pq = packRows(q) or null. False when a score is not finite.
bool attendTiled(const MatRef& q, const PackedRows* pq, const MatRef& k, const PackedKeys& keys, const MatRef& v,
                 const PackedColumns& values, float scale, int window, const std::vector<int>& hidden, Eigen::Index first, float* top,
                 float* sum, Eigen::Ref<Mat> out);

// softmaxRows and poolTexels(weights, settings, factor, texels) in one pass, for the map on
// screen: the same weights and texels, bit for bit, but each row is pooled while it is still in
// cache, so the T_q × T_k weights are not read back.
bool softmaxPooled(const MatRef& scores, float scale, const Settings& settings, Mat& weights, int factor, std::vector<float>& texels,
                   const ScoreMaxima* maxima = nullptr);

struct RowStats {
    Vec sum;      // [T_q] Σ_j a_ij: 1, or 0 for a fully masked row
    Vec max;      // [T_q] max_j a_ij
    Vec entropy;  // [T_q] -Σ_j a_ij ln a_ij, in nats (0 ln 0 = 0)
};
RowStats rowStats(const MatRef& weights);

struct HeadTensors {
    Mat q, k, v;           // [T_q, d_k], [T_k, d_k], [T_k, d_v]
    Mat scores;            // [T_q, T_k] raw q kᵀ
    Mat weights;           // [T_q, T_k] final attention A
    Mat output;            // [T_q, d_v] A v
    ScoreMaxima scoreMax;  // [T_q] each, of scores, computed with them
    float alibiSlope = 0;  // ALiBi's m of this head (0: none), folded into the scores
    // Scratch, kept so that a recompute allocates nothing: k and v packed for the kernels of the
    // scores and A·V (v by projectHead, k with the scores), and the head's slices of W_Q, W_K,
    // W_V packed for its projections when the model has not packed them.
    PackedKeys packedKeys;
    PackedColumns packedValues;
    std::array<PackedColumns, 3> packedProjections;
};

struct Forward {
    std::vector<HeadTensors> heads;
    Mat concat;              // [T_q, h*d_v]
    Mat output;              // [T_q, d_model] = concat W_O, or concat when there is no W_O
    PackedColumns packedWo;  // scratch: W_O packed for concat·W_O when the model has not packed it
};

// How the mean over heads reads each head. skipFirstKey: the first key left out (an attention
// sink hides what the rest of a row does): each head's row over keys j >= 1 renormalised to sum
// 1 before the mean (a row that may read only key 0 counts as 0), so column 0 of the mean is 0.
struct MeanOptions {
    bool skipFirstKey = false;
};
// Rows of a head's weights with the first key left out: column 0 set to 0 and each row divided by
// what is left (a row with nothing left stays 0). What MeanOptions::skipFirstKey and rollout's
// option read each head as.
Mat withoutFirstKey(const MatRef& rows);
// The rule in words, for a view or figure that shows such a mean.
const char* meanRule(const MeanOptions& options);
// Mean of every head's weights: [T_q, T_k].
Mat meanWeights(const Forward& forward, const MeanOptions& options = {});
// Rows [firstRow, firstRow + rows) of it, without the rest.
Mat meanWeights(const Forward& forward, Eigen::Index firstRow, Eigen::Index rows, const MeanOptions& options = {});
// poolTexels(meanWeights(forward, options), settings, factor, out), a band of rows at a time: the
// mean is never held whole.
void poolMeanTexels(const Forward& forward, const Settings& settings, int factor, std::vector<float>& out, const MeanOptions& options = {});

}  // namespace attnviz::core
