// A tiny GPT-2 checkpoint in Hugging Face's layout, written by the tests: config.json, a
// safetensors file (F32, F16 or I64 tensors, written byte by byte), and a vocabulary of the 256
// byte symbols with three merges and <|endoftext|>. Random weights from the project's PRNG.
#pragma once

#include "core/base/prng.hpp"
#include "core/text/byte_bpe.hpp"
#include "core/text/tokenizer.hpp"
#include "tests/test_folder.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace attnviz::tinygpt2 {

using core::appendUtf8;
using core::ByteBpe;
using core::Prng;
using testfs::writeFile;

constexpr int kLayers = 2, kHeads = 2, kEmbd = 8, kPositions = 16, kVocab = 260;

inline std::string configText(const nlohmann::json& changes = nlohmann::json::object()) {
    nlohmann::json c = {{"model_type", "gpt2"}, {"n_layer", kLayers},         {"n_head", kHeads},
                        {"n_embd", kEmbd},      {"n_positions", kPositions},  {"vocab_size", kVocab},
                        {"n_inner", nullptr},   {"layer_norm_epsilon", 1e-5}, {"activation_function", "gelu_new"}};
    for (const auto& [key, value] : changes.items()) {
        if (value.is_null() && key != "n_inner") c.erase(key);
        else c[key] = value;
    }
    return c.dump();
}

struct StoredTensor {
    std::vector<std::int64_t> shape;
    std::vector<float> values;
    std::string dtype = "F32";
};

// float → IEEE half, rounded to nearest even (normal numbers, as the test's weights are).
inline std::uint16_t toHalf(float v) {
    std::uint32_t bits = 0;
    std::memcpy(&bits, &v, 4);
    const std::uint32_t sign = (bits >> 16) & 0x8000u;
    const int exponent = static_cast<int>((bits >> 23) & 0xFF) - 127 + 15;
    std::uint32_t mantissa = bits & 0x7FFFFFu;
    if (exponent <= 0) return static_cast<std::uint16_t>(sign);  // below the normal range: 0 (not used here)
    std::uint32_t half = (static_cast<std::uint32_t>(exponent) << 10) | (mantissa >> 13);
    const std::uint32_t rest = mantissa & 0x1FFFu;
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;
    return static_cast<std::uint16_t>(sign | half);
}

// float → bfloat16, rounded to nearest even (finite numbers).
inline std::uint16_t toBfloat16(float v) {
    std::uint32_t bits = 0;
    std::memcpy(&bits, &v, 4);
    bits += 0x7FFFu + ((bits >> 16) & 1u);
    return static_cast<std::uint16_t>(bits >> 16);
}

// The value a tensor of `dtype` holds for v: v rounded to F16 or BF16 and widened back, or v.
inline float stored(float v, const std::string& dtype) {
    std::uint32_t bits = 0;
    if (dtype == "BF16") {
        bits = static_cast<std::uint32_t>(toBfloat16(v)) << 16;
        std::memcpy(&v, &bits, 4);
    } else if (dtype == "F16") {
        const std::uint16_t h = toHalf(v);
        // normal halves only (as the tests' weights are): exponent rebased from 15 to 127
        const std::uint32_t sign = (h & 0x8000u) << 16, exponent = (h >> 10) & 0x1F, mantissa = h & 0x3FFu;
        bits = exponent == 0 ? sign : sign | ((exponent - 15 + 127) << 23) | (mantissa << 13);
        std::memcpy(&v, &bits, 4);
    }
    return v;
}

// The safetensors bytes of `tensors` (F32, F16, BF16 or I64 by each one's dtype), in name order.
inline std::string safetensors(const std::map<std::string, StoredTensor>& tensors) {
    nlohmann::json header = {{"__metadata__", {{"format", "pt"}}}};
    std::string data;
    for (const auto& [name, t] : tensors) {
        const std::size_t begin = data.size();
        if (t.dtype == "F16") {
            for (const float v : t.values) {
                const std::uint16_t h = toHalf(v);
                data.append(reinterpret_cast<const char*>(&h), 2);
            }
        } else if (t.dtype == "BF16") {
            for (const float v : t.values) {
                const std::uint16_t b = toBfloat16(v);
                data.append(reinterpret_cast<const char*>(&b), 2);
            }
        } else if (t.dtype == "I64") {
            for (const float v : t.values) {
                const auto i = static_cast<std::int64_t>(v);
                data.append(reinterpret_cast<const char*>(&i), 8);
            }
        } else {
            data.append(reinterpret_cast<const char*>(t.values.data()), t.values.size() * 4);
        }
        header[name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {begin, data.size()}}};
    }
    std::string text = header.dump();
    text.append((8 - text.size() % 8) % 8, ' ');
    std::string out(8, '\0');
    const std::uint64_t n = text.size();
    std::memcpy(out.data(), &n, 8);
    return out + text + data;
}

