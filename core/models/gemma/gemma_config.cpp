// config.json of a Gemma 2 or Gemma 3 folder (Hugging Face's Gemma2Config, Gemma3TextConfig and
// Gemma3Config's text_config, as transformers 4 and 5 write them).
#include "core/base/error.hpp"
#include "core/base/format.hpp"
#include "core/base/json_text.hpp"
#include "core/models/decoder/decoder_files.hpp"
#include "core/models/gemma/gemma.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <string>

namespace attnviz::core::gemma {

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

// What transformers assumes where a Gemma config leaves a field out (Gemma2Config's and
// Gemma3TextConfig's defaults).
struct Defaults {
    int vocab, positions;
    double ropeTheta;
    double attnCap, finalCap;  // 0: none
};
constexpr Defaults kGemma2{256000, 8192, 10000.0, 50.0, 30.0};
constexpr Defaults kGemma3{262208, 131072, 1000000.0, 0.0, 0.0};

// A soft-capping field: left out, the default; null, none; else a positive number.
float capField(const json& j, const char* key, double fallback, const std::string& name) {
    const auto it = j.find(key);
    if (it == j.end()) return static_cast<float>(fallback);
    if (it->is_null()) return 0.0f;
    return static_cast<float>(numberField(j, key, fallback, 0, 1e6, name));
}

// Which layers slide: transformers 5's layer_types, else Gemma 2's even layers, or Gemma 3's all
// but every sliding_window_pattern-th.
std::vector<bool> slidingLayers(const json& j, bool gemma3, int layers, const std::string& name) {
    std::vector<bool> sliding(static_cast<std::size_t>(layers));
    if (const auto kinds = j.find("layer_types"); kinds != j.end() && !kinds->is_null()) {
        if (!kinds->is_array() || kinds->size() != static_cast<std::size_t>(layers))
            throw InputError(name + ": layer_types",
                             "expected one entry per layer (" + std::to_string(layers) + "), got " + describeJson(*kinds));
        for (int l = 0; l < layers; ++l) {
            const json& k = (*kinds)[static_cast<std::size_t>(l)];
            const std::string kind = k.is_string() ? k.get<std::string>() : "";
            if (kind != "sliding_attention" && kind != "full_attention")
                throw InputError(name + ": layer_types[" + std::to_string(l) + "]",
                                 (k.is_string() ? quoteValue(kind) : describeJson(k)) + " is not full_attention or sliding_attention");
            sliding[static_cast<std::size_t>(l)] = kind == "sliding_attention";
        }
        return sliding;
    }
    const int pattern = gemma3 ? sizeField(j, "sliding_window_pattern", kMaxLayers, name, "", false, 6) : 2;
    for (int l = 0; l < layers; ++l) sliding[static_cast<std::size_t>(l)] = (l + 1) % pattern != 0;
    return sliding;
}

// The rotary settings of the global and the local layers: transformers 5's rope_parameters (one
// set, or one for each kind of layer), or 4's rope_theta and rope_scaling (Gemma 3's local
// layers: rope_local_base_freq, unscaled).
std::pair<decoder::Rope, decoder::Rope> readRopes(const json& j, const Defaults& defaults, bool gemma3, const decoder::Config& c,
                                                  const std::string& name) {
    const double theta = numberField(j, "rope_theta", defaults.ropeTheta, 0, 1e12, name);
    const int positions = c.nPositions, width = c.rotaryWidth();
    const auto parameters = j.find("rope_parameters");
    if (parameters != j.end() && !parameters->is_null()) {
        const std::string where = name + ": rope_parameters";
        if (!parameters->is_object()) throw InputError(where, "expected an object, got " + describeJson(*parameters));
        const auto kind = [&](const char* key, double fallback) {
            const auto it = parameters->find(key);
            if (it == parameters->end() || it->is_null()) {
                decoder::Rope plain;
                plain.theta = fallback;
                return plain;
            }
            const std::string at = where + ": " + key;
            if (!it->is_object()) throw InputError(at, "expected an object, got " + describeJson(*it));
            return decoder::readRopeSettings(&*it, numberField(*it, "rope_theta", fallback, 0, 1e12, at), at, positions, 0, width);
        };
        if (parameters->contains("full_attention") || parameters->contains("sliding_attention"))
            return {kind("full_attention", theta), kind("sliding_attention", gemma3 ? 10000.0 : theta)};
        const decoder::Rope one = decoder::readRopeSettings(&*parameters, numberField(*parameters, "rope_theta", theta, 0, 1e12, where),
                                                            where, positions, 0, width);
        return {one, one};
    }
    const auto scaling = j.find("rope_scaling");
    const decoder::Rope global =
        decoder::readRopeSettings(scaling == j.end() ? nullptr : &*scaling, theta, name + ": rope_scaling", positions, 0, width);
    if (!gemma3) return {global, global};
    decoder::Rope local;
    local.theta = numberField(j, "rope_local_base_freq", 10000.0, 0, 1e12, name);
    return {global, local};
}

}  // namespace

