// A tiny Llama-family checkpoint in Hugging Face's layout, written by the tests: config.json
// (llama, mistral, qwen2 or qwen3), model.safetensors or shards with their index, and a
// byte-level tokenizer.json of the 256 byte symbols, three merges and a BOS the post-processor
// does not add. Random weights from the project's PRNG, nn.Linear's [out, in] layout.
#pragma once

#include "tests/tiny_gpt2.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace attnviz::tinyllama {

using testfs::writeFile;
using tinygpt2::StoredTensor;

constexpr int kLayers = 2, kHeads = 4, kKvHeads = 2, kEmbd = 16, kHeadDim = 4, kInner = 24, kPositions = 64, kVocab = 260;

inline nlohmann::json config(const std::string& type = "llama", const nlohmann::json& changes = nlohmann::json::object()) {
    nlohmann::json c = {{"model_type", type},
                        {"architectures", {"LlamaForCausalLM"}},
                        {"num_hidden_layers", kLayers},
                        {"num_attention_heads", kHeads},
                        {"num_key_value_heads", kKvHeads},
                        {"hidden_size", kEmbd},
                        {"intermediate_size", kInner},
                        {"max_position_embeddings", kPositions},
                        {"vocab_size", kVocab},
                        {"rms_norm_eps", 1e-6},
                        {"rope_theta", 10000.0},
                        {"hidden_act", "silu"},
                        {"tie_word_embeddings", false},
                        {"torch_dtype", "float32"}};
    if (type == "qwen3") c["head_dim"] = kHeadDim * 2;  // Qwen3 sets d_h apart from hidden / heads
    for (const auto& [key, value] : changes.items()) {
        if (value.is_null()) c.erase(key);
        else c[key] = value;
    }
    return c;
}

inline int headDim(const nlohmann::json& c) {
    return c.contains("head_dim") ? c["head_dim"].get<int>() : kEmbd / c["num_attention_heads"].get<int>();
}

// Random weights for `c` (its sizes, biases, q/k norms and tying).
inline std::map<std::string, StoredTensor> weights(const nlohmann::json& c, std::uint64_t seed) {
    core::Prng rng(seed);
    const auto make = [&](std::vector<std::int64_t> shape, double scale, double offset = 0) {
        return tinygpt2::randomTensor(rng, std::move(shape), scale, offset);
    };
    const std::string type = c["model_type"];
    const std::int64_t d = c["hidden_size"], inner = c["intermediate_size"], layers = c["num_hidden_layers"], vocab = c["vocab_size"];
    const std::int64_t dh = headDim(c), qw = c["num_attention_heads"].get<std::int64_t>() * dh,
                       kvw = c["num_key_value_heads"].get<std::int64_t>() * dh;
    const bool biased = type == "qwen2" || c.value("attention_bias", false);
    std::map<std::string, StoredTensor> w;
    w["model.embed_tokens.weight"] = make({vocab, d}, 0.5);
    for (std::int64_t l = 0; l < layers; ++l) {
        const std::string p = "model.layers." + std::to_string(l) + ".";
        w[p + "input_layernorm.weight"] = make({d}, 0.1, 1.0);
        w[p + "self_attn.q_proj.weight"] = make({qw, d}, 0.7);
        w[p + "self_attn.k_proj.weight"] = make({kvw, d}, 0.7);
        w[p + "self_attn.v_proj.weight"] = make({kvw, d}, 0.5);
        if (biased) {
            w[p + "self_attn.q_proj.bias"] = make({qw}, 0.3);
            w[p + "self_attn.k_proj.bias"] = make({kvw}, 0.3);
            w[p + "self_attn.v_proj.bias"] = make({kvw}, 0.3);
        }
        if (type == "qwen3") {
            w[p + "self_attn.q_norm.weight"] = make({dh}, 0.2, 1.0);
            w[p + "self_attn.k_norm.weight"] = make({dh}, 0.2, 1.0);
        }
        w[p + "self_attn.o_proj.weight"] = make({d, qw}, 0.3);
        if (type != "qwen2" && biased) w[p + "self_attn.o_proj.bias"] = make({d}, 0.1);
        w[p + "post_attention_layernorm.weight"] = make({d}, 0.1, 1.0);
        w[p + "mlp.gate_proj.weight"] = make({inner, d}, 0.4);
        w[p + "mlp.up_proj.weight"] = make({inner, d}, 0.4);
        w[p + "mlp.down_proj.weight"] = make({d, inner}, 0.3);
        if (c.value("mlp_bias", false)) {
            w[p + "mlp.gate_proj.bias"] = make({inner}, 0.2);
            w[p + "mlp.up_proj.bias"] = make({inner}, 0.2);
            w[p + "mlp.down_proj.bias"] = make({d}, 0.1);
        }
    }
    w["model.norm.weight"] = make({d}, 0.1, 1.0);
    if (!c.value("tie_word_embeddings", false)) w["lm_head.weight"] = make({vocab, d}, 0.5);
    return w;
}

