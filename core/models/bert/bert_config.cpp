// config.json (BertConfig's keys) and tokenizer_config.json of a Hugging Face BERT folder.
#include "core/base/error.hpp"
#include "core/base/json_text.hpp"
#include "core/models/bert/bert.hpp"
#include "core/models/decoder/decoder_files.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace attnviz::core::bert {

namespace {

using decoder::flagField;
using decoder::numberField;
using decoder::sizeField;
using nlohmann::json;

// Sizes a real BERT-family model stays far below (bert-large: 24 layers, 16 heads, 1024 wide,
// 512 positions, 30,522 tokens); they bound what a hostile config can make us allocate.
constexpr long long kMaxLayers = 1024, kMaxHeads = 1024, kMaxWidth = 65536, kMaxInner = 1 << 20, kMaxPositions = 1 << 20,
                    kMaxVocab = 1 << 22, kMaxTypes = 1024;

constexpr const char* kWho = "a BERT config.json";

json objectOf(std::string_view text, const std::string& name) {
    json j = parseJson(text, name, false);
    if (j.is_discarded()) throw InputError(name, "not valid JSON");
    if (!j.is_object()) throw InputError(name, "expected a JSON object, got " + describeJson(j));
    return j;
}

}  // namespace

decoder::Config parseConfig(std::string_view text, const std::string& name) {
    using decoder::Activation;
    const json j = objectOf(text, name);
    const auto type = j.find("model_type");
    if (type == j.end()) throw InputError(name, "model_type: missing (expected \"bert\")");
    if (!type->is_string() || type->get<std::string>() != "bert")
        throw InputError(name + ": model_type", (type->is_string() ? quoteValue(type->get<std::string>()) : describeJson(*type)) +
                                                    " is not a BERT model (attnviz reads \"bert\" folders here)");

    decoder::Config c;
    c.family = "bert";
    c.nLayer = sizeField(j, "num_hidden_layers", kMaxLayers, name, kWho);
    c.nHead = sizeField(j, "num_attention_heads", kMaxHeads, name, kWho);
    c.nEmbd = sizeField(j, "hidden_size", kMaxWidth, name, kWho);
    c.nInner = sizeField(j, "intermediate_size", kMaxInner, name, kWho);
    c.vocabSize = sizeField(j, "vocab_size", kMaxVocab, name, kWho);
    c.nPositions = sizeField(j, "max_position_embeddings", kMaxPositions, name, kWho, false, 512);
    c.typeVocab = sizeField(j, "type_vocab_size", kMaxTypes, name, kWho, false, 2);
    if (c.nEmbd % c.nHead != 0)
        throw InputError(name + ": num_attention_heads",
                         std::to_string(c.nHead) + " does not divide hidden_size " + std::to_string(c.nEmbd));
    c.nKvHead = c.nHead;
    c.headDim = c.nEmbd / c.nHead;
    c.norm = decoder::Norm::LayerNorm;
    c.normEpsilon = static_cast<float>(numberField(j, "layer_norm_eps", 1e-12, 0, 1, name));
    c.causal = false;
    c.postNorm = true;
    c.activation = Activation::GeluErf;
    if (const auto act = j.find("hidden_act"); act != j.end() && !act->is_null()) {
        const std::string value = act->is_string() ? act->get<std::string>() : std::string();
        // gelu_new, gelu_fast and gelu_pytorch_tanh are one formula: 0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³))).
        if (value == "gelu") c.activation = Activation::GeluErf;
        else if (value == "gelu_new" || value == "gelu_fast" || value == "gelu_pytorch_tanh") c.activation = Activation::GeluTanh;
        else if (value == "relu") c.activation = Activation::Relu;
        else if (value == "silu" || value == "swish") c.activation = Activation::Silu;
        else
            throw InputError(name + ": hidden_act", (act->is_string() ? quoteValue(value) : describeJson(*act)) +
                                                        " is not one attnviz computes (gelu, gelu_new, gelu_fast, gelu_pytorch_tanh, "
                                                        "relu, silu)");
    }
    if (const auto positions = j.find("position_embedding_type"); positions != j.end() && !positions->is_null()) {
        if (!positions->is_string() || positions->get<std::string>() != "absolute")
            throw InputError(name + ": position_embedding_type",
                             (positions->is_string() ? quoteValue(positions->get<std::string>()) : describeJson(*positions)) +
                                 " is not read (attnviz reads BERT's learned \"absolute\" positions)");
    }
    if (flagField(j, "is_decoder", false, name))
        throw InputError(name + ": is_decoder", "true is not read (attnviz reads BERT as the encoder it was trained as)");
    if (flagField(j, "add_cross_attention", false, name))
        throw InputError(name + ": add_cross_attention", "true is not read (a BERT with cross-attention is half of an encoder-decoder)");
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
