// Opening a GPT-2 folder: the config, the tokenizer, and every tensor checked against the
// config's shapes, mapped (F32) or widened once (F16, BF16), and packed for the kernels.
#include "core/base/error.hpp"
#include "core/base/files.hpp"
#include "core/models/decoder/decoder_files.hpp"
#include "core/models/gpt2/gpt2.hpp"

#include <charconv>
#include <string>
#include <system_error>

namespace attnviz::core::gpt2 {

namespace {

using decoder::Tensors;
using decoder::Weight;
using Use = Tensors::Use;

// "h.12.attn.c_attn.weight" → 12 and "attn.c_attn.weight"; false for other names.
bool splitLayer(std::string_view name, int& layer, std::string_view& rest) {
    if (name.substr(0, 2) != "h.") return false;
    name.remove_prefix(2);
    const auto dot = name.find('.');
    if (dot == std::string_view::npos || dot == 0 || dot > 9) return false;
    const auto [end, ec] = std::from_chars(name.data(), name.data() + dot, layer);
    if (ec != std::errc() || end != name.data() + dot) return false;
    rest = name.substr(dot + 1);
    return true;
}

// One tensor, `name` with or without the "transformer." prefix.
Weight take(const Tensors& tensors, const decoder::Config& cfg, const std::string& name, const std::vector<std::int64_t>& shape, Use use) {
    Tensors::Found found = tensors.find("transformer." + name);
    if (!found) found = tensors.find(name);
    if (!found)
        return tensors.take(
            name, shape, use,
            "a GPT-2 checkpoint of " + std::to_string(cfg.nLayer) + " layers holds it, with or without the \"transformer.\" prefix");
    return tensors.take(found, shape, use);
}

// A tensor of a layer beyond n_layer means the config and the weights disagree.
void checkLayers(const Tensors& tensors, const decoder::Config& cfg) {
    for (const auto& [full, found] : tensors.all()) {
        std::string_view name = full, rest;
        if (name.substr(0, 12) == "transformer.") name.remove_prefix(12);
        int layer = 0;
        if (splitLayer(name, layer, rest) && (layer < 0 || layer >= cfg.nLayer))
            throw InputError(found.file->path() + ": " + full,
                             "layer " + std::to_string(layer) + " is beyond config.json's n_layer " + std::to_string(cfg.nLayer));
    }
}

void load(decoder::Checkpoint::Parts& c, const Tensors& tensors) {
    const decoder::Config& cfg = c.config;
    const std::int64_t d = cfg.nEmbd, inner = cfg.nInner;
    checkLayers(tensors, cfg);
    c.embed = take(tensors, cfg, "wte.weight", {cfg.vocabSize, d}, Use::Rows);
    c.positions = take(tensors, cfg, "wpe.weight", {cfg.nPositions, d}, Use::Rows);
    c.layers.resize(static_cast<std::size_t>(cfg.nLayer));
    for (int l = 0; l < cfg.nLayer; ++l) {
        const std::string p = "h." + std::to_string(l) + ".";
        decoder::Layer& b = c.layers[static_cast<std::size_t>(l)];
        b.norm1Gain = take(tensors, cfg, p + "ln_1.weight", {d}, Use::Vector);
        b.norm1Bias = take(tensors, cfg, p + "ln_1.bias", {d}, Use::Vector);
        b.qkv.push_back(take(tensors, cfg, p + "attn.c_attn.weight", {d, 3 * d}, Use::Product));
        b.qkvBias.push_back(take(tensors, cfg, p + "attn.c_attn.bias", {3 * d}, Use::Vector));
        b.outW = take(tensors, cfg, p + "attn.c_proj.weight", {d, d}, Use::Product);
        b.outBias = take(tensors, cfg, p + "attn.c_proj.bias", {d}, Use::Vector);
        b.norm2Gain = take(tensors, cfg, p + "ln_2.weight", {d}, Use::Vector);
        b.norm2Bias = take(tensors, cfg, p + "ln_2.bias", {d}, Use::Vector);
        b.upW = take(tensors, cfg, p + "mlp.c_fc.weight", {d, inner}, Use::Product);
        b.upBias = take(tensors, cfg, p + "mlp.c_fc.bias", {inner}, Use::Vector);
        b.downW = take(tensors, cfg, p + "mlp.c_proj.weight", {inner, d}, Use::Product);
        b.downBias = take(tensors, cfg, p + "mlp.c_proj.bias", {d}, Use::Vector);
    }
    c.finalGain = take(tensors, cfg, "ln_f.weight", {d}, Use::Vector);
    c.finalBias = take(tensors, cfg, "ln_f.bias", {d}, Use::Vector);
    // lm_head.weight is read by name only: "transformer.lm_head.weight" is not Hugging Face's name.
    decoder::takeLmHead(c, tensors);
}

}  // namespace

std::shared_ptr<const decoder::Checkpoint> open(const std::string& folderText, Progress* progress) {
    const decoder::ModelFiles files = decoder::locateFiles(folderText, "a Hugging Face GPT-2 folder");
    decoder::Checkpoint::Parts c;
    decoder::nameFolder(c, files);
    c.config = parseConfig(decoder::readConfigText(files.config), files.config);
    // GPT-2's own two files when the folder has them, else tokenizer.json.
    if (files.vocab.empty() && files.tokenizerJson.empty())
        throw InputError(c.folder, "no tokenizer: a GPT-2 folder holds vocab.json and merges.txt, or tokenizer.json");
    c.tokenizer = std::make_unique<ModelTokenizer>(files.vocab.empty() ? ByteBpe::fromTokenizerJson(files.tokenizerJson)
                                                                       : ByteBpe::fromFiles(files.vocab, files.merges));
    const Tensors tensors(files, c, progress);
    load(c, tensors);
    complete(progress);  // the tensors not taken (buffers such as attn.bias) count as read
    return std::make_shared<const decoder::Checkpoint>(std::move(c));
}

}  // namespace attnviz::core::gpt2
