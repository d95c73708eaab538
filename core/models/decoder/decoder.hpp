// The transformer as the model families share it, decoder-only (GPT-2, Llama, Mistral, Qwen2,
// Qwen3, Phi-3, Gemma 2 and 3) or an encoder (BERT): the layer pass, the store of every layer's
// every head's kept attention, the next-token ranking. A family's folder (core/models/gpt2/,
// core/models/llama/, core/models/gemma/, core/models/bert/) reads its config.json into a Config
// and maps its tensors into a Checkpoint; everything after that is here, once.
//
// The pass, T tokens, d = n_embd, h query heads and g key/value heads of width d_h, per layer l:
//   x     = embed[ids] (+ positions[0 … T) when learned)                         [T, d]
//   a     = Norm(x; norm1)          LayerNorm (GPT-2) or RMSNorm (Llama …)         [T, d]
//   qkv   = a · [W_q | W_k | W_v] (+ biases)                                     [T, (h + 2g)·d_h]
//           (Qwen3: q and k each RMSNorm-ed per head over d_h; rotary: q and k rotated by
//           position, rotate-half layout, with the config's frequency scaling)
//   per query head i reading kv head ⌊i·g/h⌋:
//           A = softmax_causal(q kᵀ / √d_h), within the layer's sliding window if any [T, T]
//           o = A v                                                              [T, d_h]
//   x    += [o_0 | … | o_{h-1}] · W_o (+ b_o)                                    [T, d]
//   x    += MLP(Norm(x; norm2))     GPT-2: act(a·W_fc + b)·W_proj + b; Llama: (SiLU(a·W_gate) ⊙ a·W_up)·W_down
// then the final norm, and the logits of the last position against lm_head (or the embeddings).
//
// Gemma adds: x = embed[ids] · √d; the scores divided by √query_pre_attn_scalar; Gemma 2's
// logits capped, cap · tanh(ℓ / cap), before the mask and again at the end; sandwich norms
// (x += Norm(attention(Norm(x)); attnOutNorm), likewise the MLP); its RMSNorm's (1 + w) gains
// are added up when read. Phi-3: RoPE on the leading rotaryDim dimensions, LongRoPE's factors.
//
// An encoder (Config::causal false; BERT) differs in four places:
//   x     = Norm(embed[ids] + positions[0 … T) + types[type ids]; embedding norm)
//   A     = softmax(q kᵀ / √d_h): every query reads every key
//   post-norm blocks: x = Norm(x + attention(x); norm1), x = Norm(x + MLP(x); norm2), no final norm
//   the masked-LM head at the first [MASK]: Norm(act(x W_t + b_t); head norm) · embedᵀ + b
#pragma once

#include "core/attention/attention.hpp"
#include "core/attention/kernels.hpp"
#include "core/base/matrix.hpp"
#include "core/base/progress.hpp"
#include "core/models/safetensors.hpp"
#include "core/scenario/model.hpp"
#include "core/text/model_tokenizer.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attnviz::core {
class TileSink;  // core/attention/attention_maps.hpp
}  // namespace attnviz::core

