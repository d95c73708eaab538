// A GPT-2 checkpoint built by hand (Hugging Face's layout), whose heads do known things, read by
// the real loader and pass: the head statistics must find them among all the heads.
//
// The residual stream is the learned positions alone (token embeddings 0; values, W_O and the MLP
// 0, so every layer reads the same rows), each row with mean 0 and variance 1 so that LayerNorm
// passes it through:
//   p_i = (c cos θi, c sin θi, −c cos θi, −c sin θi, [0.8, −0.8 at i = 0], 0 …),  c = √8, θ = 2π/20
//   layer 0 head 0  previous token: q_i = λ R(−θ) p_i[0:2] / c, k_j = p_j[0:2], so q_i · k_j ∝ cos θ(i − 1 − j)
//   layer 0 head 1  first token: q = β (a bias, for every query), k_j = γ p_j[4]: only key 0 answers
//   layer 1 head 3  itself: q_i = λ p_i[0:2] / c, k_j = p_j[0:2] (q_i · k_j ∝ cos θ(i − j))
//   the other heads: q = k = 0, uniform over what they may read.
#include "core/attention/head_stats.hpp"
#include "core/models/loaded_model.hpp"
#include "core/models/run_maps.hpp"
#include "tests/test_folder.hpp"
#include "tests/tiny_gpt2.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numbers>

