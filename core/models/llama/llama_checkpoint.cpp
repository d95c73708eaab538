// Opening a Llama, Mistral, Qwen2 or Qwen3 folder: the config, tokenizer.json, and every tensor
// checked against the config's shapes (llama.hpp lists them).
#include "core/base/error.hpp"
#include "core/base/files.hpp"
#include "core/models/decoder/decoder_files.hpp"
#include "core/models/llama/llama.hpp"

#include <charconv>
#include <filesystem>
#include <string>
#include <system_error>

namespace attnviz::core::llama {

namespace {

namespace fs = std::filesystem;
using decoder::Tensors;
using decoder::Weight;
using Use = Tensors::Use;

// "model.layers.12.mlp.up_proj.weight" → 12; -1 for names outside the layers.
int layerOf(std::string_view name) {
    constexpr std::string_view kPrefix = "model.layers.";
    if (name.substr(0, kPrefix.size()) != kPrefix) return -1;
    name.remove_prefix(kPrefix.size());
    const auto dot = name.find('.');
    if (dot == std::string_view::npos || dot == 0 || dot > 9) return -1;
    int layer = -1;
    const auto [end, ec] = std::from_chars(name.data(), name.data() + dot, layer);
    return ec == std::errc() && end == name.data() + dot ? layer : -1;
}

void load(decoder::Checkpoint::Parts& c, const Tensors& tensors) {
    const decoder::Config& cfg = c.config;
    const std::int64_t d = cfg.nEmbd, inner = cfg.nInner, qw = cfg.qWidth(), kvw = cfg.kvWidth(), dh = cfg.headDim;
    const std::string why = "a " + cfg.family + " checkpoint of " + std::to_string(cfg.nLayer) + " layers holds it";
    const auto take = [&](const std::string& name, const std::vector<std::int64_t>& shape, Use use) {
        return tensors.take(name, shape, use, why);
    };
    // A tensor of a layer beyond num_hidden_layers means the config and the weights disagree.
    for (const auto& [name, found] : tensors.all())
        if (const int layer = layerOf(name); layer >= cfg.nLayer)
            throw InputError(found.file->path() + ": " + name,
                             "layer " + std::to_string(layer) + " is beyond config.json's num_hidden_layers " + std::to_string(cfg.nLayer));
    c.embed = take("model.embed_tokens.weight", {cfg.vocabSize, d}, Use::Rows);
    c.layers.resize(static_cast<std::size_t>(cfg.nLayer));
    for (int l = 0; l < cfg.nLayer; ++l) {
        const std::string p = "model.layers." + std::to_string(l) + ".";
        decoder::Layer& b = c.layers[static_cast<std::size_t>(l)];
        b.norm1Gain = take(p + "input_layernorm.weight", {d}, Use::Vector);
        const std::array<std::pair<const char*, std::int64_t>, 3> parts = {{{"q_proj", qw}, {"k_proj", kvw}, {"v_proj", kvw}}};
        for (const auto& [part, width] : parts) {
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
        b.gateW = take(p + "mlp.gate_proj.weight", {inner, d}, Use::ProductTransposed);
        b.upW = take(p + "mlp.up_proj.weight", {inner, d}, Use::ProductTransposed);
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

std::shared_ptr<const decoder::Checkpoint> open(const std::string& folderText, Progress* progress) {
    const decoder::ModelFiles files = decoder::locateFiles(folderText, "a Hugging Face Llama, Mistral or Qwen folder");
    decoder::Checkpoint::Parts c;
    decoder::nameFolder(c, files);
    c.config = parseConfig(decoder::readConfigText(files.config), files.config);
    if (files.tokenizerJson.empty())
        throw InputError((fs::path(c.folder) / "tokenizer.json").string(),
                         "missing (a " + c.config.family + " folder's tokenizer is tokenizer.json)");
    c.tokenizer = std::make_unique<ModelTokenizer>(ByteBpe::fromTokenizerJson(files.tokenizerJson));
    const Tensors tensors(files, c, progress);
    load(c, tensors);
    complete(progress);  // tensors not taken (rotary buffers some files keep) count as read
    return std::make_shared<const decoder::Checkpoint>(std::move(c));
}

}  // namespace attnviz::core::llama
