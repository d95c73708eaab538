// Scenario files: the one format for presets, saved sessions, tests and the command line.
// A JSON object; every key is optional where a default makes sense; unknown keys are errors.
// The keys and their defaults are documented in README.md ("Scenario files").
#pragma once

#include "core/base/files.hpp"
#include "core/base/matrix.hpp"
#include "core/scenario/embedding.hpp"
#include "core/text/tokenizer.hpp"

#include <nlohmann/json_fwd.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace attnviz::core {

// A projection matrix: seeded, identity, explicit numbers, or absent (W_O only).
struct MatrixSpec {
    enum class Kind { Random, Identity, Explicit, None };
    Kind kind = Kind::Random;
    Mat value;  // Explicit only
};

// A what-if edit of a model's pass (only with a model): layer.head's output zeroed before W_O, or
// replaced by its mean over the positions (decoder::Intervention). Layers and heads count from 0.
struct HeadAblation {
    int layer = 0, head = 0;
    bool mean = false;
    bool operator==(const HeadAblation&) const = default;
};

// The largest layer index a scenario or --layer may name (no model has more layers).
inline constexpr int kMaxLayerIndex = 4096;

struct Scenario {
    std::string name;
    std::string description;
    std::optional<std::string> sentence;
    std::optional<std::string> pair;  // a model's second sentence (an encoder's sentence pair: token type 1)
    std::optional<std::vector<std::string>> tokens;
    Tokenizer tokenizer = Tokenizer::Word;
    std::optional<int> dModel, heads, dk, dv;
    std::uint64_t seed = 0;
    EmbeddingKind embedding = EmbeddingKind::Random;
    Positional positional = Positional::None;
    float ropeBase = 10000.0f;                  // RoPE's θ base: pair i of a head turns by position · base^(-2i/d_k)
    std::optional<int> kvHeads;                 // key/value heads shared by the query heads (grouped-query); default heads
    int window = 0;                             // sliding window of keys (0: none)
    std::optional<Mat> x;                       // [T, d_model]
    MatrixSpec wq, wk, wv;                      // [d_model, h*d_k] / [d_model, h*d_v]
    MatrixSpec wo{MatrixSpec::Kind::None, {}};  // [h*d_v, d_model]
    std::optional<Mat> q, k, v;                 // explicit single head: [T_q, d_k], [T_k, d_k], [T_k, d_v]
    bool causal = false;
    bool causalGiven = false;  // "causal" was given: else a model's scenario shows the model's own mask
    float temperature = 1.0f;
    bool scaled = true;
    std::vector<std::pair<int, int>> swaps;             // applied in order to the token positions
    std::optional<std::vector<std::string>> keyTokens;  // labels of the key side (cross-attention)
    std::vector<int> padding;                           // key positions every query ignores
    std::optional<MaskMat> mask;                        // [T_q, T_k], true (1) = blocked
    std::optional<int> length;                          // repeat the tokens cyclically to this many
    // A checkpoint folder (core/models): the sentence is read by its tokenizer and every size,
    // weight and token comes from it; `layer` is the layer whose attention the scenario shows.
    std::optional<std::string> model;
    int layer = 0;  // 0 … kMaxLayerIndex
    // What-if edits of the model's pass (only with `model`): heads ablated ("ablate": ["L.H"],
    // "ablate_mean": ["L.H"]) and tokens hidden from every layer's key sets ("hide_tokens").
    std::vector<HeadAblation> ablations;
    std::vector<int> hiddenTokens;
    // Tokens a model generated after the sentence ("generated": ids, only with `model`): read after
    // the tokenizer's ids of the sentence, exactly as they were chosen (core/models/decoder/generate.hpp).
    std::vector<int> generated;
    // Attention computed elsewhere (core/io/imported_attention.hpp): a .npy or safetensors file of
    // maps, and the tokens file naming its keys ("": tokens.txt beside it, or positions). The
    // maps fix everything else; `layer` is the layer shown.
    std::optional<std::string> attention;
    std::optional<std::string> tokensFile;
};

// "L.H" (two whole numbers, 0 or more: "3.5") as a layer and a head; nullopt for any other text.
std::optional<std::pair<int, int>> parseLayerHead(const std::string& text);
// A head as "L.H".
std::string layerHeadText(int layer, int head);

// The keys a scenario naming a model may not have (the checkpoint fixes what they set).
const std::vector<std::string>& modelFixedKeys();

// The keys a scenario naming attention computed elsewhere may have (every other is refused).
const std::vector<std::string>& attentionKeys();

// The sentence used when a scenario names neither sentence, tokens, X nor Q.
inline constexpr const char* kDefaultSentence = "the cat sat on the mat";

// Throws InputError naming the field ("W_Q: row 2 has 3 values, expected 2").
Scenario scenarioFromJson(const nlohmann::json& j);

// What parsing a scenario's text built: numbers read straight into matrices (4 bytes each), and
// JSON values built as a tree for the rest (tokens, sizes, flags: some 50 bytes each).
struct ScenarioParseCounts {
    std::size_t matrixNumbers = 0;
    std::size_t jsonValues = 0;
};
// A list outside the matrices longer than this is not a scenario's (a million tokens would need
// 8 TB of scores and weights a head); refused while parsing, before its tree fills the memory.
inline constexpr std::size_t kMaxScenarioJsonValues = std::size_t{1} << 20;

// Parses text; JSON syntax errors name the line and column. `where` prefixes messages (a file name).
// The matrices (X, W_Q, W_K, W_V, W_O, Q, K, V, mask) go from the parser's events straight into
// floats, never through a JSON tree: parsing costs about the text and its numbers, where a tree
// took up to 22 times the text (an X of one column). The same scenario and the same errors as
// scenarioFromJson.
Scenario parseScenario(const std::string& text, const std::string& where, ScenarioParseCounts* counts = nullptr);
// Reads and parses a file; errors name the file.
Scenario loadScenarioFile(const std::string& path);

// Text that is not valid UTF-8 (a sentence or a folder's name is bytes) is written repaired,
// with its exact bytes beside it as "<key>_bytes" (putText), which the readers above prefer:
// the saved scenario gives the same input back.
nlohmann::json scenarioToJson(const Scenario& s);

// A matrix as a JSON array of rows, each number the shortest text that reads back as the same float.
nlohmann::json matrixToJson(const MatRef& m);

// A head as titles name it: "head 2 of 8", "mean of 8 heads" (head < 0), and with a model its
// layer first, as papers do: "layer 5 · head 2 of 12".
std::string headName(const Scenario& s, int head, int heads);

// Every key a scenario file may hold, in documentation order.
const std::vector<std::string>& scenarioKeys();

// A scenario file is read whole, up to kMaxTextFileBytes (core/base/files.hpp): 256 MiB holds an
// explicit X of 16384 tokens x 1024 (180 MB as shortest float text) with room to spare; parsing
// peaks at about the text and its floats (README, "Scenario files").
inline constexpr std::size_t kMaxScenarioFileBytes = kMaxTextFileBytes;

}  // namespace attnviz::core
