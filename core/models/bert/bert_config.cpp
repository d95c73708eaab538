// config.json of a Hugging Face BERT, RoBERTa or DistilBERT folder (BertConfig's, RobertaConfig's
// and DistilBertConfig's keys), and tokenizer_config.json's WordPiece switches.
#include "core/base/error.hpp"
#include "core/base/json_text.hpp"
#include "core/models/bert/bert.hpp"
#include "core/models/bert/encoders.hpp"
#include "core/models/decoder/decoder_files.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace attnviz::core::bert {

namespace {

using decoder::Activation;
using decoder::flagField;
using decoder::numberField;
using decoder::sizeField;
using nlohmann::json;

// Sizes a real encoder stays far below (bert-large: 24 layers, 16 heads, 1024 wide, 512
// positions, 30,522 tokens); they bound what a hostile config can make us allocate.
constexpr long long kMaxLayers = 1024, kMaxHeads = 1024, kMaxWidth = 65536, kMaxInner = 1 << 20, kMaxPositions = 1 << 20,
                    kMaxVocab = 1 << 22, kMaxTypes = 1024;

json objectOf(std::string_view text, const std::string& name) {
    json j = parseJson(text, name, false);
    if (j.is_discarded()) throw InputError(name, "not valid JSON");
    if (!j.is_object()) throw InputError(name, "expected a JSON object, got " + describeJson(j));
    return j;
}

// BertConfig's keys, which RobertaConfig shares.
decoder::Config bertLike(const json& j, const std::string& family, const std::string& name) {
    const std::string who = family == "roberta" ? "a RoBERTa config.json" : "a BERT config.json";
    decoder::Config c;
    c.family = family;
    c.nLayer = sizeField(j, "num_hidden_layers", kMaxLayers, name, who);
    c.nHead = sizeField(j, "num_attention_heads", kMaxHeads, name, who);
    c.nEmbd = sizeField(j, "hidden_size", kMaxWidth, name, who);
    c.nInner = sizeField(j, "intermediate_size", kMaxInner, name, who);
    c.vocabSize = sizeField(j, "vocab_size", kMaxVocab, name, who);
    c.nPositions = sizeField(j, "max_position_embeddings", kMaxPositions, name, who, false, family == "roberta" ? 514 : 512);
    c.typeVocab = sizeField(j, "type_vocab_size", kMaxTypes, name, who, false, family == "roberta" ? 1 : 2);
    checkHeads(c, "num_attention_heads", "hidden_size", name);
    c.normEpsilon = static_cast<float>(numberField(j, "layer_norm_eps", 1e-12, 0, 1, name));
    c.activation = activationField(j, "hidden_act", Activation::GeluErf, name);
    // BERT's head transforms with hidden_act; RoBERTa's LM head with GELU (erf) whatever it says.
    c.headActivation = family == "roberta" ? Activation::GeluErf : c.activation;
    if (const auto positions = j.find("position_embedding_type"); positions != j.end() && !positions->is_null()) {
        if (!positions->is_string() || positions->get<std::string>() != "absolute")
            throw InputError(name + ": position_embedding_type",
                             (positions->is_string() ? quoteValue(positions->get<std::string>()) : describeJson(*positions)) +
                                 " is not read (attnviz reads learned \"absolute\" positions)");
    }
    if (flagField(j, "is_decoder", false, name))
        throw InputError(name + ": is_decoder", "true is not read (attnviz reads " + family + " as the encoder it was trained as)");
    if (flagField(j, "add_cross_attention", false, name))
        throw InputError(name + ": add_cross_attention",
                         "true is not read (an encoder with cross-attention is half of an encoder-decoder)");
    if (family == "roberta") {
        // RoBERTa numbers positions from padding_idx + 1: position i reads row pad_token_id + 1 + i.
        int pad = 1;
        if (const auto p = j.find("pad_token_id"); p != j.end() && !p->is_null()) {
            if (!p->is_number_integer() || p->get<long long>() < 0 || p->get<long long>() >= kMaxVocab)
                throw InputError(name + ": pad_token_id", "expected a token id, got " + describeJson(*p));
            pad = p->get<int>();
        }
        c.positionOffset = pad + 1;
        if (c.positionOffset >= c.nPositions)
            throw InputError(name + ": pad_token_id", std::to_string(pad) + " leaves no position of max_position_embeddings " +
                                                          std::to_string(c.nPositions) + " (positions start at pad_token_id + 1)");
    }
    return c;
}

// DistilBertConfig's keys: dim, n_layers, n_heads, hidden_dim, activation; no token types, and
// every LayerNorm's ε is 1e-12.
decoder::Config distilBert(const json& j, const std::string& name) {
    constexpr const char* kWho = "a DistilBERT config.json";
    decoder::Config c;
    c.family = "distilbert";
    c.nLayer = sizeField(j, "n_layers", kMaxLayers, name, kWho);
    c.nHead = sizeField(j, "n_heads", kMaxHeads, name, kWho);
    c.nEmbd = sizeField(j, "dim", kMaxWidth, name, kWho);
    c.nInner = sizeField(j, "hidden_dim", kMaxInner, name, kWho);
    c.vocabSize = sizeField(j, "vocab_size", kMaxVocab, name, kWho);
    c.nPositions = sizeField(j, "max_position_embeddings", kMaxPositions, name, kWho, false, 512);
    checkHeads(c, "n_heads", "dim", name);
    c.normEpsilon = 1e-12f;
    c.activation = activationField(j, "activation", Activation::GeluErf, name);
    c.headActivation = c.activation;  // DistilBertForMaskedLM's head uses the config's activation
    return c;
}

}  // namespace

