// Opening a BERT, RoBERTa or DistilBERT folder: the config, the tokenizer, and every tensor
// checked against the config's shapes (bert.hpp lists them), the masked-LM head when the
// checkpoint has one.
#include "core/base/error.hpp"
#include "core/base/files.hpp"
#include "core/base/json_text.hpp"
#include "core/models/bert/bert.hpp"
#include "core/models/bert/encoders.hpp"
#include "core/models/decoder/decoder_files.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include <string>

namespace attnviz::core::bert {

namespace {

using decoder::Tensors;
using decoder::Weight;
using Use = Tensors::Use;

// Where a family keeps each tensor: BertForMaskedLM's names, RobertaForMaskedLM's (BERT's encoder,
// another head) and DistilBertForMaskedLM's; the encoder's with the prefix or without it (the bare
// models: BertModel, RobertaModel, DistilBertModel).
struct Names {
    std::string prefix;                                             // "bert.", "roberta.", "distilbert."
    const char* types = "embeddings.token_type_embeddings.weight";  // nullptr: none
    const char* layers = "encoder.layer.";
    const char* q = "attention.self.query";
    const char* k = "attention.self.key";
    const char* v = "attention.self.value";
    const char* out = "attention.output.dense";
    const char* norm1 = "attention.output.LayerNorm";
    const char* up = "intermediate.dense";
    const char* down = "output.dense";
    const char* norm2 = "output.LayerNorm";
    const char* headDense = "cls.predictions.transform.dense";
    const char* headNorm = "cls.predictions.transform.LayerNorm";
    std::vector<const char*> headBias = {"cls.predictions.bias", "cls.predictions.decoder.bias"};  // one parameter, either name
    const char* decoder = "cls.predictions.decoder.weight";
};

Names namesOf(const std::string& family) {
    Names n;
    n.prefix = family + ".";
    if (family == "roberta") {
        n.headDense = "lm_head.dense";
        n.headNorm = "lm_head.layer_norm";
        n.headBias = {"lm_head.bias", "lm_head.decoder.bias"};
        n.decoder = "lm_head.decoder.weight";
    } else if (family == "distilbert") {
        n.types = nullptr;
        n.layers = "transformer.layer.";
        n.q = "attention.q_lin";
        n.k = "attention.k_lin";
        n.v = "attention.v_lin";
        n.out = "attention.out_lin";
        n.norm1 = "sa_layer_norm";
        n.up = "ffn.lin1";
        n.down = "ffn.lin2";
        n.norm2 = "output_layer_norm";
        n.headDense = "vocab_transform";
        n.headNorm = "vocab_layer_norm";
        n.headBias = {"vocab_projector.bias"};
        n.decoder = "vocab_projector.weight";
    }
    return n;
}

class Loader {
public:
    Loader(decoder::Checkpoint::Parts& parts, const Tensors& tensors) : c(parts), m_tensors(tensors), n(namesOf(parts.config.family)) {
        // The task models name the encoder "<family>.…", the bare models name it alone.
        if (!tensors.find(n.prefix + "embeddings.word_embeddings.weight")) n.prefix.clear();
        m_why = "a " + c.config.family + " checkpoint of " + std::to_string(c.config.nLayer) + " layers holds it";
    }

