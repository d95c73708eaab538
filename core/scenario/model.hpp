// A scenario resolved into concrete matrices, and the forward pass over it.
#pragma once

#include "core/attention/attention.hpp"
#include "core/scenario/scenario.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace attnviz::core {

// Refuse work that would not fit, or that no real model needs, before allocating it. buildModel
// checks them all (loadModel a checkpoint's sentence: its tokens and bytes), so a scenario file,
// a model, the flags and the app's actions meet the same limits.
struct Limits {
    long long maxTokens = 32768;
    long long maxDModel = 16384;  // d_model, and d_out (W_O's columns)
    // the model's matrices (X, weights) and those of one forward pass; a checkpoint's sentence:
    // its pass's kept matrices and the shown layer's (modelMemoryBytes in core/models)
    std::uint64_t maxBytes = 12ULL << 30;
    // Real models have at most 128 heads a layer. A head costs work and drawing whatever its
    // width, which the bytes do not see: 4096 heads of width 1 took minutes for one screenshot.
    long long maxHeads = 256;
    long long maxHeadWidth = 16384;  // d_k and d_v: as wide as the widest d_model, one head's share of it
    // A checkpoint's pass keeps every layer's every head's T × T weights while they take at most
    // this; past it the pass keeps what they are made of (q, k and each row's log-sum-exp) and
    // every map is made on demand (decoder::PassMaps, loadModel).
    std::uint64_t keptMapsBytes = 1ULL << 30;
    // Past it, the shown layer's heads are computed whole (another τ, mask or order, the stages)
    // while their T × T scores and weights take at most this; else that layer is read from the
    // pass as every other is, and the pass keeps no activations (decoder::PassMaps::Lean).
    std::uint64_t shownLayerBytes = 1ULL << 30;
};

struct Model {
    std::vector<std::string> queryTokens;  // [T_q] row labels
    std::vector<std::string> keyTokens;    // [T_k] column labels (= queryTokens in self-attention)
    Mat embeddings;                        // [T, d_model] token vectors before positional encoding (token mode)
    Mat positional;                        // [T, d_model] the encoding added to them; empty when none
    Mat x;                                 // [T, d_model] = embeddings + positional: the attention input
    PackedRows xTiles;                     // token mode: x's full 6-row tiles packed once, for every head's projections
    Mat wq;                                // [d_model, h*d_k]
    Mat wk;                                // [d_model, kv*d_k] (kv = kvHeads, h without grouped-query)
    Mat wv;                                // [d_model, kv*d_v]
    Mat wo;                                // [h*d_v, d_out] (d_out = d_model unless W_O is explicit); empty: output = concat
    RowVec bq, bk, bv, bo;                 // biases of the projections ([h*d_k], [h*d_k], [h*d_v], [d_out]); empty: none
    // W_Q's slice of each query head, W_K's and W_V's of each key/value head, and W_O, packed for
    // the kernels once per model (packProjections: buildModel and a checkpoint's layer call it),
    // so that a pass reads them rather than packing its own. Empty: each pass packs its own. Whoever
    // changes a weight after packing packs again.
    struct PackedProjections {
        std::vector<PackedColumns> q, k, v;
        PackedColumns o;
    } packed;
    Mat q, k, v;  // explicit mode only: [T_q, d_k], [T_k, d_k], [T_k, d_v]
    bool explicitQkv = false;
    int heads = 1, dk = 0, dv = 0, dModel = 0;
    int kvHeads = 0;  // key/value heads (grouped-query attention); 0: one per query head
    // RoPE: cos and sin of position · θ_i for each position (rows) and pair i < d_k / 2 of a
    // head's dimensions (columns), θ_i = base^(-2i/d_k); empty without rotary positions. Fewer
    // columns (r / 2, a checkpoint's partial rotary): only a head's leading r dimensions turn.
    Mat ropeCos, ropeSin;
    // Gemma 2's soft-capping of the logits at τ = 1: ℓ ← cap · tanh(ℓ / cap), before the mask and
    // the temperature (the scores hold it in raw units: capScores); 0: none.
    float softcap = 0;
    // The sliding window of keys the model's own attention uses (a checkpoint's sliding-window
    // layer), 0 for none; buildSettings takes it unless the scenario sets a window of its own.
    int window = 0;
    // Qwen3's per-head RMSNorm of q and k over d_k, before RoPE: gains [d_k]; empty: none.
    RowVec qNorm, kNorm;
    float qkNormEpsilon = 1e-6f;
    // ALiBi: head h's slope m_h; the logit of query i and key j gets -m_h |i - j|. Empty: none.
    std::vector<float> alibiSlopes;
    std::vector<int> perm;  // position p holds the token originally at position perm[p]

    // How many key/value heads there are: kvHeads, or one per query head.
    int kvHeadCount() const { return kvHeads > 0 ? kvHeads : heads; }
    // The key/value head query head `head` reads: ⌊head · kv / h⌋.
    int kvHeadOf(int head) const { return kvHeads > 0 ? head * kvHeads / heads : head; }

    Eigen::Index tq() const { return static_cast<Eigen::Index>(queryTokens.size()); }
    Eigen::Index tk() const { return static_cast<Eigen::Index>(keyTokens.size()); }
};

