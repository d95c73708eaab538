// Opening a BERT folder: the config, the tokenizer (tokenizer.json, or vocab.txt with
// tokenizer_config.json), and every tensor checked against the config's shapes (bert.hpp lists
// them), the masked-LM head when the checkpoint has one.
#include "core/base/error.hpp"
#include "core/base/files.hpp"
#include "core/models/bert/bert.hpp"
#include "core/models/decoder/decoder_files.hpp"

#include <charconv>
#include <string>
#include <system_error>

namespace attnviz::core::bert {

namespace {

using decoder::Tensors;
using decoder::Weight;
using Use = Tensors::Use;

// "…encoder.layer.12.output.dense.weight" → 12; -1 for names outside the layers.
int layerOf(std::string_view name, std::string_view prefix) {
    const std::string layers = std::string(prefix) + "encoder.layer.";
    if (name.substr(0, layers.size()) != layers) return -1;
    name.remove_prefix(layers.size());
    const auto dot = name.find('.');
    if (dot == std::string_view::npos || dot == 0 || dot > 9) return -1;
    int layer = -1;
    const auto [end, ec] = std::from_chars(name.data(), name.data() + dot, layer);
    return ec == std::errc() && end == name.data() + dot ? layer : -1;
}

class Loader {
public:
    Loader(decoder::Checkpoint::Parts& parts, const Tensors& tensors) : c(parts), m_tensors(tensors) {
        // BertForMaskedLM and BertForPreTraining name the encoder "bert.…", BertModel names it alone.
        if (tensors.find("bert.embeddings.word_embeddings.weight")) m_prefix = "bert.";
        m_why = "a BERT checkpoint of " + std::to_string(c.config.nLayer) + " layers holds it";
    }

    void load() {
        const decoder::Config& cfg = c.config;
        const std::int64_t d = cfg.nEmbd, inner = cfg.nInner;
        // A tensor of a layer beyond num_hidden_layers means the config and the weights disagree.
        for (const auto& [name, found] : m_tensors.all())
            if (const int layer = layerOf(name, m_prefix); layer >= cfg.nLayer)
                throw InputError(
                    found.file->path() + ": " + name,
                    "layer " + std::to_string(layer) + " is beyond config.json's num_hidden_layers " + std::to_string(cfg.nLayer));
        const std::string e = m_prefix + "embeddings.";
        c.embed = take(e + "word_embeddings.weight", {cfg.vocabSize, d}, Use::Rows);
        c.positions = take(e + "position_embeddings.weight", {cfg.nPositions, d}, Use::Rows);
        c.tokenTypes = take(e + "token_type_embeddings.weight", {cfg.typeVocab, d}, Use::Rows);
        norm(e + "LayerNorm", c.embedNormGain, c.embedNormBias);
        c.layers.resize(static_cast<std::size_t>(cfg.nLayer));
        for (int l = 0; l < cfg.nLayer; ++l) {
            const std::string p = m_prefix + "encoder.layer." + std::to_string(l) + ".";
            decoder::Layer& b = c.layers[static_cast<std::size_t>(l)];
            for (const char* part : {"query", "key", "value"}) {
                b.qkv.push_back(take(p + "attention.self." + part + ".weight", {d, d}, Use::ProductTransposed));
                b.qkvBias.push_back(take(p + "attention.self." + part + ".bias", {d}, Use::Vector));
            }
            b.outW = take(p + "attention.output.dense.weight", {d, d}, Use::ProductTransposed);
            b.outBias = take(p + "attention.output.dense.bias", {d}, Use::Vector);
            norm(p + "attention.output.LayerNorm", b.norm1Gain, b.norm1Bias);
            b.upW = take(p + "intermediate.dense.weight", {inner, d}, Use::ProductTransposed);
            b.upBias = take(p + "intermediate.dense.bias", {inner}, Use::Vector);
            b.downW = take(p + "output.dense.weight", {d, inner}, Use::ProductTransposed);
            b.downBias = take(p + "output.dense.bias", {d}, Use::Vector);
            norm(p + "output.LayerNorm", b.norm2Gain, b.norm2Bias);
        }
        // The masked-LM head, when the checkpoint has one (BertModel has none).
        if (!m_tensors.find("cls.predictions.transform.dense.weight")) return;
        c.headDense = take("cls.predictions.transform.dense.weight", {d, d}, Use::ProductTransposed);
        c.headDenseBias = take("cls.predictions.transform.dense.bias", {d}, Use::Vector);
        norm("cls.predictions.transform.LayerNorm", c.headNormGain, c.headNormBias);
        // One parameter under two names: a file keeps one of them.
        const Tensors::Found bias = m_tensors.find("cls.predictions.bias");
        c.lmBias =
            bias ? m_tensors.take(bias, {cfg.vocabSize}, Use::Vector) : take("cls.predictions.decoder.bias", {cfg.vocabSize}, Use::Vector);
        if (!cfg.tieWordEmbeddings) {
            if (!m_tensors.find("cls.predictions.decoder.weight"))
                throw InputError(c.files.front()->path() + ": cls.predictions.decoder.weight",
                                 "missing, and config.json says tie_word_embeddings is false");
            c.lmHead = take("cls.predictions.decoder.weight", {cfg.vocabSize, d}, Use::Rows);
        }
    }

private:
    Weight take(const std::string& name, const std::vector<std::int64_t>& shape, Use use) const {
        return m_tensors.take(name, shape, use, m_why);
    }

