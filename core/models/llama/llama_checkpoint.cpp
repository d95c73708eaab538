// Opening a Llama, Mistral, Qwen2 or Qwen3 folder: the config, tokenizer.json, and every tensor
// checked against the config's shapes (llama.hpp lists them).
#include "core/base/error.hpp"
#include "core/base/files.hpp"
#include "core/models/decoder/decoder_files.hpp"
#include "core/models/llama/llama.hpp"

#include <string>

namespace attnviz::core::llama {

namespace {

using decoder::Tensors;
using decoder::Weight;
using Use = Tensors::Use;

void load(decoder::Checkpoint::Parts& c, const Tensors& tensors) {
    const decoder::Config& cfg = c.config;
    const std::int64_t d = cfg.nEmbd, inner = cfg.nInner, qw = cfg.qWidth(), kvw = cfg.kvWidth(), dh = cfg.headDim;
    const std::string why = "a " + cfg.family + " checkpoint of " + std::to_string(cfg.nLayer) + " layers holds it";
    const auto take = [&](const std::string& name, const std::vector<std::int64_t>& shape, Use use) {
        return tensors.take(name, shape, use, why);
    };
    decoder::refuseLayersBeyond(tensors, "model.layers.", cfg.nLayer, "num_hidden_layers");
    c.embed = take("model.embed_tokens.weight", {cfg.vocabSize, d}, Use::Rows);
    c.layers.resize(static_cast<std::size_t>(cfg.nLayer));
    for (int l = 0; l < cfg.nLayer; ++l) {
        const std::string p = "model.layers." + std::to_string(l) + ".";
        decoder::Layer& b = c.layers[static_cast<std::size_t>(l)];
        b.norm1Gain = take(p + "input_layernorm.weight", {d}, Use::Vector);
        const bool phi3 = cfg.family == "phi3";
        if (phi3) {  // q | k | v in one product, as qkv's columns lie
            b.qkv.push_back(take(p + "self_attn.qkv_proj.weight", {qw + 2 * kvw, d}, Use::ProductTransposed));
            b.qkvBias.emplace_back();
        }
        const std::array<std::pair<const char*, std::int64_t>, 3> parts = {{{"q_proj", qw}, {"k_proj", kvw}, {"v_proj", kvw}}};
        for (const auto& [part, width] : parts) {
            if (phi3) break;
            b.qkv.push_back(take(p + "self_attn." + part + ".weight", {width, d}, Use::ProductTransposed));
            b.qkvBias.push_back(cfg.qkvBias ? take(p + "self_attn." + part + ".bias", {width}, Use::Vector) : Weight{});
        }
        if (cfg.qkNorm) {
            b.qNorm = take(p + "self_attn.q_norm.weight", {dh}, Use::Vector);
            b.kNorm = take(p + "self_attn.k_norm.weight", {dh}, Use::Vector);
        }
        b.outW = take(p + "self_attn.o_proj.weight", {d, qw}, Use::ProductTransposed);
        if (cfg.outBias) b.outBias = take(p + "self_attn.o_proj.bias", {d}, Use::Vector);
        b.norm2Gain = take(p + "post_attention_layernorm.weight", {d}, Use::Vector);
        if (phi3) {  // gate_up_proj: the gate's rows, then up's
            const std::string name = p + "mlp.gate_up_proj.weight";
            const Tensors::Found both = tensors.find(name);
            if (!both) take(name, {2 * inner, d}, Use::ProductTransposed);  // missing: refused, naming it
            b.gateW = tensors.takeRows(both, {2 * inner, d}, 0, inner, Use::ProductTransposed);
            b.upW = tensors.takeRows(both, {2 * inner, d}, inner, inner, Use::ProductTransposed);
        } else {
            b.gateW = take(p + "mlp.gate_proj.weight", {inner, d}, Use::ProductTransposed);
            b.upW = take(p + "mlp.up_proj.weight", {inner, d}, Use::ProductTransposed);
        }
        b.downW = take(p + "mlp.down_proj.weight", {d, inner}, Use::ProductTransposed);
        if (cfg.mlpBias) {
            b.gateBias = take(p + "mlp.gate_proj.bias", {inner}, Use::Vector);
            b.upBias = take(p + "mlp.up_proj.bias", {inner}, Use::Vector);
            b.downBias = take(p + "mlp.down_proj.bias", {d}, Use::Vector);
        }
    }
    c.finalGain = take("model.norm.weight", {d}, Use::Vector);
    decoder::takeLmHead(c, tensors);
}

}  // namespace

std::shared_ptr<const decoder::Checkpoint> open(const std::string& folder, Progress* progress) {
    return decoder::openTokenizerJsonFolder(folder, "a Hugging Face Llama, Mistral, Qwen or Phi-3 folder", parseConfig, load, progress);
}

}  // namespace attnviz::core::llama