// Resolves the sizes, builds X and the weights, checks every shape.
// Explicit matrices define the sizes they fix (d_model from X or a weight's rows, heads*d_k from
// W_Q or W_K's columns, heads*d_v from W_V's columns or W_O's rows, d_out from W_O's columns);
// given sizes must agree with them, and the defaults fill in only what nothing fixes. A true
// contradiction names both sides ("W_K: 10 x 4 disagrees with W_Q: 10 x 3 (…)").
// applySwaps = false gives the model before the scenario's swaps (the permutation reference).
// Throws InputError naming the field.
// positionOffset: positions counted from it instead of 0 (a sentence shifted along, as if it
// followed that many tokens: what RoPE ignores and sinusoidal encodings do not).
Model buildModel(const Scenario& scenario, bool applySwaps = true, const Limits& limits = {}, int positionOffset = 0);

// ALiBi's slopes for `heads` heads (Press et al. 2022): 2^(-8h/H) for h = 1 … H when H is a power
// of two; otherwise those of the largest power of two P below H, then every other slope of 2P's.
std::vector<float> alibiSlopes(int heads);
// Softmax settings and masks; checks padding positions and the mask's shape against the model.
Settings buildSettings(const Scenario& scenario, const Model& model);
// How this model makes Q, K or V (`which`: 'Q', 'K' or 'V') from X, as the views write it, from
// what the model has rather than where it came from: its bias when it has one, the q/k norm and
// RoPE ("Q = RoPE(RMSNorm(X W_Q))" for Qwen3, "Q = X W_Q + b_Q" for GPT-2); "Q, as the scenario
// gives it" when the scenario gives Q, K and V themselves.
std::string projectionFormula(const Model& model, char which);

// Bytes of the float matrices one forward pass keeps (Q, K, V, scores, weights, outputs).
std::uint64_t forwardBytes(long long tq, long long tk, long long heads, long long dModel, long long dk, long long dv);
// Bytes of every matrix a model and its forward pass hold now: the model's inputs and weights,
// each head's tensors and scratch, concat and output (what a peak memory is compared with).
std::uint64_t keptBytes(const Model& model, const Forward& forward);
// "1.6 GiB"
std::string formatBytes(std::uint64_t bytes);

// RoPE in the rotate-half layout (the Hugging Face Llama code): dimension i < d_k/2 pairs with
// i + d_k/2, and row t turns each pair by angle θ_t,i: (a, b) -> (a cos - b sin, b cos + a sin).
// m: [T, d_k]; cosines, sines: [T, d_k/2] (row t: the angles of m's row t).
void rotateHalf(const MatRef& cosines, const MatRef& sines, Eigen::Ref<Mat> m);
// Each row of m: [T, n] scaled to unit root mean square, x / √(mean(x²) + eps) · gain [n] (the
// mean summed in double).
void rmsNormRows(Eigen::Ref<Mat> m, const RowVec& gain, float eps);

// Packs the model's W_Q, W_K, W_V (by head) and W_O into model.packed, for every pass over it.
void packProjections(Model& model);

// How many blocks of rows runForward splits each of `heads` heads' projections into, on the
// cores in use: 1 (a head per core) when the heads fall evenly to the cores; else enough that
// heads × blocks does, each at least 48 rows.
Eigen::Index projectionBlocks(const Model& model, Eigen::Index heads);

// Stages of the forward pass, per head, so callers recompute only what changed.
// q, k, v; with RoPE q and k rotated by their positions.
void projectHead(const Model& model, int head, HeadTensors& out);
// scores = q kᵀ; with ALiBi, minus m_h |i - j| / c (c = logitScale at τ = 1), so that
// scores · logitScale = (q kᵀ c - m_h |i - j|) / τ: the bias is added to the scaled logits.
void scoreHead(const Model& model, const Settings& settings, HeadTensors& head);
void weighHead(const Model& model, const Settings& settings, HeadTensors& head);  // weights (throws if scores overflowed)
// The same, with the weights' texels pooled by `factor` in the same pass (softmaxPooled).
void weighHead(const Model& model, const Settings& settings, HeadTensors& head, int factor, std::vector<float>& texels);
// output = weights v; under a causal mask the keys past each query (zero weights) are not read.
void outputHead(const Settings& settings, HeadTensors& head);
void combineHeads(const Model& model, Forward& forward);  // concat, output
// Scores (when newScores), softmax and A·V together, by blocks of rows that stay in cache:
// the same numbers as scoreHead + weighHead + outputHead, faster.
void attendHead(const Model& model, const Settings& settings, HeadTensors& head, bool newScores);

// All stages for every head, into `out`: its matrices are reused when the shapes match, so a
// recompute allocates (and page-faults) nothing.
void runForward(const Model& model, const Settings& settings, Forward& out);
Forward runForward(const Model& model, const Settings& settings);
// What a new temperature, scaling or causal flag needs of a forward pass whose projections and
// scores are kept: every head's softmax and A·V again (heads in parallel), then the output.
void reattendForward(const Model& model, const Settings& settings, Forward& forward);

}  // namespace attnviz::core