    // A LayerNorm's gain and bias: "<name>.weight" and ".bias", or ".gamma" and ".beta".
    void norm(const std::string& name, Weight& gain, Weight& bias) const {
        const std::int64_t d = c.config.nEmbd;
        const bool old = !m_tensors.find(name + ".weight") && m_tensors.find(name + ".gamma");
        gain = take(name + (old ? ".gamma" : ".weight"), {d}, Use::Vector);
        bias = take(name + (old ? ".beta" : ".bias"), {d}, Use::Vector);
    }

    decoder::Checkpoint::Parts& c;
    const Tensors& m_tensors;
    std::string m_prefix, m_why;
};

// tokenizer.json when the folder has it (what transformers' fast tokenizer reads), else
// vocab.txt with tokenizer_config.json's switches.
std::unique_ptr<ModelTokenizer> tokenizer(const decoder::ModelFiles& files, const std::string& folder) {
    if (!files.tokenizerJson.empty()) return std::make_unique<ModelTokenizer>(WordPiece::fromTokenizerJson(files.tokenizerJson));
    if (files.wordVocab.empty())
        throw InputError(folder, "no tokenizer: a BERT folder holds tokenizer.json, or vocab.txt (with tokenizer_config.json)");
    const WordPieceOptions options = files.tokenizerConfig.empty()
                                         ? WordPieceOptions{}
                                         : parseTokenizerConfig(decoder::readConfigText(files.tokenizerConfig), files.tokenizerConfig);
    return std::make_unique<ModelTokenizer>(WordPiece::fromVocabTxt(files.wordVocab, options));
}

}  // namespace

std::shared_ptr<const decoder::Checkpoint> open(const std::string& folderText, Progress* progress) {
    const decoder::ModelFiles files = decoder::locateFiles(folderText, "a Hugging Face BERT folder");
    decoder::Checkpoint::Parts c;
    decoder::nameFolder(c, files);
    c.config = parseConfig(decoder::readConfigText(files.config), files.config);
    c.tokenizer = tokenizer(files, c.folder);
    if (c.tokenizer->vocabSize() > c.config.vocabSize)
        throw InputError(c.folder, "the tokenizer has " + std::to_string(c.tokenizer->vocabSize()) +
                                       " tokens, more than config.json's vocab_size " + std::to_string(c.config.vocabSize));
    const Tensors tensors(files, c, progress);
    Loader(c, tensors).load();
    complete(progress);  // the tensors not read (the pooler, the next-sentence head, buffers) count as read
    return std::make_shared<const decoder::Checkpoint>(std::move(c));
}

}  // namespace attnviz::core::bert