namespace attnviz::core::decoder {

enum class Norm { LayerNorm, RmsNorm };
enum class Activation { GeluTanh, GeluErf, Relu, Silu };
// Rotary positions' frequency scaling (Hugging Face's rope_type): none ("default"), every
// frequency divided by `factor` ("linear"), Llama 3's by wavelength ("llama3"), or LongRoPE's
// factor per frequency ("longrope", Phi-3).
enum class RopeScaling { None, Linear, Llama3, LongRope };

struct Rope {
    double theta = 10000;
    RopeScaling scaling = RopeScaling::None;
    double factor = 1, lowFreqFactor = 1, highFreqFactor = 4;
    int originalPositions = 8192;  // original_max_position_embeddings (llama3, longrope)
    // LongRoPE: frequency i divided by shortFactors[i], or by longFactors[i] in a pass of more
    // than originalPositions tokens (every position's, as transformers chooses by the input's
    // length); cos and sin multiplied by attentionFactor.
    std::vector<double> shortFactors, longFactors;
    double attentionFactor = 1;
};

struct Config {
    std::string family;  // config.json's model_type: "gpt2", "llama", "mistral", "qwen2", "qwen3"
    int nLayer = 0, nHead = 0, nKvHead = 0, nEmbd = 0, headDim = 0, nPositions = 0, vocabSize = 0, nInner = 0;
    Norm norm = Norm::LayerNorm;
    float normEpsilon = 1e-5f;
    Activation activation = Activation::GeluTanh;
    bool gatedMlp = false;  // SiLU(gate) ⊙ up (Llama's MLP); false: act(fc)
    bool rotary = false;    // RoPE; false: learned positions added to the embeddings
    Rope rope;
    bool scaleScores = true;  // divide scores by √d_h (by √scoreDim when set)
    int scoreDim = 0;         // Gemma's query_pre_attn_scalar: scores divided by its root; 0: d_h
    int rotaryDim = 0;        // the leading dimensions of a head RoPE turns (partial_rotary_factor); 0: all
    float embedScale = 1;     // the embeddings multiplied by it (Gemma: √d)
    // Gemma 2's soft-capping: each attention logit (scaled score) ℓ ← cap · tanh(ℓ / cap), and the
    // final logits likewise; 0: none.
    float attnSoftcap = 0, logitSoftcap = 0;
    bool qkNorm = false;                                  // Qwen3's per-head RMSNorm of q and k
    std::vector<int> windows;                             // per layer: a sliding window of that many keys, 0 for none
    std::vector<Rope> layerRopes;                         // per layer: its rotary settings (global and local layers'); empty: rope
    bool tieWordEmbeddings = true;                        // the logits read the embeddings; false: lm_head.weight
    bool qkvBias = true, outBias = true, mlpBias = true;  // which projections carry biases
    // An encoder's: attention in both directions (false), each block's norms after its residual
    // adds (BERT's post-norm: then no final norm), token types (segments) added to the embeddings.
    bool causal = true;
    bool postNorm = false;
    int typeVocab = 0;       // token types the embeddings hold (BERT: 2), 0 for none
    int positionOffset = 0;  // the row of position 0 in the learned positions (RoBERTa: padding_idx + 1)
    // The masked-LM head's activation: BERT's and DistilBERT's are the layers', RoBERTa's GELU.
    Activation headActivation = Activation::GeluErf;

    int headWidth() const { return headDim; }
    int qWidth() const { return nHead * headDim; }
    int kvWidth() const { return nKvHead * headDim; }
    int qkvWidth() const { return qWidth() + 2 * kvWidth(); }
    int kvHeadOf(int head) const { return head * nKvHead / nHead; }
    int window(int layer) const { return windows.empty() ? 0 : windows[static_cast<std::size_t>(layer)]; }
    int longestInput() const { return nPositions - positionOffset; }  // the most tokens one pass reads
    int rotaryWidth() const { return rotaryDim > 0 ? rotaryDim : headDim; }
    const Rope& ropeOf(int layer) const { return layerRopes.empty() ? rope : layerRopes[static_cast<std::size_t>(layer)]; }
    // c of the logits scores · c at τ = 1: 1 / √scoreDim (d_h unless set), or 1 unscaled.
    float scoreScale() const;
};

// RoPE's inverse frequencies θ_i, i < r / 2 (r = rotaryWidth()), with the config's scaling
// (Hugging Face's modeling_rope_utils: default, linear, llama3, longrope), in double; of `layer`'s
// settings where the layers have their own (Config::layerRopes). LongRoPE's factors are chosen by
// `tokens`, the length of the pass.
std::vector<double> ropeFrequencies(const Config& config, int layer = 0, Eigen::Index tokens = 0);
// cos and sin of position · θ_i for positions [first, first + count) (times LongRoPE's attention
// factor): [count, r / 2] each. `tokens`: the pass's length (0: first + count).
void ropeTables(const Config& config, Eigen::Index first, Eigen::Index count, Mat& cosines, Mat& sines, int layer = 0,
                Eigen::Index tokens = 0);

// A tensor the checkpoint holds, in its file's element type (F32, F16 or BF16) where it lies in
// the mapped file: a product's weight packed once in that type for the kernels, which widen it in
// registers (kernels.hpp: multiplyWeights), rows (embeddings, lm_head) widened as they are read,
// and only vectors (gains, biases) held as floats. A product reads b = [in, out]: GPT-2's Conv1D
// stores that; nn.Linear stores [out, in], which is transposed when it is packed.
struct Weight {
    std::string name, file;  // the tensor's name, and the file holding it (messages)
    WeightType type = WeightType::F32;
    const void* source = nullptr;     // its elements in the mapped file, as the file stores them
    Eigen::Index rows = 0, cols = 0;  // as the products read it: [in, out]; rows: as stored; vectors [1, n]
    bool transposed = false;          // the file stores it [out, in] (nn.Linear)
    const float* data = nullptr;      // vectors only: the floats (in place, or widened once)
    PackedWeights packed;             // products only