    void load() {
        const decoder::Config& cfg = c.config;
        const std::int64_t d = cfg.nEmbd, inner = cfg.nInner;
        // A tensor of a layer beyond the config's layers means the config and the weights disagree.
        const std::string layers = n.prefix + n.layers;
        decoder::refuseLayersBeyond(m_tensors, layers, cfg.nLayer, cfg.family == "distilbert" ? "n_layers" : "num_hidden_layers");
        const std::string e = n.prefix + "embeddings.";
        c.embed = take(e + "word_embeddings.weight", {cfg.vocabSize, d}, Use::Rows);
        c.positions = take(e + "position_embeddings.weight", {cfg.nPositions, d}, Use::Rows);
        if (n.types) c.tokenTypes = take(n.prefix + n.types, {cfg.typeVocab, d}, Use::Rows);
        norm(e + "LayerNorm", c.embedNormGain, c.embedNormBias);
        c.layers.resize(static_cast<std::size_t>(cfg.nLayer));
        for (int l = 0; l < cfg.nLayer; ++l) {
            const std::string p = layers + std::to_string(l) + ".";
            decoder::Layer& b = c.layers[static_cast<std::size_t>(l)];
            for (const char* part : {n.q, n.k, n.v}) {
                b.qkv.push_back(take(p + part + ".weight", {d, d}, Use::ProductTransposed));
                b.qkvBias.push_back(take(p + part + ".bias", {d}, Use::Vector));
            }
            b.outW = take(p + n.out + ".weight", {d, d}, Use::ProductTransposed);
            b.outBias = take(p + n.out + ".bias", {d}, Use::Vector);
            norm(p + n.norm1, b.norm1Gain, b.norm1Bias);
            b.upW = take(p + n.up + ".weight", {inner, d}, Use::ProductTransposed);
            b.upBias = take(p + n.up + ".bias", {inner}, Use::Vector);
            b.downW = take(p + n.down + ".weight", {d, inner}, Use::ProductTransposed);
            b.downBias = take(p + n.down + ".bias", {d}, Use::Vector);
            norm(p + n.norm2, b.norm2Gain, b.norm2Bias);
        }
        // The masked-LM head, when the checkpoint has one (the bare models have none).
        const std::string dense = std::string(n.headDense) + ".weight";
        if (!m_tensors.find(dense)) return;
        c.headDense = take(dense, {d, d}, Use::ProductTransposed);
        c.headDenseBias = take(std::string(n.headDense) + ".bias", {d}, Use::Vector);
        norm(n.headNorm, c.headNormGain, c.headNormBias);
        // One parameter under two names: a file keeps one of them. Where it keeps both (transformers 5
        // saves an untied head's two apart, and its decoder reads the decoder's own), an untied head
        // reads the decoder's.
        std::vector<const char*> biasNames = n.headBias;
        if (!cfg.tieWordEmbeddings) std::reverse(biasNames.begin(), biasNames.end());
        Tensors::Found bias;
        for (const char* name : biasNames)
            if (!bias) bias = m_tensors.find(name);
        c.lmBias = bias ? m_tensors.take(bias, {cfg.vocabSize}, Use::Vector) : take(n.headBias.front(), {cfg.vocabSize}, Use::Vector);
        if (!cfg.tieWordEmbeddings) {
            if (!m_tensors.find(n.decoder))
                throw InputError(c.files.front()->path() + ": " + n.decoder, "missing, and config.json says tie_word_embeddings is false");
            c.lmHead = take(n.decoder, {cfg.vocabSize, d}, Use::Rows);
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
    Names n;
    std::string m_why;
};

// BERT's and DistilBERT's WordPiece: tokenizer.json when the folder has it (what transformers' fast
// tokenizer reads), else vocab.txt with tokenizer_config.json's switches. RoBERTa's byte-level
// BPE: tokenizer.json, else vocab.json and merges.txt.
std::unique_ptr<ModelTokenizer> tokenizer(const decoder::ModelFiles& files, const decoder::Checkpoint::Parts& c) {
    if (c.config.family == "modernbert") {
        if (files.tokenizerJson.empty())
            throw InputError(c.folder + "/tokenizer.json", "missing (a ModernBERT folder's tokenizer is tokenizer.json)");
        auto bpe = std::make_unique<ModelTokenizer>(ByteBpe::fromTokenizerJson(files.tokenizerJson));
        if (!bpe->maskId()) throw InputError(files.tokenizerJson + ": [MASK]", "missing (ModernBERT's masked-LM head fills it in)");
        return bpe;
    }
    if (c.config.family == "roberta") {
        if (!files.tokenizerJson.empty()) return std::make_unique<ModelTokenizer>(ByteBpe::fromTokenizerJson(files.tokenizerJson));
        if (files.vocab.empty())
            throw InputError(c.folder, "no tokenizer: a RoBERTa folder holds tokenizer.json, or vocab.json and merges.txt");
        return std::make_unique<ModelTokenizer>(ByteBpe::fromRobertaFiles(files.vocab, files.merges));
    }
    if (!files.tokenizerJson.empty()) return std::make_unique<ModelTokenizer>(WordPiece::fromTokenizerJson(files.tokenizerJson));
    if (files.wordVocab.empty())
        throw InputError(c.folder,
                         "no tokenizer: a " + c.config.family + " folder holds tokenizer.json, or vocab.txt (with tokenizer_config.json)");
    const WordPieceOptions options = files.tokenizerConfig.empty()
                                         ? WordPieceOptions{}
                                         : parseTokenizerConfig(decoder::readConfigText(files.tokenizerConfig), files.tokenizerConfig);
    return std::make_unique<ModelTokenizer>(WordPiece::fromVocabTxt(files.wordVocab, options));
}

}  // namespace

std::shared_ptr<const decoder::Checkpoint> open(const std::string& folderText, Progress* progress) {
    const decoder::ModelFiles files = decoder::locateFiles(folderText, "a Hugging Face BERT, RoBERTa or DistilBERT folder");
    decoder::Checkpoint::Parts c;
    decoder::nameFolder(c, files);
    c.config = parseConfig(decoder::readConfigText(files.config), files.config);
    c.tokenizer = tokenizer(files, c);
    if (c.tokenizer->vocabSize() > c.config.vocabSize)
        throw InputError(c.folder, "the tokenizer has " + std::to_string(c.tokenizer->vocabSize()) +
                                       " tokens, more than config.json's vocab_size " + std::to_string(c.config.vocabSize));
    const Tensors tensors(files, c, progress);
    if (c.config.family == "modernbert")
        loadModernBert(c, tensors, modernBertBiases(parseJson(decoder::readConfigText(files.config), files.config, false), files.config));
    else Loader(c, tensors).load();
    complete(progress);  // the tensors not read (the pooler, the next-sentence head, buffers) count as read
    return std::make_shared<const decoder::Checkpoint>(std::move(c));
}

}  // namespace attnviz::core::bert
