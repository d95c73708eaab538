// config.json of a Hugging Face GPT-2 folder (GPT2Config's keys; older files name n_ctx too).
#include "core/base/error.hpp"
#include "core/base/json_text.hpp"
#include "core/models/decoder/decoder_files.hpp"
#include "core/models/gpt2/gpt2.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <string>

namespace attnviz::core::gpt2 {

namespace {

using decoder::flagField;
using decoder::sizeField;
using nlohmann::json;

// Sizes a real GPT-2-family model stays far below (gpt2-xl: 48 layers, 25 heads, 1600 wide,
// 1024 positions, 50257 tokens); they bound what a hostile config can make us allocate.
constexpr long long kMaxLayers = 1024, kMaxHeads = 1024, kMaxWidth = 65536, kMaxPositions = 1 << 20, kMaxVocab = 1 << 22;

constexpr const char* kWho = "a GPT-2 config.json";

}  // namespace

decoder::Config parseConfig(std::string_view text, const std::string& name) {
    using decoder::Activation;
    const json j = parseJson(text, name, false);
    if (j.is_discarded()) throw InputError(name, "not valid JSON");
    if (!j.is_object()) throw InputError(name, "expected a JSON object, got " + describeJson(j));

    const auto type = j.find("model_type");
    if (type == j.end()) throw InputError(name, "model_type: missing (expected \"gpt2\")");
    if (!type->is_string() || type->get<std::string>() != "gpt2")
        throw InputError(name + ": model_type", (type->is_string() ? quoteValue(type->get<std::string>()) : describeJson(*type)) +
                                                    " is not a GPT-2 model (attnviz reads \"gpt2\" folders)");

    decoder::Config c;
    c.family = "gpt2";
    c.nLayer = sizeField(j, "n_layer", kMaxLayers, name, kWho);
    c.nHead = sizeField(j, "n_head", kMaxHeads, name, kWho);
    c.nEmbd = sizeField(j, "n_embd", kMaxWidth, name, kWho);
    c.nPositions = sizeField(j, "n_positions", kMaxPositions, name, kWho);
    c.vocabSize = sizeField(j, "vocab_size", kMaxVocab, name, kWho);
    c.nInner = sizeField(j, "n_inner", 4 * kMaxWidth, name, kWho, false, 4 * c.nEmbd);
    if (c.nEmbd % c.nHead != 0)
        throw InputError(name + ": n_head", std::to_string(c.nHead) + " does not divide n_embd " + std::to_string(c.nEmbd));
    c.nKvHead = c.nHead;
    c.headDim = c.nEmbd / c.nHead;

    if (const auto eps = j.find("layer_norm_epsilon"); eps != j.end()) {
        if (!eps->is_number()) throw InputError(name + ": layer_norm_epsilon", "expected a number, got " + describeJson(*eps));
        const double value = eps->get<double>();
        if (!(value > 0 && value < 1)) throw InputError(name + ": layer_norm_epsilon", "expected a small positive number");
        c.normEpsilon = static_cast<float>(value);
    }
    if (const auto act = j.find("activation_function"); act != j.end()) {
        const std::string value = act->is_string() ? act->get<std::string>() : std::string();
        // gelu_new, gelu_fast and gelu_pytorch_tanh are one formula: 0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³))).
        if (value == "gelu_new" || value == "gelu_fast" || value == "gelu_pytorch_tanh") c.activation = Activation::GeluTanh;
        else if (value == "gelu") c.activation = Activation::GeluErf;
        else if (value == "relu") c.activation = Activation::Relu;
        else
            throw InputError(name + ": activation_function",
                             (act->is_string() ? quoteValue(value) : describeJson(*act)) +
                                 " is not one attnviz computes (gelu_new, gelu_fast, gelu_pytorch_tanh, gelu, relu)");
    }
    c.scaleScores = flagField(j, "scale_attn_weights", true, name);
    if (flagField(j, "scale_attn_by_inverse_layer_idx", false, name))
        throw InputError(name + ": scale_attn_by_inverse_layer_idx",
                         "true is not supported (attnviz shows each layer's attention at the standard 1/√d_k scale)");
    c.tieWordEmbeddings = flagField(j, "tie_word_embeddings", true, name);
    return c;
}

}  // namespace attnviz::core::gpt2
