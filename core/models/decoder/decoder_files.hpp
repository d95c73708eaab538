// A model folder's files, as every family lays them out: config.json, the weights in
// model.safetensors or in shards named by model.safetensors.index.json, and the tokenizer
// (vocab.json + merges.txt, vocab.txt, or tokenizer.json). And the tensors taken from them into Weights.
// Private to the families' readers (core/models/*/).
#pragma once

#include "core/models/decoder/decoder.hpp"

#include <nlohmann/json_fwd.hpp>

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace attnviz::core::decoder {

// Sizes real models stay far below (Llama 3.1 405B: 126 layers, 128 heads, 16,384 wide, 53,248
// inner; Gemma 3: 262,208 tokens, 131,072 positions): the bounds of config.json's sizes, so that a
// hostile config cannot make a reader allocate what no model needs.
inline constexpr long long kMaxLayers = 1024, kMaxHeads = 1024, kMaxWidth = 65536, kMaxInner = 1 << 20, kMaxPositions = 1 << 24,
                           kMaxVocab = 1 << 22;

// A model's config.json is a few kilobytes; one of megabytes is not a config (and would be parsed
// whole into a JSON tree).
inline constexpr std::size_t kMaxConfigBytes = std::size_t{4} << 20;
// Reads a model folder's config.json, up to kMaxConfigBytes.
std::string readConfigText(const std::string& path);

// The files a model folder holds, found (nothing read yet).
struct ModelFiles {
    std::string config;
    std::string weights;  // model.safetensors, or model.safetensors.index.json (sharded)
    bool sharded = false;
    // The tokenizer's files that are there (empty when not): tokenizer.json, vocab.json and
    // merges.txt (byte-level BPE), vocab.txt and tokenizer_config.json (WordPiece).
    std::string tokenizerJson, vocab, merges, wordVocab, tokenizerConfig;
};
// Throws InputError naming the folder or the file that is missing or not a regular file;
// `family` names the kind of folder in messages ("a Hugging Face GPT-2 folder"). A folder with
// no tokenizer at all is refused here; which one is read is the family's choice.
ModelFiles locateFiles(const std::string& folder, const std::string& family);

// The tensors of a checkpoint's files, each found in exactly one of them.
class Tensors {
public:
    // Maps `files.weights` (or every shard its index names: each a plain file name in the
    // folder, mapped once; a tensor in two shards, or in another shard than the index says, is
    // refused naming both). The files are kept in parts.files.
    Tensors(const ModelFiles& files, Checkpoint::Parts& parts, Progress* progress);

    struct Found {
        const SafetensorsFile* file = nullptr;
        const TensorInfo* tensor = nullptr;
        explicit operator bool() const { return tensor != nullptr; }
    };
    Found find(const std::string& name) const;
    // Every tensor's name and file, in no particular order.
    const std::unordered_map<std::string, Found>& all() const { return m_byName; }

    // How a tensor is used: a vector (gains, biases), a product's weight stored [in, out] (as
    // GPT-2's Conv1D) or [out, in] (nn.Linear: transposed when packed), or rows read one at a
    // time (embeddings, and lm_head's logits).
    enum class Use { Vector, Product, ProductTransposed, Rows };
    // The tensor `found` checked to be a float type of exactly `shape` (as the file stores it),
    // its floats in place or widened, packed for a product. Counts its bytes on `progress`.
    Weight take(const Found& found, const std::vector<std::int64_t>& shape, Use use) const;
    // Stored rows [first, first + count) of a tensor of `shape` (a fused weight's part: ModernBERT's
    // Wi holds the MLP's input and gate one above the other), as take makes a weight of its own.
    Weight takeRows(const Found& found, const std::vector<std::int64_t>& shape, std::int64_t first, std::int64_t count, Use use) const;
    // take(find(name)), or InputError("<first file>: <name>", "missing (<why>)").
    Weight take(const std::string& name, const std::vector<std::int64_t>& shape, Use use, const std::string& why) const;

private:
    Checkpoint::Parts& m_parts;
    Progress* m_progress;
    std::unordered_map<std::string, Found> m_byName;
};

// Throws InputError("<file>: <name>", "layer N is beyond config.json's <field> <count>") for the
// first tensor under `layers` ("model.layers.", "bert.encoder.layer.") of a layer N ≥ count: the
// config and the weights disagree.
void refuseLayersBeyond(const Tensors& tensors, const std::string& layers, int count, const std::string& field);

// Opens a folder whose tokenizer is tokenizer.json (Llama's, Gemma's layout): config.json read by
// `parse`, the tokenizer, the tensors taken by `load`; `kind` names the folder in messages ("a
// Hugging Face Gemma folder"). `progress` counts the bytes read and checked.
std::shared_ptr<const Checkpoint> openTokenizerJsonFolder(const std::string& folder, const std::string& kind,
                                                          Config (*parse)(std::string_view, const std::string&),
                                                          void (*load)(Checkpoint::Parts&, const Tensors&), Progress* progress);

// The checkpoint's folder and its name (the folder's last component) from the files found in it.
void nameFolder(Checkpoint::Parts& parts, const ModelFiles& files);
// lm_head.weight [vocab, d] (or the tensor `name`) when the config unties it (missing: refused),
// and the tokenizer's vocabulary held to vocab_size: what every family's reader checks last.
void takeLmHead(Checkpoint::Parts& parts, const Tensors& tensors, const std::string& name = "lm_head.weight");

// "[768, 2304]"
std::string shapeText(const std::vector<std::int64_t>& shape);

// config.json's `key` (hidden_act, hidden_activation, activation, classifier_activation) as
// transformers' ACT2FN names it; missing or null: `fallback`. Errors name `name` and the key.
Activation activationField(const nlohmann::json& j, const char* key, Activation fallback, const std::string& name);

// One set of rotary settings over base `theta`, from a rope_scaling or rope_parameters object
// (`scaling`; null or absent: none): rope_type (or type) default, linear, llama3 or longrope, each
// with the fields it needs; another type is refused, naming `where` ("config.json: rope_scaling").
// positions: max_position_embeddings; originalPositions: the config's own
// original_max_position_embeddings (Phi-3 writes it beside rope_scaling), 0 when it has none;
// rotaryWidth: the dimensions turned (LongRoPE's factors are one a pair of them).
Rope readRopeSettings(const nlohmann::json* scaling, double theta, const std::string& where, int positions, int originalPositions,
                      int rotaryWidth);

// config.json's fields, each checked, errors naming the file (`name`) and the key.
// A whole number in 1 … max; missing: InputError("<name>", "<key>: missing (<who> names it)"),
// or `fallback` when not required (then null counts as missing).
int sizeField(const nlohmann::json& j, const char* key, long long max, const std::string& name, const std::string& who,
              bool required = true, int fallback = 0);
// true or false; missing or null: fallback.
bool flagField(const nlohmann::json& j, const char* key, bool fallback, const std::string& name);
// A number in (low, high); missing or null: fallback.
double numberField(const nlohmann::json& j, const char* key, double fallback, double low, double high, const std::string& name);

}  // namespace attnviz::core::decoder