void checkHeads(const decoder::Config& c, const char* heads, const char* width, const std::string& name) {
    if (c.nEmbd % c.nHead != 0)
        throw InputError(name + ": " + heads, std::to_string(c.nHead) + " does not divide " + width + " " + std::to_string(c.nEmbd));
}

bool readsModelType(std::string_view modelType) {
    return modelType == "bert" || modelType == "roberta" || modelType == "distilbert" || modelType == "modernbert";
}

decoder::Config parseConfig(std::string_view text, const std::string& name) {
    const json j = objectOf(text, name);
    const auto type = j.find("model_type");
    if (type == j.end()) throw InputError(name, "model_type: missing (expected \"bert\", \"roberta\", \"distilbert\" or \"modernbert\")");
    const std::string family = type->is_string() ? type->get<std::string>() : std::string();
    if (!readsModelType(family))
        throw InputError(name + ": model_type", (type->is_string() ? quoteValue(family) : describeJson(*type)) +
                                                    " is not an encoder this reader knows (bert, roberta, distilbert, modernbert)");
    decoder::Config c = family == "distilbert"   ? distilBert(j, name)
                        : family == "modernbert" ? modernBertConfig(j, name)
                                                 : bertLike(j, family, name);
    c.nKvHead = c.nHead;
    c.headDim = c.nEmbd / c.nHead;
    c.norm = decoder::Norm::LayerNorm;
    c.causal = false;
    c.postNorm = family != "modernbert";  // ModernBERT's blocks are pre-norm
    c.tieWordEmbeddings = flagField(j, "tie_word_embeddings", true, name);
    return c;
}

WordPieceOptions parseTokenizerConfig(std::string_view text, const std::string& name) {
    const json j = objectOf(text, name);
    WordPieceOptions o;
    o.lowercase = flagField(j, "do_lower_case", true, name);
    o.chineseChars = flagField(j, "tokenize_chinese_chars", true, name);
    if (const auto strip = j.find("strip_accents"); strip != j.end() && !strip->is_null())
        o.stripAccents = flagField(j, "strip_accents", false, name);
    return o;
}

}  // namespace attnviz::core::bert
