// A tiny BERT checkpoint in Hugging Face's layout, written by the tests: config.json, a
// safetensors file of BertForMaskedLM's tensors (or BertModel's), and a vocab.txt of a few words.
// Random weights from the project's PRNG.
#pragma once

#include "tests/tiny_gpt2.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace attnviz::tinybert {

using tinygpt2::StoredTensor;

constexpr int kLayers = 2, kHeads = 2, kEmbd = 8, kInner = 12, kPositions = 16, kTypes = 2;
// [PAD] 0, [UNK] 1, [CLS] 2, [SEP] 3, [MASK] 4, then words and continuations.
inline const std::vector<std::string> kVocab = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat",    "on",
                                                "mat",   "##s",   "a",     ".",     ",",      "dog", "ran", "##ning", "is"};
constexpr int kVocabRows = 20;  // the embeddings hold two rows more than the vocabulary

inline std::string configText(const nlohmann::json& changes = nlohmann::json::object()) {
    nlohmann::json c = {{"model_type", "bert"},
                        {"architectures", {"BertForMaskedLM"}},
                        {"num_hidden_layers", kLayers},
                        {"num_attention_heads", kHeads},
                        {"hidden_size", kEmbd},
                        {"intermediate_size", kInner},
                        {"max_position_embeddings", kPositions},
                        {"type_vocab_size", kTypes},
                        {"vocab_size", kVocabRows},
                        {"hidden_act", "gelu"},
                        {"layer_norm_eps", 1e-12},
                        {"position_embedding_type", "absolute"},
                        {"pad_token_id", 0}};
    for (const auto& [key, value] : changes.items()) {
        if (value.is_null()) c.erase(key);
        else c[key] = value;
    }
    return c.dump();
}

// BertForMaskedLM's tensors ("bert." prefix, the head, tied); `prefix` "" and no head: BertModel's.
inline std::map<std::string, StoredTensor> weights(std::uint64_t seed, const std::string& prefix = "bert.", bool head = true,
                                                   std::int64_t vocabRows = kVocabRows) {
    core::Prng rng(seed);
    const auto make = [&](std::vector<std::int64_t> shape, double scale, double offset = 0) {
        return tinygpt2::randomTensor(rng, std::move(shape), scale, offset);
    };
    const std::int64_t d = kEmbd;
    std::map<std::string, StoredTensor> w;
    const std::string e = prefix + "embeddings.";
    w[e + "word_embeddings.weight"] = make({vocabRows, d}, 0.8);
    w[e + "position_embeddings.weight"] = make({kPositions, d}, 0.4);
    w[e + "token_type_embeddings.weight"] = make({kTypes, d}, 0.4);
    w[e + "LayerNorm.weight"] = make({d}, 0.1, 1.0);
    w[e + "LayerNorm.bias"] = make({d}, 0.1);
    for (int l = 0; l < kLayers; ++l) {
        const std::string p = prefix + "encoder.layer." + std::to_string(l) + ".";
        for (const char* part : {"query", "key", "value"}) {
            w[p + "attention.self." + part + ".weight"] = make({d, d}, 0.7);
            w[p + "attention.self." + part + ".bias"] = make({d}, 0.2);
        }
        w[p + "attention.output.dense.weight"] = make({d, d}, 0.4);
        w[p + "attention.output.dense.bias"] = make({d}, 0.1);
        w[p + "attention.output.LayerNorm.weight"] = make({d}, 0.1, 1.0);
        w[p + "attention.output.LayerNorm.bias"] = make({d}, 0.1);
        w[p + "intermediate.dense.weight"] = make({kInner, d}, 0.5);
        w[p + "intermediate.dense.bias"] = make({kInner}, 0.1);
        w[p + "output.dense.weight"] = make({d, kInner}, 0.4);
        w[p + "output.dense.bias"] = make({d}, 0.1);
        w[p + "output.LayerNorm.weight"] = make({d}, 0.1, 1.0);
        w[p + "output.LayerNorm.bias"] = make({d}, 0.1);
    }
    w[prefix + "pooler.dense.weight"] = make({d, d}, 0.3);  // not read
    w[prefix + "pooler.dense.bias"] = make({d}, 0.1);
    if (head) {
        w["cls.predictions.transform.dense.weight"] = make({d, d}, 0.5);
        w["cls.predictions.transform.dense.bias"] = make({d}, 0.1);
        w["cls.predictions.transform.LayerNorm.weight"] = make({d}, 0.1, 1.0);
        w["cls.predictions.transform.LayerNorm.bias"] = make({d}, 0.1);
        w["cls.predictions.bias"] = make({vocabRows}, 0.3);
    }
    return w;
}

inline std::string vocabText() {
    std::string text;
    for (const std::string& token : kVocab) text += token + "\n";
    return text;
}

// The whole folder: config.json, model.safetensors, vocab.txt and tokenizer_config.json.
inline void writeCheckpoint(const std::filesystem::path& dir, const std::map<std::string, StoredTensor>& w,
                            const std::string& config = configText(), const std::string& tokenizerConfig = R"({"do_lower_case": true})") {
    testfs::writeFile(dir / "config.json", config);
    testfs::writeFile(dir / "model.safetensors", tinygpt2::safetensors(w));
    testfs::writeFile(dir / "vocab.txt", vocabText());
    if (!tokenizerConfig.empty()) testfs::writeFile(dir / "tokenizer_config.json", tokenizerConfig);
}

}  // namespace attnviz::tinybert