    explicit operator bool() const { return source != nullptr; }
    Eigen::Index storedRows() const { return transposed ? cols : rows; }
    Eigen::Index storedCols() const { return transposed ? rows : cols; }
    Eigen::Map<const RowVec> row() const { return {data, rows * cols}; }  // a vector's floats
    // Stored rows [first, first + count) widened: [count, storedCols()].
    Mat storedRowsWidened(Eigen::Index first, Eigen::Index count) const;
    // The whole matrix widened, as the products read it: [rows, cols] (a layer shown as a scenario).
    Mat widened() const;
};

struct Layer {
    Weight norm1Gain, norm1Bias;  // [d]; the bias only with LayerNorm
    // The projections into qkv's columns, in order: GPT-2's one fused c_attn [d, 3d], or Llama's
    // q [d, h·d_h], k and v [d, g·d_h]; each with its bias or none.
    std::vector<Weight> qkv, qkvBias;
    Weight qNorm, kNorm;   // [d_h] (Qwen3)
    Weight outW, outBias;  // [h·d_h, d], [d] or none
    Weight norm2Gain, norm2Bias;
    // Gemma's sandwich norms: of the attention's output (after W_o) and of the MLP's, each before
    // its residual add; none elsewhere.
    Weight attnOutNormGain, mlpOutNormGain;
    Weight upW, upBias;      // [d, inner]: GPT-2's c_fc, Llama's up_proj
    Weight gateW, gateBias;  // [d, inner], [inner] (gated MLPs)
    Weight downW, downBias;  // [inner, d]: GPT-2's mlp.c_proj, Llama's down_proj
};

class Checkpoint {
public:
    // What a family's reader gathers; the checkpoint owns it, read-only, once built.
    struct Parts {
        std::string folder, name;  // the folder and its last component
        Config config;
        std::unique_ptr<ModelTokenizer> tokenizer;
        std::vector<std::unique_ptr<SafetensorsFile>> files;
        std::vector<std::vector<float>> converted;              // widened tensors
        Weight embed, positions, finalGain, finalBias, lmHead;  // positions: learned only; lmHead: untied only; final: pre-norm only
        // An encoder's: token types [types, d] and the embeddings' norm [d]; the masked-LM head
        // (transform [d, d] and its bias, its norm, the vocabulary's bias [vocab]), none when the
        // checkpoint has no head.
        Weight tokenTypes, embedNormGain, embedNormBias;
        Weight headDense, headDenseBias, headNormGain, headNormBias, lmBias;
        std::vector<Layer> layers;
    };
    explicit Checkpoint(Parts parts);
    ~Checkpoint();
    Checkpoint(const Checkpoint&) = delete;
    Checkpoint& operator=(const Checkpoint&) = delete;

