// A GPT-2 checkpoint of chosen sizes in Hugging Face's layout (tiny_gpt2.hpp's files and
// tokenizer, its weights drawn for these sizes), for the tests of what a pass needs: a wide
// n_embd or many positions make the memory a sentence needs large while the file stays small.
#pragma once

#include "tests/tiny_gpt2.hpp"

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace attnviz::sizedgpt2 {

struct Sizes {
    int layers = 1, heads = 4, embd = 256, positions = 64;
};

// config.json, model.safetensors (F32) and the tiny tokenizer (tinygpt2::kVocab tokens).
inline void writeCheckpoint(const std::filesystem::path& dir, const Sizes& z, std::uint64_t seed = 11) {
    core::Prng rng(seed);
    const auto make = [&](std::vector<std::int64_t> shape, double scale, double offset = 0) {
        tinygpt2::StoredTensor t;
        t.shape = shape;
        std::int64_t n = 1;
        for (auto s : shape) n *= s;
        for (std::int64_t i = 0; i < n; ++i) t.values.push_back(static_cast<float>(offset + scale * rng.normal()));
        return t;
    };
    const std::int64_t d = z.embd;
    const double narrow = 1.0 / static_cast<double>(z.embd);  // products of d terms stay near 1
    std::map<std::string, tinygpt2::StoredTensor> w;
    w["wte.weight"] = make({tinygpt2::kVocab, d}, 0.5);
    w["wpe.weight"] = make({z.positions, d}, 0.3);
    for (int l = 0; l < z.layers; ++l) {
        const std::string p = "h." + std::to_string(l) + ".";
        w[p + "ln_1.weight"] = make({d}, 0.1, 1.0);
        w[p + "ln_1.bias"] = make({d}, 0.1);
        w[p + "attn.c_attn.weight"] = make({d, 3 * d}, narrow);
        w[p + "attn.c_attn.bias"] = make({3 * d}, 0.2);
        w[p + "attn.c_proj.weight"] = make({d, d}, narrow);
        w[p + "attn.c_proj.bias"] = make({d}, 0.05);
        w[p + "ln_2.weight"] = make({d}, 0.1, 1.0);
        w[p + "ln_2.bias"] = make({d}, 0.1);
        w[p + "mlp.c_fc.weight"] = make({d, 4 * d}, narrow);
        w[p + "mlp.c_fc.bias"] = make({4 * d}, 0.1);
        w[p + "mlp.c_proj.weight"] = make({4 * d, d}, narrow);
        w[p + "mlp.c_proj.bias"] = make({d}, 0.05);
    }
    w["ln_f.weight"] = make({d}, 0.1, 1.0);
    w["ln_f.bias"] = make({d}, 0.1);
    tinygpt2::writeCheckpoint(
        dir, w, tinygpt2::configText({{"n_layer", z.layers}, {"n_head", z.heads}, {"n_embd", z.embd}, {"n_positions", z.positions}}));
}

}  // namespace attnviz::sizedgpt2
