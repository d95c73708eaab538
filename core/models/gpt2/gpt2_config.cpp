// config.json of a Hugging Face GPT-2 folder (GPT2Config's keys; older files name n_ctx too).
#include "core/base/error.hpp"
#include "core/base/json_text.hpp"
#include "core/models/gpt2/gpt2.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <string>

namespace attnviz::core::gpt2 {

namespace {

using nlohmann::json;

// Sizes a real GPT-2-family model stays far below (gpt2-xl: 48 layers, 25 heads, 1600 wide,
// 1024 positions, 50257 tokens); they bound what a hostile config can make us allocate.
constexpr long long kMaxLayers = 1024, kMaxHeads = 1024, kMaxWidth = 65536, kMaxPositions = 1 << 20, kMaxVocab = 1 << 22;

int sizeField(const json& j, const char* key, long long max, const std::string& name, bool required = true, int fallback = 0) {
    const auto it = j.find(key);
    if (it == j.end() || (!required && it->is_null())) {
        if (required) throw InputError(name, std::string(key) + ": missing (a GPT-2 config.json names it)");
        return fallback;
    }
    if (!it->is_number_integer()) throw InputError(name + ": " + key, "expected a whole number, got " + describeJson(*it));
    const auto value = it->get<long long>();
    if (value < 1 || value > max) throw InputError(name + ": " + key, std::to_string(value) + " is outside 1 … " + std::to_string(max));
    return static_cast<int>(value);
}

bool flagField(const json& j, const char* key, bool fallback, const std::string& name) {
    const auto it = j.find(key);
    if (it == j.end() || it->is_null()) return fallback;
    if (!it->is_boolean()) throw InputError(name + ": " + key, "expected true or false, got " + describeJson(*it));
    return it->get<bool>();
}

}  // namespace

Config parseConfig(std::string_view text, const std::string& name) {
    const json j = json::parse(text.begin(), text.end(), nullptr, false);
    if (j.is_discarded()) throw InputError(name, "not valid JSON");
    if (!j.is_object()) throw InputError(name, "expected a JSON object, got " + describeJson(j));

    const auto type = j.find("model_type");
    if (type == j.end()) throw InputError(name, "model_type: missing (expected \"gpt2\")");
    if (!type->is_string() || type->get<std::string>() != "gpt2")
        throw InputError(name + ": model_type", (type->is_string() ? quoteValue(type->get<std::string>()) : describeJson(*type)) +
                                                    " is not a GPT-2 model (attnviz reads \"gpt2\" folders)");

    Config c;
    c.nLayer = sizeField(j, "n_layer", kMaxLayers, name);
    c.nHead = sizeField(j, "n_head", kMaxHeads, name);
    c.nEmbd = sizeField(j, "n_embd", kMaxWidth, name);
    c.nPositions = sizeField(j, "n_positions", kMaxPositions, name);
    c.vocabSize = sizeField(j, "vocab_size", kMaxVocab, name);
    c.nInner = sizeField(j, "n_inner", 4 * kMaxWidth, name, false, 4 * c.nEmbd);
    if (c.nEmbd % c.nHead != 0)
        throw InputError(name + ": n_head", std::to_string(c.nHead) + " does not divide n_embd " + std::to_string(c.nEmbd));

    if (const auto eps = j.find("layer_norm_epsilon"); eps != j.end()) {
        if (!eps->is_number()) throw InputError(name + ": layer_norm_epsilon", "expected a number, got " + describeJson(*eps));
        const double value = eps->get<double>();
        if (!(value > 0 && value < 1)) throw InputError(name + ": layer_norm_epsilon", "expected a small positive number");
        c.layerNormEpsilon = static_cast<float>(value);
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
    c.scaleAttnWeights = flagField(j, "scale_attn_weights", true, name);
    c.scaleAttnByInverseLayerIdx = flagField(j, "scale_attn_by_inverse_layer_idx", false, name);
    if (c.scaleAttnByInverseLayerIdx)
        throw InputError(name + ": scale_attn_by_inverse_layer_idx",
                         "true is not supported (attnviz shows each layer's attention at the standard 1/√d_k scale)");
    c.tieWordEmbeddings = flagField(j, "tie_word_embeddings", true, name);
    return c;
}

}  // namespace attnviz::core::gpt2
