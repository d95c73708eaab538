// Opening a Gemma 2 or Gemma 3 folder: the config, tokenizer.json, and every tensor checked
// against the config's shapes (gemma.hpp lists them).
#include "core/base/error.hpp"
#include "core/models/decoder/decoder_files.hpp"
#include "core/models/gemma/gemma.hpp"

#include <array>
#include <string>

namespace attnviz::core::gemma {

namespace {

using decoder::Tensors;
using decoder::Weight;
using Use = Tensors::Use;

// Where the language model's tensors lie: "model." (Gemma 2, Gemma 3's text model), or under the
// image-text model's language model, as transformers 4.50 and later versions save it.
constexpr std::array<const char*, 3> kPrefixes = {"model.", "language_model.model.", "model.language_model."};

// Gemma's RMSNorm multiplies by (1 + w) (in float, as transformers does): the gain the pass
// reads, added up once. The weight still names the file's tensor.
Weight onePlus(decoder::Checkpoint::Parts& c, Weight w) {
    std::vector<float> gain(w.row().begin(), w.row().end());
    for (float& g : gain) g += 1.0f;
    c.converted.push_back(std::move(gain));
    w.data = c.converted.back().data();
    return w;
}

void load(decoder::Checkpoint::Parts& c, const Tensors& tensors) {
    const decoder::Config& cfg = c.config;
    const std::int64_t d = cfg.nEmbd, inner = cfg.nInner, qw = cfg.qWidth(), kvw = cfg.kvWidth(), dh = cfg.headDim;
    const std::string why = "a " + cfg.family + " checkpoint of " + std::to_string(cfg.nLayer) + " layers holds it";
    std::string prefix = kPrefixes[0];
    for (const char* p : kPrefixes)
        if (tensors.find(std::string(p) + "embed_tokens.weight")) prefix = p;
    const auto take = [&](const std::string& name, const std::vector<std::int64_t>& shape, Use use) {
        return tensors.take(prefix + name, shape, use, why);
    };
    const auto gain = [&](const std::string& name) { return onePlus(c, take(name, {d}, Use::Vector)); };
    decoder::refuseLayersBeyond(tensors, prefix + "layers.", cfg.nLayer, "num_hidden_layers");
    c.embed = take("embed_tokens.weight", {cfg.vocabSize, d}, Use::Rows);
    c.layers.resize(static_cast<std::size_t>(cfg.nLayer));
    for (int l = 0; l < cfg.nLayer; ++l) {
        const std::string p = "layers." + std::to_string(l) + ".";
        decoder::Layer& b = c.layers[static_cast<std::size_t>(l)];
        b.norm1Gain = gain(p + "input_layernorm.weight");
        const std::array<std::pair<const char*, std::int64_t>, 3> parts = {{{"q_proj", qw}, {"k_proj", kvw}, {"v_proj", kvw}}};
        for (const auto& [part, width] : parts) {
            b.qkv.push_back(take(p + "self_attn." + part + ".weight", {width, d}, Use::ProductTransposed));
            b.qkvBias.push_back(cfg.qkvBias ? take(p + "self_attn." + part + ".bias", {width}, Use::Vector) : Weight{});
        }
        if (cfg.qkNorm) {
            b.qNorm = onePlus(c, take(p + "self_attn.q_norm.weight", {dh}, Use::Vector));
            b.kNorm = onePlus(c, take(p + "self_attn.k_norm.weight", {dh}, Use::Vector));
        }
        b.outW = take(p + "self_attn.o_proj.weight", {d, qw}, Use::ProductTransposed);
        if (cfg.outBias) b.outBias = take(p + "self_attn.o_proj.bias", {d}, Use::Vector);
        b.attnOutNormGain = gain(p + "post_attention_layernorm.weight");
        b.norm2Gain = gain(p + "pre_feedforward_layernorm.weight");
        b.gateW = take(p + "mlp.gate_proj.weight", {inner, d}, Use::ProductTransposed);
        b.upW = take(p + "mlp.up_proj.weight", {inner, d}, Use::ProductTransposed);
        b.downW = take(p + "mlp.down_proj.weight", {d, inner}, Use::ProductTransposed);
        b.mlpOutNormGain = gain(p + "post_feedforward_layernorm.weight");
    }
    c.finalGain = gain("norm.weight");
    // transformers 4.50's image-text layout keeps its head beside its language model.
    decoder::takeLmHead(c, tensors, prefix == kPrefixes[1] ? "language_model.lm_head.weight" : "lm_head.weight");
}

}  // namespace

std::shared_ptr<const decoder::Checkpoint> open(const std::string& folder, Progress* progress) {
    return decoder::openTokenizerJsonFolder(folder, "a Hugging Face Gemma folder", parseConfig, load, progress);
}

}  // namespace attnviz::core::gemma