    const std::string& folder() const { return m.folder; }
    const std::string& name() const { return m.name; }
    const Config& config() const { return m.config; }
    const ModelTokenizer& tokenizer() const { return *m.tokenizer; }
    const Weight& embed() const { return m.embed; }          // [vocab, d]
    const Weight& positions() const { return m.positions; }  // [n_positions, d] (learned), else empty
    const Weight& tokenTypes() const { return m.tokenTypes; }
    const Weight& embedNormGain() const { return m.embedNormGain; }
    const Weight& embedNormBias() const { return m.embedNormBias; }
    // The masked-LM head's transform (empty when the head has none: a decoder's lm_head reads the
    // final rows as they are) and its vocabulary bias (empty: none).
    const Weight& headDense() const { return m.headDense; }
    const Weight& headDenseBias() const { return m.headDenseBias; }
    const Weight& headNormGain() const { return m.headNormGain; }
    const Weight& headNormBias() const { return m.headNormBias; }
    const Weight& lmBias() const { return m.lmBias; }
    // Whether the checkpoint predicts tokens: a decoder's lm_head (or tied embeddings), an
    // encoder's masked-LM head; false for an encoder without one (BERT's BertModel).
    bool predicts() const { return m.config.causal || static_cast<bool>(m.headDense); }
    const std::vector<Layer>& layers() const { return m.layers; }
    const Weight& finalGain() const { return m.finalGain; }
    const Weight& finalBias() const { return m.finalBias; }
    const Weight& lmHead() const { return m.config.tieWordEmbeddings ? m.embed : m.lmHead; }  // [vocab, d]
    std::uint64_t fileBytes() const;                                                          // every file's
    // Throws InputError("<file>", "changed while it was read; open it again") once any of the
    // files changed since it was opened: what a pass read from it cannot be trusted.
    void checkUnchanged() const;
    bool changed() const;
    // Every weight, in the order a pass reads them.
    std::vector<const Weight*> weights() const;
    // Why a pass turned non-finite at `where`: throws InputError naming the file, the first weight
    // (in pass order) that holds a NaN or an infinity and its first such index ([row, col] as the
    // file stores it); the file changed (checkUnchanged); or, when every weight is finite,
    // "<where>: <problem>" (a real overflow).
    [[noreturn]] void explainNonFinite(const std::string& where, const std::string& problem) const;

private:
    Parts m;
};

struct NextToken {
    int id = 0;
    float logit = 0, prob = 0;
};

// A what-if edit of a pass (forwardEdited). Layers, heads and tokens count from 0.
//   ZeroHead:  the head's output o = A v [T, d_h] is zeroed before W_O (W_O's bias is still added,
//              as TransformerLens's hook_z ablation).
//   MeanHead:  o's every row replaced by o's mean over the T positions (later positions leak into
//              earlier ones: a mean over this input, not over a dataset).
//   HideToken: key `token` blocked for every query in every layer; query `token` keeps its other
//              keys. Query 0 with token 0 hidden reads no key: its weights are all 0 and its
//              output is 0 in every head (its row sums to 0, not 1).
struct Intervention {
    enum class Kind : std::uint8_t { ZeroHead, MeanHead, HideToken };
    Kind kind = Kind::ZeroHead;
    int layer = 0, head = 0;  // ZeroHead, MeanHead
    int token = 0;            // HideToken
    bool operator==(const Intervention&) const = default;
};

// "ablate 3.5", "ablate-mean 3.5", "hide-token 7": an edit as the command line writes it.
std::string interventionText(const Intervention& edit);
// Throws InputError naming `field` for a layer, head or token out of range, or a head or token
// given twice (one head ablated both ways included).
void checkInterventions(const Config& config, Eigen::Index tokens, const std::vector<Intervention>& edits, const std::string& field);
// The same, edit n's messages naming fields[n] (as many fields as edits).
void checkInterventions(const Config& config, Eigen::Index tokens, const std::vector<Intervention>& edits,
                        const std::vector<std::string>& fields);
// The first layer whose pass the edits change: 0 when a token is hidden, else the lowest ablated
// layer; the layer count when there are none.
int firstChangedLayer(const std::vector<Intervention>& edits, int layers);
// The first layer whose pass differs between edits a and b: 0 when their hidden tokens differ,
// else the lowest layer where their head edits differ; `layers` when they give the same pass.
int firstDifferingLayer(const std::vector<Intervention>& a, const std::vector<Intervention>& b, int layers);

// A kept matrix: rows of a store whose rows are `capacity` floats apart.
using KeptView = Eigen::Map<const Mat, 0, Eigen::OuterStride<>>;

// What a pass keeps of its maps: every head's T × T weights (what the views read directly: fast
// at a few thousand tokens, O(L·H·T²) memory), or only what they are made of (q and k, kept
// anyway, and each row's log-sum-exp: O(L·T·(H + G)·d_h)), the weights computed on demand.
// Lean is OnDemand without the activations: of every layer only q | k | v and the log-sum-exp,
// no input or normed input (the pass of a long input, whose shown layer is read from it: a
// what-if over it replays the layers below its first edit from their kept q, k and v).
enum class PassMaps : std::uint8_t { Kept, OnDemand, Lean };
// "kept", "on demand", "on demand, lean": as --bench states it.
const char* passMapsName(PassMaps maps);

// How a pass computes attention: each block of query rows against every key at once (the
// row-block softmax: its scores and weights whole, what a pass that keeps its maps stores), or,
// in a pass that keeps none, past tiledAttentionFrom() tokens (default 2,048), a tile of keys at a
// time with an online softmax (core::attendTiled: nothing of size T per row, every tile of keys
// read once for 96 queries). useTiledAttentionFrom sets it and returns the one before (tests and
// benchmarks; 0: every pass that keeps no map is tiled). A tiled row is what it is computed alone:
// a pass extended at the end is the whole pass's bits, when both are tiled.
Eigen::Index tiledAttentionFrom();
Eigen::Index useTiledAttentionFrom(Eigen::Index tokens);
// "tiles, online softmax" or "row blocks": how a whole pass of `config`'s model over `tokens`
// keeping `maps` computes its attention, as --bench states it (an encoder's, and a soft-capping
// model's, attention is always in row blocks).
const char* attentionStrategyName(const Config& config, PassMaps maps, Eigen::Index tokens);

// A pass's kept matrices, every layer's every query head's. They live in one store of C >= T
// positions (anonymous memory, in huge pages where the kernel offers them); a later pass over
// the same tokens and more (typing at the end of the sentence) writes its new rows and columns
// into the same store when no other live pass reads them, so that earlier positions never move.
// A Run is a read-only handle: copies share the store.
class Run {
public:
    std::vector<int> ids;
    std::vector<int> types;  // an encoder's token types, one an id; empty: all 0
    Vec logits;              // [vocab] at `predicted`; empty when the pass predicts nothing
    // The position whose row the logits read: a decoder's last (the token after it), an encoder's
    // first [MASK] (the token in its place); −1 when there is none (an encoder's text without a
    // [MASK], or a checkpoint with no head).
    Eigen::Index predicted = -1;
    std::vector<Intervention> edits;  // the what-if edits this pass ran with (forwardEdited); empty for a plain pass

