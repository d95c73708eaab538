// GPT-2 (Radford et al. 2019) read from a Hugging Face folder and run natively: every layer's
// every head's attention weights kept, and the next token's distribution.
//
// A folder holds config.json, model.safetensors, and the tokenizer as vocab.json + merges.txt
// or as tokenizer.json. Tensor names are Hugging Face's GPT2LMHeadModel's, with or without the
// "transformer." prefix; the causal-mask buffers (h.N.attn.bias, h.N.attn.masked_bias) are
// ignored; lm_head.weight, when present, must equal wte (GPT-2 ties them).
//
// The forward pass, T tokens, d = n_embd, h = n_head, d_k = d / h, per block l:
//   x     = wte[ids] + wpe[0 … T)                           [T, d]
//   a     = LayerNorm(x; ln_1)                              [T, d]
//   qkv   = a · c_attn.W + c_attn.b                         [T, 3d]   (Conv1D: W is [in, out])
//   per head: q, k, v = qkv's columns [i·d_k, …), [d + i·d_k, …), [2d + i·d_k, …)
//             A = softmax_causal(q kᵀ / √d_k)               [T, T]    (kept, every layer, every head)
//             o = A v                                       [T, d_k]
//   x    += [o_0 | … | o_{h-1}] · attn.c_proj.W + b         [T, d]
//   x    += gelu(LayerNorm(x; ln_2) · c_fc.W + b) · mlp.c_proj.W + b   (gelu's tanh form)
// then ln_f, and the logits of the last position against wte: [vocab].
// The products are the register-tiled kernels of core/attention; the weights of every product
// are packed for them once, when the checkpoint is opened.
#pragma once

#include "core/attention/attention.hpp"
#include "core/base/matrix.hpp"
#include "core/base/progress.hpp"
#include "core/models/safetensors.hpp"
#include "core/scenario/model.hpp"
#include "core/text/byte_bpe.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace attnviz::core::gpt2 {

enum class Activation { GeluTanh, GeluErf, Relu };

struct Config {
    int nLayer = 0, nHead = 0, nEmbd = 0, nPositions = 0, vocabSize = 0, nInner = 0;
    float layerNormEpsilon = 1e-5f;
    Activation activation = Activation::GeluTanh;
    bool scaleAttnWeights = true;             // divide scores by √d_k
    bool scaleAttnByInverseLayerIdx = false;  // and by l + 1 (some fine-tunes): refused
    bool tieWordEmbeddings = true;            // the logits read wte; false: lm_head.weight
    int headWidth() const { return nEmbd / nHead; }
};
// config.json's text; `name` stands for the file in messages. Throws InputError naming the
// field ("config.json: n_head: 5 does not divide n_embd 768").
Config parseConfig(std::string_view json, const std::string& name);

// A matrix the checkpoint holds: its floats where they lie in the mapped file (F32), or
// converted once (F16, BF16), and packed for the kernels.
struct Weight {
    std::string name;  // the tensor's name in the file
    const float* data = nullptr;
    Eigen::Index rows = 0, cols = 0;
    PackedColumns packed;  // products only
    Eigen::Map<const Mat> map() const { return {data, rows, cols}; }
    Eigen::Map<const RowVec> row() const { return {data, rows * cols}; }
};

struct Block {
    Weight ln1Gain, ln1Bias, attnW, attnBias, projW, projBias;  // [d] [d] [d, 3d] [3d] [d, d] [d]
    Weight ln2Gain, ln2Bias, fcW, fcBias, fcProjW, fcProjBias;  // [d] [d] [d, 4d] [4d] [4d, d] [d]
};

// The files a model folder holds, found (nothing read yet): config.json, model.safetensors, and
// vocab.json + merges.txt, or tokenizer.json as `vocab` with `merges` empty.
struct ModelFiles {
    std::string config, weights, vocab, merges;
};
// Throws InputError naming the folder or the file that is missing or not a regular file.
ModelFiles locateFiles(const std::string& folder);

class Checkpoint {
public:
    // Opens a folder; errors name the file and the tensor or field. `progress` counts the bytes
    // read and checked, and may stop the opening (Cancelled).
    static std::shared_ptr<const Checkpoint> open(const std::string& folder, Progress* progress = nullptr);
    // The same from files already named (tests); tokenizer: vocab + merges, or tokenizer.json
    // when mergesPath is empty.
    static std::shared_ptr<const Checkpoint> openFiles(const std::string& configPath, const std::string& weightsPath,
                                                       const std::string& vocabPath, const std::string& mergesPath,
                                                       Progress* progress = nullptr);