// A byte-level tokenizer.json: the 256 byte symbols, three merges, and "<|begin_of_text|>" as a
// special added token (id 259).
inline std::string tokenizerJson() {
    nlohmann::json vocab = nlohmann::json::object();
    for (int b = 0; b < 256; ++b) {
        std::string symbol;
        core::appendUtf8(symbol, core::ByteBpe::byteToUnicode(static_cast<unsigned char>(b)));
        vocab[symbol] = b;
    }
    vocab["Ġt"] = 256;
    vocab["he"] = 257;
    vocab["Ġthe"] = 258;
    vocab["<|begin_of_text|>"] = 259;
    nlohmann::json added = nlohmann::json::array();
    added.push_back({{"id", 259},
                     {"content", "<|begin_of_text|>"},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", true}});
    const nlohmann::json j = {
        {"version", "1.0"},
        {"added_tokens", added},
        {"normalizer", nullptr},
        {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}}},
        {"post_processor", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", false}, {"use_regex", true}}},
        {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}},
        {"model", {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"vocab", vocab}, {"merges", {"Ġ t", "h e", "Ġt he"}}}}};
    return j.dump();
}

// The same with a TemplateProcessing post-processor that puts <|begin_of_text|> (259) first, as
// Llama 2's and 3's files do: the tokenizer's BOS.
inline std::string tokenizerJsonWithBos() {
    nlohmann::json tokenizer = nlohmann::json::parse(tokenizerJson());
    tokenizer["post_processor"] = {
        {"type", "TemplateProcessing"},
        {"single", {{{"SpecialToken", {{"id", "<|begin_of_text|>"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
        {"special_tokens", {{"<|begin_of_text|>", {{"id", "<|begin_of_text|>"}, {"ids", {259}}, {"tokens", {"<|begin_of_text|>"}}}}}}};
    return tokenizer.dump();
}

// The whole folder: config.json, the weights (in `shards` files with an index when more than
// one, each tensor in the shard of its place in name order), tokenizer.json.
inline void writeCheckpoint(const std::filesystem::path& dir, const nlohmann::json& c, const std::map<std::string, StoredTensor>& w,
                            int shards = 1) {
    writeFile(dir / "config.json", c.dump());
    writeFile(dir / "tokenizer.json", tokenizerJson());
    if (shards <= 1) {
        writeFile(dir / "model.safetensors", tinygpt2::safetensors(w));
        return;
    }
    std::vector<std::map<std::string, StoredTensor>> parts(static_cast<std::size_t>(shards));
    nlohmann::json map = nlohmann::json::object();
    std::size_t i = 0;
    for (const auto& [name, t] : w) {
        const std::size_t s = i++ * static_cast<std::size_t>(shards) / w.size();
        parts[s][name] = t;
        char file[64];
        std::snprintf(file, sizeof file, "model-%05zu-of-%05d.safetensors", s + 1, shards);
        map[name] = file;
    }
    for (std::size_t s = 0; s < parts.size(); ++s) {
        char file[64];
        std::snprintf(file, sizeof file, "model-%05zu-of-%05d.safetensors", s + 1, shards);
        writeFile(dir / file, tinygpt2::safetensors(parts[s]));
    }
    writeFile(dir / "model.safetensors.index.json", nlohmann::json{{"metadata", {{"total_size", 0}}}, {"weight_map", map}}.dump());
}

}  // namespace attnviz::tinyllama