namespace attnviz::core {
namespace {

constexpr int kLayers = 2, kHeads = 4, kEmbd = 16, kDh = kEmbd / kHeads, kPositions = 16;

std::map<std::string, tinygpt2::StoredTensor> handBuiltWeights() {
    const auto zeros = [](std::vector<std::int64_t> shape) {
        std::int64_t n = 1;
        for (auto s : shape) n *= s;
        return tinygpt2::StoredTensor{shape, std::vector<float>(static_cast<std::size_t>(n), 0.0f)};
    };
    const auto ones = [&](std::int64_t n) {
        tinygpt2::StoredTensor t = zeros({n});
        std::fill(t.values.begin(), t.values.end(), 1.0f);
        return t;
    };
    const double c = std::sqrt(8.0), theta = 2 * std::numbers::pi / 20, lambda = 100, beta = 20, gamma = 20;
    std::map<std::string, tinygpt2::StoredTensor> w;
    w["wte.weight"] = zeros({tinygpt2::kVocab, kEmbd});
    w["wpe.weight"] = zeros({kPositions, kEmbd});
    for (int i = 0; i < kPositions; ++i) {
        float* p = w["wpe.weight"].values.data() + i * kEmbd;
        p[0] = static_cast<float>(c * std::cos(theta * i)), p[1] = static_cast<float>(c * std::sin(theta * i));
        p[2] = -p[0], p[3] = -p[1];
        if (i == 0) p[4] = 0.8f, p[5] = -0.8f;
    }
    for (int l = 0; l < kLayers; ++l) {
        const std::string n = "h." + std::to_string(l) + ".";
        w[n + "ln_1.weight"] = ones(kEmbd), w[n + "ln_1.bias"] = zeros({kEmbd});
        w[n + "ln_2.weight"] = ones(kEmbd), w[n + "ln_2.bias"] = zeros({kEmbd});
        w[n + "attn.c_attn.weight"] = zeros({kEmbd, 3 * kEmbd});
        w[n + "attn.c_attn.bias"] = zeros({3 * kEmbd});
        w[n + "attn.c_proj.weight"] = zeros({kEmbd, kEmbd}), w[n + "attn.c_proj.bias"] = zeros({kEmbd});
        w[n + "mlp.c_fc.weight"] = zeros({kEmbd, 4 * kEmbd}), w[n + "mlp.c_fc.bias"] = zeros({4 * kEmbd});
        w[n + "mlp.c_proj.weight"] = zeros({4 * kEmbd, kEmbd}), w[n + "mlp.c_proj.bias"] = zeros({kEmbd});
    }
    // c_attn is Conv1D: [in, out], out = q | k | v, head h's columns h·d_h … of each.
    const auto qkv = [&](int layer) -> float* { return w["h." + std::to_string(layer) + ".attn.c_attn.weight"].values.data(); };
    const auto set = [&](int layer, int in, int out, double v) { qkv(layer)[in * 3 * kEmbd + out] = static_cast<float>(v); };
    const int q0 = 0 * kDh, k0 = kEmbd + 0 * kDh;  // layer 0 head 0
    set(0, 0, q0 + 0, lambda / c * std::cos(theta)), set(0, 1, q0 + 0, lambda / c * std::sin(theta));
    set(0, 0, q0 + 1, -lambda / c * std::sin(theta)), set(0, 1, q0 + 1, lambda / c * std::cos(theta));
    set(0, 0, k0 + 0, 1), set(0, 1, k0 + 1, 1);
    const int q1 = 1 * kDh, k1 = kEmbd + 1 * kDh;  // layer 0 head 1
    w["h.0.attn.c_attn.bias"].values[static_cast<std::size_t>(q1)] = static_cast<float>(beta);
    set(0, 4, k1, gamma);
    const int q3 = 3 * kDh, k3 = kEmbd + 3 * kDh;  // layer 1 head 3
    set(1, 0, q3 + 0, lambda / c), set(1, 1, q3 + 1, lambda / c);
    set(1, 0, k3 + 0, 1), set(1, 1, k3 + 1, 1);
    w["ln_f.weight"] = ones(kEmbd), w["ln_f.bias"] = zeros({kEmbd});
    return w;
}

class HandBuiltHeads : public testfs::TestFolder {};

// The head that ranks first by `score`, and the margin to the second.
std::pair<int, double> best(const std::vector<HeadStats>& stats, double HeadStats::*score) {
    std::vector<int> order(stats.size());
    for (std::size_t k = 0; k < order.size(); ++k) order[k] = static_cast<int>(k);
    std::sort(order.begin(), order.end(), [&](int a, int b) { return stats[a].*score > stats[b].*score; });
    return {order[0], stats[order[0]].*score - stats[order[1]].*score};
}

TEST_F(HandBuiltHeads, ThePreviousTokenAndFirstTokenHeadsRankFirst) {
    tinygpt2::writeCheckpoint(
        m_dir, handBuiltWeights(),
        tinygpt2::configText({{"n_layer", kLayers}, {"n_head", kHeads}, {"n_embd", kEmbd}, {"n_positions", kPositions}}));
    const auto model = openCheckpoint(m_dir.string());
    const std::vector<int> ids = {72, 105, 33, 7, 200, 72, 105, 33, 7, 200, 13, 54, 90, 3};  // any tokens: the heads read positions
    const decoder::Run run = decoder::forward(*model, ids);
    const std::vector<HeadStats> stats = allHeadStats(runMaps(run, model->config()));
    ASSERT_EQ(stats.size(), static_cast<std::size_t>(kLayers * kHeads));
    const auto [previous, previousMargin] = best(stats, &HeadStats::previous);
    EXPECT_EQ(previous, 0 * kHeads + 0);
    EXPECT_GT(stats[0].previous, 0.9);
    EXPECT_GT(previousMargin, 0.5);
    const auto [first, firstMargin] = best(stats, &HeadStats::first);
    EXPECT_EQ(first, 0 * kHeads + 1);
    EXPECT_GT(stats[1].first, 0.99);
    EXPECT_GT(firstMargin, 0.5);
    const auto [self, selfMargin] = best(stats, &HeadStats::self);
    EXPECT_EQ(self, 1 * kHeads + 3);
    EXPECT_GT(selfMargin, 0.3);
    // The sink share: the first-token head alone, and the uniform heads' ~H(14)/14 ≈ 0.23 under 0.3.
    EXPECT_NEAR(sinkShare(stats, 0.3), 1.0 / (kLayers * kHeads), 1e-12);
    // A previous-token head reads one key a row: low entropy, distance about 1; a uniform head
    // (layer 0 head 2) is uniform over what it may read: entropy share 1.
    EXPECT_LT(stats[0].entropyShare, 0.1);
    EXPECT_NEAR(stats[0].distance, 1.0 - 1.0 / static_cast<double>(ids.size()), 0.1);  // row 0 reads itself
    EXPECT_NEAR(stats[2].entropyShare, 1.0, 1e-5);
    // With the first key left out, the sink head has nothing but noise left, and the previous
    // head is still one.
    const std::vector<HeadStats> skipped = allHeadStats(runMaps(run, model->config()), {.skipFirstKey = true});
    EXPECT_EQ(best(skipped, &HeadStats::previous).first, 0);
    EXPECT_LT(skipped[1].first, 0.5);
}

}  // namespace
}  // namespace attnviz::core