    const std::string& folder() const { return m_folder; }
    const std::string& name() const { return m_name; }  // the folder's last component
    const Config& config() const { return m_config; }
    const ByteBpe& tokenizer() const { return *m_tokenizer; }
    const Weight& wte() const { return m_wte; }  // [vocab, d]
    const Weight& wpe() const { return m_wpe; }  // [n_positions, d]
    const std::vector<Block>& blocks() const { return m_blocks; }
    const Weight& lnfGain() const { return m_lnfGain; }
    const Weight& lnfBias() const { return m_lnfBias; }
    const Weight& lmHead() const { return m_tied ? m_wte : m_lmHead; }  // [vocab, d]
    std::uint64_t fileBytes() const;
    // Throws InputError("…/model.safetensors", "changed while it was read; open it again") once
    // the file changed since it was opened: what a pass read from it cannot be trusted.
    void checkUnchanged() const;
    bool changed() const;
    // Every weight, in the order a pass reads them (wte, wpe, each block's, ln_f, lm_head).
    std::vector<const Weight*> weights() const;
    // Why a pass turned non-finite at `where`: throws InputError naming the file, the first weight
    // (in pass order) that holds a NaN or an infinity and its first such index; the file changed
    // (checkUnchanged); or, when every weight is finite, "<where>: <problem>" (a real overflow).
    [[noreturn]] void explainNonFinite(const std::string& where, const std::string& problem) const;

    struct Private;
    Checkpoint();
    ~Checkpoint();

private:
    std::string m_folder, m_name;
    Config m_config;
    std::unique_ptr<ByteBpe> m_tokenizer;
    std::unique_ptr<SafetensorsFile> m_file;
    std::vector<std::vector<float>> m_converted;  // F16/BF16 tensors as floats, or misaligned F32
    Weight m_wte, m_wpe, m_lnfGain, m_lnfBias, m_lmHead;
    bool m_tied = true;
    std::vector<Block> m_blocks;
};

struct NextToken {
    int id = 0;
    float logit = 0, prob = 0;
};

// A kept matrix: rows of a store whose rows are `capacity` floats apart.
using KeptView = Eigen::Map<const Mat, 0, Eigen::OuterStride<>>;

// A pass's kept matrices, every layer's every head's. They live in one store of C >= T
// positions (anonymous memory, in huge pages where the kernel offers them); a later pass over
// the same tokens and more (typing at the end of the sentence) writes its new rows and columns
// into the same store when no other live pass reads them, so that earlier positions never move.
// A Run is a read-only handle: copies share the store.
class Run {
public:
    std::vector<int> ids;
    Vec logits;  // [vocab] of the last position

    Eigen::Index tokens() const { return static_cast<Eigen::Index>(ids.size()); }
    int layerCount() const;
    int headCount() const;
    Eigen::Index capacity() const;                // positions the store holds room for
    KeptView input(int layer) const;              // [T, d] the residual stream entering the block
    KeptView normed(int layer) const;             // [T, d] LayerNorm(input; ln_1): the attention's input
    KeptView qkv(int layer) const;                // [T, 3d]
    KeptView weights(int layer, int head) const;  // [T, T]
    KeptView final() const;                       // [T, d] after ln_f

    struct Extent;  // the store and this pass's claim on its first T positions

private:
    friend struct RunAccess;
    std::shared_ptr<const Extent> m_extent;
};

// Throws InputError naming `field` unless 1 ≤ T ≤ n_positions and every id < vocab.
void checkIds(const Config& config, const std::vector<int>& ids, const std::string& field);
// The forward pass over `ids`. Throws InputError (checkIds; activations that overflow), and
// Cancelled between layers once `progress` was asked to stop.
Run forward(const Checkpoint& model, const std::vector<int>& ids, const Progress* progress = nullptr);
// The same, reusing the positions `ids` shares with `previous` (a causal model's keys and values
// of earlier tokens do not depend on later ones): only the positions after the common prefix
// are computed (at least the last: the logits are of the last position). When `ids` extends
// previous's tokens and no other live pass reads past them, the new positions are written into
// previous's store (previous itself is unchanged); else the prefix is copied into a new store
// with room for growth (grownCapacity).
Run forwardAppend(const Checkpoint& model, const std::vector<int>& ids, const Run& previous);
// The room a store made for a growing text of T tokens holds: T and 32 more, at most n_positions.
Eigen::Index grownCapacity(const Config& config, Eigen::Index tokens);
// Bytes of a store with room for C positions: per layer input, normed [C, d], qkv [C, 3d] and
// every head's weights [C, C], then final [C, d].
std::uint64_t storeBytes(const Config& config, Eigen::Index capacity);
// The longest common prefix of two id sequences.
std::size_t commonPrefix(const std::vector<int>& a, const std::vector<int>& b);

// The `count` most likely next tokens of softmax(logits / temperature), most likely first.
std::vector<NextToken> topNext(const Vec& logits, float temperature, int count);

// One layer's attention as a scenario model: X = the layer's normed input, W_Q, W_K, W_V and
// their biases from c_attn, W_O and its bias from attn.c_proj, the token labels; with causal
// settings at τ = 1 its forward pass gives this layer's kept weights.
Model layerModel(const Checkpoint& model, const Run& run, int layer, const std::vector<std::string>& labels);

// A token's label: byteTokenLabel of its bytes, or "⟨id N⟩" for an id the tokenizer has no
// token for (the rows some checkpoints pad their vocabulary with).
std::string tokenLabel(const Checkpoint& model, int id);
// The tokens' labels (tokenLabel of each).
std::vector<std::string> tokenLabels(const Checkpoint& model, const std::vector<int>& ids);

// The probabilities of `tokens` under softmax(logits / temperature).
std::vector<float> probabilities(const Vec& logits, const std::vector<NextToken>& tokens, float temperature);

}  // namespace attnviz::core::gpt2