    Eigen::Index tokens() const { return static_cast<Eigen::Index>(ids.size()); }
    int layerCount() const;
    int headCount() const;
    Eigen::Index capacity() const;  // positions the store holds room for
    // Only when keepsActivations():
    KeptView input(int layer) const;   // [T, d] the residual stream entering the layer
    KeptView normed(int layer) const;  // [T, d] Norm(input; norm1): the attention's input
    KeptView qkv(int layer) const;     // [T, (h + 2g)·d_h] q, k, v as the heads read them (normed, rotated)
    // What makes any weight again from q and k (mapWeightRows), the log-sum-exp of each query's
    // scaled scores in two terms, as an online softmax keeps it: [h, T], row h query head h's.
    // scoreMax: the largest score q_i·k_j over the keys query i reads (unscaled); logSum:
    // log Σ_j exp(scale · (q_i·k_j − scoreMax_i)), −∞ for a query left with no key. Then
    // A_ij = exp(scale · (q_i·k_j − scoreMax_i) − logSum_i), and lse_i = scale · scoreMax_i + logSum_i.
    KeptView scoreMax(int layer) const;
    KeptView logSum(int layer) const;
    // What the pass keeps of its maps: every head's weights (PassMaps::Kept), or only what makes
    // them (OnDemand: mapWeightRows, and weights() must not be called). A pass that extends or
    // edits this one keeps the same.
    PassMaps maps() const;
    bool keepsWeights() const;                    // a store that keeps them (false for an empty Run)
    bool keepsActivations() const;                // input and normed kept (not Lean; false for an empty Run)
    KeptView weights(int layer, int head) const;  // [T, T]; only when keepsWeights()
    KeptView final() const;                       // [T, d] after the final norm
    // The first layer this pass computed: 0 for forward and forwardAppend; an edited pass views
    // the layers below where another pass keeps them (its store, kept alive by this Run).
    int computedFrom() const;
    // The hidden tokens of `edits` (HideToken), ascending: the keys every layer blocked.
    std::vector<int> hiddenTokens() const;

