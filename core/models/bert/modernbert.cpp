// ModernBERT (Warner et al. 2024) as an encoder: pre-LayerNorm blocks (the first without its
// attention norm), rotary positions with a base of its own for the global and the local layers,
// every global_attn_every_n_layers-th layer global and the others within local_attention / 2
// keys either side, a fused Wqkv, GeGLU (Wi's first half through the activation times its
// second), a final norm, and the masked-LM head head.dense → act → head.norm → decoder.
#include "core/models/bert/encoders.hpp"

#include "core/base/error.hpp"
#include "core/base/json_text.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace attnviz::core::bert {

namespace {

using decoder::flagField;
using decoder::numberField;
using decoder::sizeField;
using decoder::Tensors;
using decoder::Weight;
using Use = Tensors::Use;
using nlohmann::json;

using decoder::kMaxHeads;
using decoder::kMaxInner;
using decoder::kMaxLayers;
using decoder::kMaxPositions;
using decoder::kMaxVocab;
using decoder::kMaxWidth;
constexpr const char* kWho = "a ModernBERT config.json";

}  // namespace

decoder::Config modernBertConfig(const json& j, const std::string& name) {
    decoder::Config c;
    c.family = "modernbert";
    c.nLayer = sizeField(j, "num_hidden_layers", kMaxLayers, name, kWho);
    c.nHead = sizeField(j, "num_attention_heads", kMaxHeads, name, kWho);
    c.nEmbd = sizeField(j, "hidden_size", kMaxWidth, name, kWho);
    c.nInner = sizeField(j, "intermediate_size", kMaxInner, name, kWho);
    c.vocabSize = sizeField(j, "vocab_size", kMaxVocab, name, kWho);
    c.nPositions = sizeField(j, "max_position_embeddings", kMaxPositions, name, kWho, false, 8192);
    checkHeads(c, "num_attention_heads", "hidden_size", name);
    c.headDim = c.nEmbd / c.nHead;
    if (c.headDim % 2 != 0)
        throw InputError(name + ": num_attention_heads",
                         "a head width of " + std::to_string(c.headDim) + " is odd: rotary positions turn pairs of dimensions");
    c.normEpsilon = static_cast<float>(numberField(j, "norm_eps", 1e-5, 0, 1, name));
    c.activation = activationField(j, "hidden_activation", decoder::Activation::GeluErf, name);
    c.headActivation = activationField(j, "classifier_activation", decoder::Activation::GeluErf, name);
    c.gatedMlp = true;
    c.rotary = true;
    c.qkvBias = c.outBias = flagField(j, "attention_bias", false, name);
    c.mlpBias = flagField(j, "mlp_bias", false, name);
    double global = numberField(j, "global_rope_theta", 160000, 0, 1e12, name);
    double local = numberField(j, "local_rope_theta", global, 0, 1e12, name);  // transformers 4: none is the global one
    // transformers 5: {"full_attention": {"rope_theta": …}, "sliding_attention": {…}}
    if (const auto p = j.find("rope_parameters"); p != j.end() && !p->is_null()) {
        if (!p->is_object()) throw InputError(name + ": rope_parameters", "expected an object, got " + describeJson(*p));
        const auto thetaOf = [&](const char* kind, double fallback) {
            const auto k = p->find(kind);
            if (k == p->end() || k->is_null()) return fallback;
            if (!k->is_object()) throw InputError(name + ": rope_parameters: " + kind, "expected an object, got " + describeJson(*k));
            if (const auto type = k->find("rope_type"); type != k->end() && *type != "default")
                throw InputError(name + ": rope_parameters: " + kind + ": rope_type",
                                 describeJson(*type) + " is not read (only \"default\" is)");
            return numberField(*k, "rope_theta", fallback, 0, 1e12, name + ": rope_parameters: " + kind);
        };
        global = thetaOf("full_attention", global);
        local = thetaOf("sliding_attention", local);
    }
    c.rope.theta = global;
    const int every = sizeField(j, "global_attn_every_n_layers", kMaxLayers, name, kWho, false, 3);
    const int window = sizeField(j, "local_attention", kMaxPositions, name, kWho, false, 128);
    // Which layers are global: transformers 5's layer_types, else every `every`-th from the first.
    std::vector<bool> globalLayers;
    if (const auto types = j.find("layer_types"); types != j.end() && !types->is_null()) {
        if (!types->is_array() || types->size() != static_cast<std::size_t>(c.nLayer))
            throw InputError(name + ": layer_types", "expected a list of " + std::to_string(c.nLayer) +
                                                         " layer types (num_hidden_layers), got " + describeJson(*types));
        for (const json& t : *types) {
            if (t != "full_attention" && t != "sliding_attention")
                throw InputError(name + ": layer_types",
                                 describeJson(t) + " is not read (\"full_attention\" and \"sliding_attention\" are)");
            globalLayers.push_back(t == "full_attention");
        }
    }
    for (int l = 0; l < c.nLayer; ++l) {
        const bool isGlobal = globalLayers.empty() ? l % every == 0 : static_cast<bool>(globalLayers[static_cast<std::size_t>(l)]);
        decoder::Rope rope;
        rope.theta = isGlobal ? global : local;
        c.layerRopes.push_back(rope);
        // a key j is read when |i − j| ≤ local_attention / 2: a window of that many and one
        c.windows.push_back(isGlobal ? 0 : window / 2 + 1);
    }
    return c;
}