bool readsModelType(std::string_view modelType) { return modelType == "gemma2" || modelType == "gemma3_text" || modelType == "gemma3"; }

decoder::Config parseConfig(std::string_view text, const std::string& name) {
    const json whole = parseJson(text, name, false);
    if (whole.is_discarded()) throw InputError(name, "not valid JSON");
    if (!whole.is_object()) throw InputError(name, "expected a JSON object, got " + describeJson(whole));
    const auto typeField = whole.find("model_type");
    const std::string type = typeField != whole.end() && typeField->is_string() ? typeField->get<std::string>() : std::string();
    if (!readsModelType(type))
        throw InputError(name + ": model_type", (typeField == whole.end() ? std::string("missing") : describeJson(*typeField)) +
                                                    " is not a family this reader knows (gemma2, gemma3_text, gemma3)");
    // The image-text model's language model is its text_config.
    std::string at = name;
    const json* fields = &whole;
    if (type == "gemma3") {
        const auto textConfig = whole.find("text_config");
        if (textConfig == whole.end() || !textConfig->is_object())
            throw InputError(name + ": text_config", textConfig == whole.end() ? "missing (a gemma3 config.json's language model)"
                                                                               : "expected an object, got " + describeJson(*textConfig));
        fields = &*textConfig;
        at = name + ": text_config";
    }
    const json& j = *fields;
    const bool gemma3 = type != "gemma2";
    const Defaults& defaults = gemma3 ? kGemma3 : kGemma2;
    const std::string who = "a " + type + " config.json";

    decoder::Config c;
    c.family = type;
    c.norm = decoder::Norm::RmsNorm;
    c.gatedMlp = true;
    c.rotary = true;
    c.nLayer = sizeField(j, "num_hidden_layers", kMaxLayers, at, who, false, 26);
    c.nHead = sizeField(j, "num_attention_heads", kMaxHeads, at, who, false, 8);
    c.nKvHead = sizeField(j, "num_key_value_heads", kMaxHeads, at, who, false, 4);
    c.nEmbd = sizeField(j, "hidden_size", kMaxWidth, at, who, false, 2304);
    c.nInner = sizeField(j, "intermediate_size", kMaxInner, at, who, false, 9216);
    c.vocabSize = sizeField(j, "vocab_size", kMaxVocab, at, who, false, defaults.vocab);
    c.nPositions = sizeField(j, "max_position_embeddings", kMaxPositions, at, who, false, defaults.positions);
    c.headDim = sizeField(j, "head_dim", kMaxWidth, at, who, false, 256);
    if (c.nHead % c.nKvHead != 0)
        throw InputError(at + ": num_key_value_heads",
                         std::to_string(c.nKvHead) + " does not divide num_attention_heads " + std::to_string(c.nHead));
    if (c.headDim % 2 != 0)
        throw InputError(at + ": head_dim", std::to_string(c.headDim) + " is odd: rotary positions turn pairs of dimensions");
    c.normEpsilon = static_cast<float>(numberField(j, "rms_norm_eps", 1e-6, 0, 1, at));
    // Gemma's field is hidden_activation (older configs: hidden_act)
    c.activation = decoder::activationField(j, j.contains("hidden_activation") ? "hidden_activation" : "hidden_act",
                                            decoder::Activation::GeluTanh, at);
    c.scoreDim = sizeField(j, "query_pre_attn_scalar", kMaxWidth, at, who, false, 256);
    c.embedScale = static_cast<float>(std::sqrt(static_cast<double>(c.nEmbd)));
    // Gemma 3's attention passes no cap to its softmax, whatever attn_logit_softcapping says.
    c.attnSoftcap = gemma3 ? 0.0f : capField(j, "attn_logit_softcapping", defaults.attnCap, at);
    c.logitSoftcap = capField(j, "final_logit_softcapping", defaults.finalCap, at);
    c.qkNorm = gemma3;
    // EmbeddingGemma's encoder reads every key: not the causal model read here.
    if (gemma3 && flagField(j, "use_bidirectional_attention", false, at))
        throw InputError(at + ": use_bidirectional_attention", "true is not read (attnviz reads Gemma 3 as the causal model)");
    c.tieWordEmbeddings = flagField(j, "tie_word_embeddings", true, at);
    const bool biased = flagField(j, "attention_bias", false, at);
    c.qkvBias = c.outBias = biased;
    c.mlpBias = false;
    // Sliding and global layers, each kind with its rotary settings.
    const int window = sizeField(j, "sliding_window", kMaxPositions, at, who, false, 4096);
    const std::vector<bool> sliding = slidingLayers(j, gemma3, c.nLayer, at);
    const auto [global, local] = readRopes(j, defaults, gemma3, c, at);
    c.rope = global;
    for (int l = 0; l < c.nLayer; ++l) {
        const bool slides = sliding[static_cast<std::size_t>(l)];
        c.windows.push_back(slides ? window : 0);
        c.layerRopes.push_back(slides ? local : global);
    }
    return c;
}

}  // namespace attnviz::core::gemma