// A tensor of `shape` whose values are offset + scale · N(0, 1), drawn from rng in order.
inline StoredTensor randomTensor(Prng& rng, std::vector<std::int64_t> shape, double scale, double offset = 0) {
    StoredTensor t;
    t.shape = std::move(shape);
    std::int64_t n = 1;
    for (auto s : t.shape) n *= s;
    for (std::int64_t i = 0; i < n; ++i) t.values.push_back(static_cast<float>(offset + scale * rng.normal()));
    return t;
}

inline std::map<std::string, StoredTensor> weights(std::uint64_t seed) {
    Prng rng(seed);
    const auto make = [&](std::vector<std::int64_t> shape, double scale, double offset = 0) {
        return randomTensor(rng, std::move(shape), scale, offset);
    };
    const std::int64_t d = kEmbd;
    std::map<std::string, StoredTensor> w;
    w["wte.weight"] = make({kVocab, d}, 0.5);
    w["wpe.weight"] = make({kPositions, d}, 0.3);
    for (int l = 0; l < kLayers; ++l) {
        const std::string p = "h." + std::to_string(l) + ".";
        w[p + "ln_1.weight"] = make({d}, 0.1, 1.0);
        w[p + "ln_1.bias"] = make({d}, 0.1);
        w[p + "attn.c_attn.weight"] = make({d, 3 * d}, 0.6);
        w[p + "attn.c_attn.bias"] = make({3 * d}, 0.2);
        w[p + "attn.c_proj.weight"] = make({d, d}, 0.3);
        w[p + "attn.c_proj.bias"] = make({d}, 0.05);
        w[p + "ln_2.weight"] = make({d}, 0.1, 1.0);
        w[p + "ln_2.bias"] = make({d}, 0.1);
        w[p + "mlp.c_fc.weight"] = make({d, 4 * d}, 0.35);
        w[p + "mlp.c_fc.bias"] = make({4 * d}, 0.1);
        w[p + "mlp.c_proj.weight"] = make({4 * d, d}, 0.2);
        w[p + "mlp.c_proj.bias"] = make({d}, 0.05);
        w[p + "attn.masked_bias"] = make({}, 0.0, -1e4);  // a buffer older checkpoints carry
    }
    w["ln_f.weight"] = make({d}, 0.1, 1.0);
    w["ln_f.bias"] = make({d}, 0.1);
    return w;
}

// A vocabulary of the 256 byte symbols, three merges and <|endoftext|>.
inline void writeTokenizer(const std::filesystem::path& dir) {
    nlohmann::json vocab = nlohmann::json::object();
    for (int b = 0; b < 256; ++b) {
        std::string symbol;
        appendUtf8(symbol, ByteBpe::byteToUnicode(static_cast<unsigned char>(b)));
        vocab[symbol] = b;
    }
    vocab["Ġt"] = 256;
    vocab["he"] = 257;
    vocab["Ġthe"] = 258;
    vocab["<|endoftext|>"] = 259;
    writeFile(dir / "vocab.json", vocab.dump());
    writeFile(dir / "merges.txt", "#version: 0.2\nĠ t\nh e\nĠt he\n");
}

// The whole folder: config.json, model.safetensors and the tokenizer.
inline void writeCheckpoint(const std::filesystem::path& dir, const std::map<std::string, StoredTensor>& w,
                            const std::string& config = configText()) {
    writeFile(dir / "config.json", config);
    writeFile(dir / "model.safetensors", safetensors(w));
    writeTokenizer(dir);
}

}  // namespace attnviz::tinygpt2