ModernBertBiases modernBertBiases(const json& j, const std::string& name) {
    return {.norm = flagField(j, "norm_bias", false, name),
            .decoder = flagField(j, "decoder_bias", true, name),
            .classifier = flagField(j, "classifier_bias", false, name)};
}

void loadModernBert(decoder::Checkpoint::Parts& c, const Tensors& tensors, const ModernBertBiases& biases) {
    const decoder::Config& cfg = c.config;
    const std::int64_t d = cfg.nEmbd, inner = cfg.nInner;
    const std::string why = "a modernbert checkpoint of " + std::to_string(cfg.nLayer) + " layers holds it";
    const auto take = [&](const std::string& name, const std::vector<std::int64_t>& shape, Use use) {
        return tensors.take(name, shape, use, why);
    };
    // ModernBertForMaskedLM names the encoder "model.…", ModernBertModel names it alone.
    const std::string prefix = tensors.find("model.embeddings.tok_embeddings.weight") ? "model." : "";
    const auto norm = [&](const std::string& base, Weight& gain, Weight& bias) {
        gain = take(base + ".weight", {d}, Use::Vector);
        if (biases.norm) bias = take(base + ".bias", {d}, Use::Vector);
    };
    const std::string layers = prefix + "layers.";
    decoder::refuseLayersBeyond(tensors, layers, cfg.nLayer, "num_hidden_layers");
    c.embed = take(prefix + "embeddings.tok_embeddings.weight", {cfg.vocabSize, d}, Use::Rows);
    norm(prefix + "embeddings.norm", c.embedNormGain, c.embedNormBias);
    c.layers.resize(static_cast<std::size_t>(cfg.nLayer));
    for (int l = 0; l < cfg.nLayer; ++l) {
        const std::string p = layers + std::to_string(l) + ".";
        decoder::Layer& b = c.layers[static_cast<std::size_t>(l)];
        if (l > 0) norm(p + "attn_norm", b.norm1Gain, b.norm1Bias);  // layer 0's is an identity: the embeddings are normed
        b.qkv.push_back(take(p + "attn.Wqkv.weight", {3 * d, d}, Use::ProductTransposed));
        b.qkvBias.push_back(cfg.qkvBias ? take(p + "attn.Wqkv.bias", {3 * d}, Use::Vector) : Weight{});
        b.outW = take(p + "attn.Wo.weight", {d, d}, Use::ProductTransposed);
        if (cfg.outBias) b.outBias = take(p + "attn.Wo.bias", {d}, Use::Vector);
        norm(p + "mlp_norm", b.norm2Gain, b.norm2Bias);
        // Wi [2·inner, d]: its first half goes through the activation (the decoder's gate), its second is the up projection.
        const Tensors::Found wi = tensors.find(p + "mlp.Wi.weight");
        if (!wi) take(p + "mlp.Wi.weight", {2 * inner, d}, Use::ProductTransposed);  // names it missing
        b.gateW = tensors.takeRows(wi, {2 * inner, d}, 0, inner, Use::ProductTransposed);
        b.upW = tensors.takeRows(wi, {2 * inner, d}, inner, inner, Use::ProductTransposed);
        if (cfg.mlpBias) {
            const Tensors::Found bias = tensors.find(p + "mlp.Wi.bias");
            if (!bias) take(p + "mlp.Wi.bias", {2 * inner}, Use::Vector);
            b.gateBias = tensors.takeRows(bias, {2 * inner}, 0, inner, Use::Vector);
            b.upBias = tensors.takeRows(bias, {2 * inner}, inner, inner, Use::Vector);
        }
        b.downW = take(p + "mlp.Wo.weight", {d, inner}, Use::ProductTransposed);
        if (cfg.mlpBias) b.downBias = take(p + "mlp.Wo.bias", {d}, Use::Vector);
    }
    norm(prefix + "final_norm", c.finalGain, c.finalBias);
    // The masked-LM head, when the checkpoint has one.
    if (!tensors.find("head.dense.weight")) return;
    c.headDense = take("head.dense.weight", {d, d}, Use::ProductTransposed);
    if (biases.classifier) c.headDenseBias = take("head.dense.bias", {d}, Use::Vector);
    norm("head.norm", c.headNormGain, c.headNormBias);
    if (biases.decoder) c.lmBias = take("decoder.bias", {cfg.vocabSize}, Use::Vector);
    if (!cfg.tieWordEmbeddings) {
        if (!tensors.find("decoder.weight"))
            throw InputError(c.files.front()->path() + ": decoder.weight", "missing, and config.json says tie_word_embeddings is false");
        c.lmHead = take("decoder.weight", {cfg.vocabSize, d}, Use::Rows);
    }
}

}  // namespace attnviz::core::bert
