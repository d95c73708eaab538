// config.json of a Llama, Mistral, Qwen2 or Qwen3 folder (Hugging Face's LlamaConfig,
// MistralConfig, Qwen2Config, Qwen3Config keys, as transformers 4 and 5 write them).
#include "core/base/error.hpp"
#include "core/base/format.hpp"
#include "core/base/json_text.hpp"
#include "core/models/decoder/decoder_files.hpp"
#include "core/models/llama/llama.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <string>

namespace attnviz::core::llama {

namespace {

using decoder::flagField;
using decoder::numberField;
using decoder::sizeField;
using nlohmann::json;

using decoder::kMaxHeads;
using decoder::kMaxInner;
using decoder::kMaxLayers;
using decoder::kMaxPositions;
using decoder::kMaxVocab;
using decoder::kMaxWidth;
constexpr std::array<const char*, 5> kTypes = {"llama", "mistral", "qwen2", "qwen3", "phi3"};

// The rotary settings: transformers 5's rope_parameters, or transformers 4's rope_theta and
// rope_scaling (readRopeSettings: default, linear, llama3 and longrope; others refused by name).
decoder::Rope readRope(const json& j, const std::string& name, int positions, int originalPositions, int rotaryWidth) {
    const double theta = numberField(j, "rope_theta", 10000, 0, 1e12, name);
    const auto parameters = j.find("rope_parameters");
    if (parameters == j.end() || parameters->is_null()) {
        const auto scaling = j.find("rope_scaling");
        return decoder::readRopeSettings(scaling == j.end() ? nullptr : &*scaling, theta, name + ": rope_scaling", positions,
                                         originalPositions, rotaryWidth);
    }
    const std::string where = name + ": rope_parameters";
    if (!parameters->is_object()) throw InputError(where, "expected an object, got " + describeJson(*parameters));
    if (parameters->find("rope_type") == parameters->end() && parameters->find("type") == parameters->end() &&
        parameters->find("full_attention") != parameters->end())
        throw InputError(where, "rotary settings per kind of layer are not read (one set for every layer is)");
    return decoder::readRopeSettings(&*parameters, numberField(*parameters, "rope_theta", theta, 0, 1e12, where), where, positions,
                                     originalPositions, rotaryWidth);
}

// Phi-3's rotary settings as Phi3Config takes them: "su" and "yarn", the names of its first
// checkpoints, are LongRoPE; no scaling or LongRoPE only (another type is refused, naming it).
json phi3Rope(json j, const std::string& name) {
    for (const char* key : {"rope_parameters", "rope_scaling"}) {
        const auto settings = j.find(key);
        if (settings == j.end() || !settings->is_object()) continue;
        for (const char* field : {"rope_type", "type"}) {
            const auto kind = settings->find(field);
            if (kind == settings->end() || !kind->is_string()) continue;
            const std::string value = kind->get<std::string>();
            if (value == "su" || value == "yarn") *kind = "longrope";
            else if (value != "longrope" && value != "default")
                throw InputError(name + ": " + key + ": " + field,
                                 quoteValue(value) + " is not a scaling Phi-3 reads (longrope, or su and yarn by their old names)");
        }
    }
    return j;
}

// The sliding window of each layer: Mistral's and Phi-3's sliding_window on every layer; Qwen2's and Qwen3's
// only with use_sliding_window, on layers from max_window_layers on; or the layer_types list
// transformers 5 writes ("full_attention", "sliding_attention").
std::vector<int> readWindows(const json& j, const std::string& type, int layers, const std::string& name) {
    std::vector<int> windows(static_cast<std::size_t>(layers), 0);
    const int window = sizeField(j, "sliding_window", kMaxPositions, name, "", false, 0);
    if (type == "llama" || window == 0) return windows;
    if (const auto kinds = j.find("layer_types"); kinds != j.end() && !kinds->is_null()) {
        if (!kinds->is_array() || kinds->size() != static_cast<std::size_t>(layers))
            throw InputError(name + ": layer_types",
                             "expected one entry per layer (" + std::to_string(layers) + "), got " + describeJson(*kinds));
        for (int l = 0; l < layers; ++l) {
            const json& k = (*kinds)[static_cast<std::size_t>(l)];
            const std::string kind = k.is_string() ? k.get<std::string>() : "";
            if (kind == "sliding_attention") windows[static_cast<std::size_t>(l)] = window;
            else if (kind != "full_attention")
                throw InputError(name + ": layer_types[" + std::to_string(l) + "]",
                                 (k.is_string() ? quoteValue(kind) : describeJson(k)) + " is not full_attention or sliding_attention");
        }
        // Qwen2 and Qwen3 write layer_types with a window that applies only with use_sliding_window.
        if (type != "mistral" && type != "phi3" && !flagField(j, "use_sliding_window", false, name))
            std::fill(windows.begin(), windows.end(), 0);
        return windows;
    }
    if (type == "mistral" || type == "phi3") {
        std::fill(windows.begin(), windows.end(), window);
        return windows;
    }
    if (!flagField(j, "use_sliding_window", false, name)) return windows;
    // max_window_layers may be 0 (every layer slides).
    int from = layers;
    if (const auto it = j.find("max_window_layers"); it != j.end() && !it->is_null()) {
        if (!it->is_number_integer() || it->get<long long>() < 0 || it->get<long long>() > kMaxLayers)
            throw InputError(name + ": max_window_layers",
                             "expected a whole number from 0 to " + std::to_string(kMaxLayers) + ", got " + describeJson(*it));
        from = std::min(layers, static_cast<int>(it->get<long long>()));
    }
    for (int l = from; l < layers; ++l) windows[static_cast<std::size_t>(l)] = window;
    return windows;
}

}  // namespace

bool readsModelType(std::string_view modelType) {
    for (const char* t : kTypes)
        if (modelType == t) return true;
    return false;
}

decoder::Config parseConfig(std::string_view text, const std::string& name) {
    const json j = parseJson(text, name, false);
    if (j.is_discarded()) throw InputError(name, "not valid JSON");
    if (!j.is_object()) throw InputError(name, "expected a JSON object, got " + describeJson(j));
    const auto typeField = j.find("model_type");
    if (typeField == j.end())
        throw InputError(name, "model_type: missing (expected \"llama\", \"mistral\", \"qwen2\", \"qwen3\" or \"phi3\")");
    const std::string type = typeField->is_string() ? typeField->get<std::string>() : std::string();
    if (!readsModelType(type))
        throw InputError(name + ": model_type", (typeField->is_string() ? quoteValue(type) : describeJson(*typeField)) +
                                                    " is not a family this reader knows (llama, mistral, qwen2, qwen3, phi3)");
    const std::string who = "a " + type + " config.json";

    decoder::Config c;
    c.family = type;
    c.norm = decoder::Norm::RmsNorm;
    c.gatedMlp = true;
    c.rotary = true;
    c.nLayer = sizeField(j, "num_hidden_layers", kMaxLayers, name, who);
    c.nHead = sizeField(j, "num_attention_heads", kMaxHeads, name, who);
    c.nKvHead = sizeField(j, "num_key_value_heads", kMaxHeads, name, who, false, c.nHead);
    c.nEmbd = sizeField(j, "hidden_size", kMaxWidth, name, who);
    c.nInner = sizeField(j, "intermediate_size", kMaxInner, name, who);
    c.vocabSize = sizeField(j, "vocab_size", kMaxVocab, name, who);
    // Hugging Face's defaults where a config leaves a size out.
    const int defaultPositions = type == "llama" ? 2048 : type == "mistral" ? 4096 * 32 : type == "phi3" ? 4096 : 32768;
    c.nPositions = sizeField(j, "max_position_embeddings", kMaxPositions, name, who, false, defaultPositions);
    if (c.nHead % c.nKvHead != 0)
        throw InputError(name + ": num_key_value_heads",
                         std::to_string(c.nKvHead) + " does not divide num_attention_heads " + std::to_string(c.nHead));
    if (type != "qwen3" && j.find("head_dim") == j.end() && c.nEmbd % c.nHead != 0)
        throw InputError(name + ": num_attention_heads", std::to_string(c.nHead) + " does not divide hidden_size " +
                                                             std::to_string(c.nEmbd) + " (and no head_dim is given)");
    c.headDim = sizeField(j, "head_dim", kMaxWidth, name, who, type == "qwen3" && c.nEmbd % c.nHead != 0, c.nEmbd / c.nHead);
    if (c.headDim % 2 != 0)
        throw InputError(name + ": head_dim", std::to_string(c.headDim) + " is odd: rotary positions turn pairs of dimensions");
    c.normEpsilon = static_cast<float>(numberField(j, "rms_norm_eps", 1e-6, 0, 1, name));
    c.activation = decoder::activationField(j, "hidden_act", decoder::Activation::Silu, name);
    // Phi-3's partial rotary: RoPE turns the leading int(d_h · factor) dimensions of a head.
    if (const double part = numberField(j, "partial_rotary_factor", 1, 0, 1 + 1e-9, name); part != 1) {
        c.rotaryDim = static_cast<int>(c.headDim * part);
        if (c.rotaryDim < 2 || c.rotaryDim % 2 != 0)
            throw InputError(name + ": partial_rotary_factor", formatNumber(part) + " of head_dim " + std::to_string(c.headDim) +
                                                                   " turns " + std::to_string(c.rotaryDim) +
                                                                   " dimensions: not a positive even number");
    }
    const int original = sizeField(j, "original_max_position_embeddings", kMaxPositions, name, who, false, 0);
    c.rope = readRope(type == "phi3" ? phi3Rope(j, name) : j, name, c.nPositions, original, c.rotaryWidth());
    c.qkNorm = type == "qwen3";
    c.windows = readWindows(j, type, c.nLayer, name);
    c.tieWordEmbeddings = flagField(j, "tie_word_embeddings", false, name);
    // Biases: Qwen2's q, k and v always; attention_bias adds q, k, v and o's (Llama, Qwen3), and
    // mlp_bias the MLP's (Llama).
    const bool attentionBias = type != "mistral" && flagField(j, "attention_bias", false, name);
    c.qkvBias = type == "qwen2" || attentionBias;
    c.outBias = attentionBias;
    c.mlpBias = type == "llama" && flagField(j, "mlp_bias", false, name);
    return c;
}

}  // namespace attnviz::core::llama