    struct Extent;  // the store and this pass's claim on its first T positions

private:
    friend struct RunAccess;
    std::shared_ptr<const Extent> m_extent;
};

// Throws InputError naming `field` unless 1 ≤ T ≤ n_positions and every id < vocab, and each of
// `types` (when given: one an id) is below the config's token types.
void checkIds(const Config& config, const std::vector<int>& ids, const std::string& field, const std::vector<int>& types = {});
// The forward pass over `ids` (an encoder's token types `types`, empty: all 0). Throws InputError
// (checkIds; activations that overflow), and Cancelled between layers once `progress` was asked
// to stop.
Run forward(const Checkpoint& model, const std::vector<int>& ids, const Progress* progress = nullptr, PassMaps maps = PassMaps::Kept,
            const std::vector<int>& types = {});
// The same, reusing the positions `ids` shares with `previous` (a causal model's keys and values
// of earlier tokens do not depend on later ones): only the positions after the common prefix
// are computed (at least the last: the logits are of the last position); an encoder's every
// position depends on every token, so its pass is whole. When `ids` extends
// previous's tokens and no other live pass reads past them, the new positions are written into
// previous's store (previous itself is unchanged); else the prefix is copied into a new store
// with room for growth (grownCapacity).
Run forwardAppend(const Checkpoint& model, const std::vector<int>& ids, const Run& previous);
// The pass over base's tokens with `edits` (checkInterventions first). No edits: base itself.
// Layers below the first that the edits change are not computed: the new Run views them where
// they lie, and computes the rest from the residual stream entering that layer. With `reuse` (an
// earlier edited pass over the same tokens, such as the one before an edit was added or undone),
// the layers below the first where reuse's edits and these differ are viewed in reuse when that is
// higher. Only the computed layers take memory (storeBytes(config, T, computedFrom())).
Run forwardEdited(const Checkpoint& model, const Run& base, const std::vector<Intervention>& edits, const Run* reuse = nullptr,
                  const Progress* progress = nullptr);

// The room a store made for a growing text of T tokens holds: T and 32 more, at most n_positions.
Eigen::Index grownCapacity(const Config& config, Eigen::Index tokens);
// Bytes of a store with room for C positions: per layer input, normed [C, d] (not when Lean), qkv
// [C, (h+2g)·d_h], scoreMax and logSum [h, C] each and, when kept, every query head's weights
// [C, C]; then final [C, d].
// A store of an edited pass holds the layers from firstLayer on.
std::uint64_t storeBytes(const Config& config, Eigen::Index capacity, int firstLayer = 0, PassMaps maps = PassMaps::Kept);

// Rows r0 … r0 + out.rows() − 1 of query head `head`'s weights in `layer` of the pass, made from
// its kept q, k, scoreMax and logSum: out [n, T], exactly the pass's softmax to float rounding, the
// causal mask (a decoder's), the layer's window and the pass's hidden tokens applied (0 where blocked). Works
// whether or not the pass kept its weights. `config` is the pass's model's.
void mapWeightRows(const Run& run, const Config& config, int layer, int head, Eigen::Index r0, Eigen::Ref<Mat> out);
// The same weights for rows r0 … r0 + n − 1, made a tile of keys at a time into `sink` (TileSink's
// order: blocks of kTileSinkRows rows, each block's tiles of kAttentionTileKeys keys from the last
// down to the first the block may read), so that each tile's scores and weights stay in cache and
// each tile of keys is read once for the block's queries; no row is ever whole. Keys [k0, k1)
// only (−1: to the end), a zoomed region's: the tiles that hold none of them are not made.
inline constexpr Eigen::Index kTileSinkRows = 96;
void mapWeightTiles(const Run& run, const Config& config, int layer, int head, Eigen::Index r0, Eigen::Index n, TileSink& sink,
                    Eigen::Index k0 = 0, Eigen::Index k1 = -1);
// The longest common prefix of two id sequences.
std::size_t commonPrefix(const std::vector<int>& a, const std::vector<int>& b);

// The `count` most likely next tokens of softmax(logits / temperature), most likely first.
std::vector<NextToken> topNext(const Vec& logits, float temperature, int count);
// The probabilities of `tokens` under softmax(logits / temperature).
std::vector<float> probabilities(const Vec& logits, const std::vector<NextToken>& tokens, float temperature);

// A next token's probability before and after a what-if edit (softmax at τ = 1), and the change
// of its log-probability, after − before (natural log).
struct NextTokenChange {
    int id = 0;
    float before = 0, after = 0;
    double deltaLogProb = 0;
};
// The union of the `count` most likely tokens before and after, sorted by |Δ log-prob|, largest
// first (ties: the more likely before first). None when the passes predict nothing (empty logits).
std::vector<NextTokenChange> nextTokenChanges(const Vec& before, const Vec& after, int count);

// One layer's attention as a scenario model: X = the layer's normed input, W_Q, W_K, W_V, W_O
// and their biases, the kv heads, RoPE's tables, q/k norms, and the token labels; with causal
// settings (and the layer's window: layerSettings) at τ = 1 its forward pass gives this layer's
// kept weights.
Model layerModel(const Checkpoint& model, const Run& run, int layer, const std::vector<std::string>& labels);

// A token's label: byteTokenLabel of its bytes, or "⟨id N⟩" for an id the tokenizer has no
// token for (the rows some checkpoints pad their vocabulary with).
std::string tokenLabel(const Checkpoint& model, int id);
// The tokens' labels (tokenLabel of each).
std::vector<std::string> tokenLabels(const Checkpoint& model, const std::vector<int>& ids);

}  // namespace attnviz::core::decoder
