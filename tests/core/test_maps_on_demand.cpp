// A pass that keeps only what its maps are made of (decoder::PassMaps::OnDemand): the queries and
// keys as the scores see them, kept anyway, and each row's log-sum-exp (its largest score and the
// log of its sum, as an online softmax keeps them). Any weight made again
// from them (mapWeightRows) is the kept pass's to float rounding, with RoPE, q/k norms, grouped
// kv heads, sliding windows and a what-if's hidden tokens; the log-sum-exp is held to a float64
// sum written here from q and k; the pass's own outputs are the kept pass's bit for bit.
#include "core/models/decoder/decoder.hpp"
#include "core/models/loaded_model.hpp"
#include "tests/test_folder.hpp"
#include "tests/tiny_gpt2.hpp"
#include "tests/tiny_llama.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <utility>

using namespace attnviz;
using namespace attnviz::core;
using nlohmann::json;

namespace {

class MapsOnDemand : public testfs::TestFolder {
protected:
    std::shared_ptr<const decoder::Checkpoint> writeLlama(const json& c) {
        tinyllama::writeCheckpoint(m_dir, c, tinyllama::weights(c, 7), 1);
        return openCheckpoint(m_dir.string());
    }
    std::shared_ptr<const decoder::Checkpoint> writeGpt2() {
        tinygpt2::writeCheckpoint(m_dir, tinygpt2::weights(7));
        return openCheckpoint(m_dir.string());
    }
    const std::vector<int> m_ids = {259, 10, 84, 104, 101, 32, 99, 97, 116, 32, 115, 97, 116, 46, 256, 257, 258, 33, 40, 41};
};

// lse_i = log Σ_j exp(scale · q_i·k_j) over the keys query i reads, in float64 from the kept q and k.
double referenceLse(const decoder::Run& run, const decoder::Config& c, int layer, int head, Eigen::Index i) {
    const auto qkv = run.qkv(layer);
    const Eigen::Index dh = c.headDim;
    const Eigen::VectorXd q = qkv.block(i, head * dh, 1, dh).transpose().cast<double>();
    const double scale = c.scaleScores ? 1.0 / std::sqrt(static_cast<double>(dh)) : 1.0;
    const std::vector<int> hidden = run.hiddenTokens();
    double top = -std::numeric_limits<double>::infinity();
    std::vector<double> s;
    for (Eigen::Index j = 0; j <= i; ++j) {
        const int window = c.window(layer);
        if ((window > 0 && i - j >= window) || std::find(hidden.begin(), hidden.end(), j) != hidden.end()) continue;
        const Eigen::VectorXd k = qkv.block(j, c.qWidth() + c.kvHeadOf(head) * dh, 1, dh).transpose().cast<double>();
        s.push_back(scale * q.dot(k));
        top = std::max(top, s.back());
    }
    if (s.empty()) return -std::numeric_limits<double>::infinity();
    double sum = 0;
    for (const double v : s) sum += std::exp(v - top);
    return top + std::log(sum);
}

// Every head's weights made on demand from `lazy` against `kept`'s, whole and in a block of rows
// off the start; every log-sum-exp against the float64 reference.
void expectSameMaps(const decoder::Run& kept, const decoder::Run& lazy, const decoder::Config& c) {
    const Eigen::Index t = kept.tokens();
    Mat whole(t, t), rows(std::min<Eigen::Index>(7, t - 5), t);
    for (int l = 0; l < c.nLayer; ++l) {
        EXPECT_EQ(lazy.qkv(l), kept.qkv(l));
        EXPECT_EQ(lazy.scoreMax(l), kept.scoreMax(l));
        EXPECT_EQ(lazy.logSum(l), kept.logSum(l));
        for (int h = 0; h < c.nHead; ++h) {
            SCOPED_TRACE("layer " + std::to_string(l) + " head " + std::to_string(h));
            decoder::mapWeightRows(lazy, c, l, h, 0, whole);
            EXPECT_LT((whole - kept.weights(l, h)).cwiseAbs().maxCoeff(), 2e-7f);
            decoder::mapWeightRows(kept, c, l, h, 5, rows);
            EXPECT_LT((rows - kept.weights(l, h).middleRows(5, rows.rows())).cwiseAbs().maxCoeff(), 2e-7f);
            const double scale = c.scaleScores ? 1.0 / std::sqrt(static_cast<double>(c.headDim)) : 1.0;
            for (Eigen::Index i = 0; i < t; ++i) {
                const double want = referenceLse(kept, c, l, h, i);
                const double got = scale * lazy.scoreMax(l)(h, i) + lazy.logSum(l)(h, i);
                if (std::isinf(want)) EXPECT_TRUE(std::isinf(got) && got < 0) << i;
                else EXPECT_NEAR(got, want, 1e-6 * std::max(1.0, std::abs(want))) << i;
            }
        }
    }
}

TEST_F(MapsOnDemand, EveryWeightIsTheKeptPasssToFloatRounding) {
    using tinyllama::config;
    for (const json& c : {config("llama"), config("qwen3"), config("mistral", {{"sliding_window", 4}}),
                          config("qwen2", {{"sliding_window", 5}, {"use_sliding_window", true}, {"max_window_layers", 1}})}) {
        SCOPED_TRACE(c.dump());
        const auto model = writeLlama(c);
        const decoder::Run kept = decoder::forward(*model, m_ids);
        const decoder::Run lazy = decoder::forward(*model, m_ids, nullptr, decoder::PassMaps::OnDemand);
        EXPECT_TRUE(kept.keepsWeights());
        EXPECT_FALSE(lazy.keepsWeights());
        EXPECT_THROW(static_cast<void>(lazy.weights(0, 0)), std::logic_error);
        EXPECT_EQ(lazy.logits, kept.logits);  // A·V read the same weights, from the store or a scratch block
        EXPECT_EQ(lazy.final(), kept.final());
        expectSameMaps(kept, lazy, model->config());
    }
    const auto gpt2 = writeGpt2();  // learned positions, biases, LayerNorm
    const std::vector<int> ids = {5, 17, 3, 3, 40, 2, 9, 11};
    const decoder::Run kept = decoder::forward(*gpt2, ids);
    const decoder::Run lazy = decoder::forward(*gpt2, ids, nullptr, decoder::PassMaps::OnDemand);
    EXPECT_EQ(lazy.logits, kept.logits);
    expectSameMaps(kept, lazy, gpt2->config());
}

TEST_F(MapsOnDemand, TypingAtTheEndAndWhatIfPassesKeepTheirStrategy) {
    const auto model = writeLlama(tinyllama::config("mistral", {{"sliding_window", 6}}));
    const decoder::Config& c = model->config();
    const std::vector<int> shorter(m_ids.begin(), m_ids.end() - 6);
    const decoder::Run prefix = decoder::forward(*model, shorter, nullptr, decoder::PassMaps::OnDemand);
    const decoder::Run appended = decoder::forwardAppend(*model, m_ids, prefix);
    const decoder::Run whole = decoder::forward(*model, m_ids);
    EXPECT_FALSE(appended.keepsWeights());
    EXPECT_EQ(appended.logits, whole.logits);
    expectSameMaps(whole, appended, c);

    // A head ablated in the last layer (the layers below viewed in the base pass) and a hidden
    // token (every layer computed again, the token blocked as a key).
    const std::vector<decoder::Intervention> edits = {{decoder::Intervention::Kind::ZeroHead, 1, 2, 0},
                                                      {decoder::Intervention::Kind::HideToken, 0, 0, 3}};
    for (std::size_t n = 1; n <= edits.size(); ++n) {
        const std::vector<decoder::Intervention> some(edits.begin(), edits.begin() + static_cast<std::ptrdiff_t>(n));
        const decoder::Run keptEdited = decoder::forwardEdited(*model, whole, some);
        const decoder::Run lazyEdited = decoder::forwardEdited(*model, appended, some);
        EXPECT_FALSE(lazyEdited.keepsWeights());
        EXPECT_EQ(lazyEdited.logits, keptEdited.logits);
        expectSameMaps(keptEdited, lazyEdited, c);
    }
    Mat rows(4, static_cast<Eigen::Index>(m_ids.size()));
    decoder::mapWeightRows(decoder::forwardEdited(*model, appended, edits), c, 0, 1, 4, rows);
    EXPECT_EQ(rows.col(3).cwiseAbs().maxCoeff(), 0.0f);  // the hidden token is no key
    EXPECT_NEAR(rows.row(0).sum(), 1.0f, 1e-6f);
}

TEST_F(MapsOnDemand, AStoreWithoutMapsHoldsNoTTimesTBlock) {
    const auto model = writeLlama(tinyllama::config("llama"));
    const decoder::Config& c = model->config();
    const std::uint64_t c2 = 64ULL * 64ULL, perLayer = static_cast<std::uint64_t>(c.nHead) * c2 * sizeof(float);
    EXPECT_EQ(decoder::storeBytes(c, 64, 0, decoder::PassMaps::Kept) - decoder::storeBytes(c, 64, 0, decoder::PassMaps::OnDemand),
              static_cast<std::uint64_t>(c.nLayer) * perLayer);
    // what the on-demand store keeps besides the activations: each head's scoreMax and logSum, a
    // position a layer
    const std::uint64_t activations = (64ULL * (2 * c.nEmbd + c.qkvWidth()) * c.nLayer + 64ULL * c.nEmbd) * sizeof(float);
    EXPECT_EQ(decoder::storeBytes(c, 64, 0, decoder::PassMaps::OnDemand) - activations,
              2 * 64ULL * static_cast<std::uint64_t>(c.nHead * c.nLayer) * sizeof(float));
    Mat wrong(3, 5);
    const decoder::Run run = decoder::forward(*model, m_ids, nullptr, decoder::PassMaps::OnDemand);
    EXPECT_THROW(decoder::mapWeightRows(run, c, 0, 0, 0, wrong), std::invalid_argument);  // not T columns
}

}  // namespace

namespace {

// A lean pass (PassMaps::Lean) keeps of every layer only q | k | v and the log-sum-exp: the same
// pass bit for bit, every weight made again as the kept pass's; typing at the end extends it; a
// what-if over it replays the layers below its first edit from their kept q, k and v (with the
// edits and hidden tokens those layers share) and gives the edited pass over a kept one bit for bit.
TEST_F(MapsOnDemand, ALeanPassKeepsNoActivationsAndIsTheSamePass) {
    using tinyllama::config;
    using Kind = decoder::Intervention::Kind;
    for (const json& c : {config("llama", {{"num_hidden_layers", 4}}), config("qwen3", {{"num_hidden_layers", 3}}),
                          config("mistral", {{"sliding_window", 5}, {"num_hidden_layers", 3}})}) {
        SCOPED_TRACE(c.dump());
        const auto model = writeLlama(c);
        const decoder::Config& cfg = model->config();
        const decoder::Run kept = decoder::forward(*model, m_ids);
        const decoder::Run lean = decoder::forward(*model, m_ids, nullptr, decoder::PassMaps::Lean);
        EXPECT_TRUE(kept.keepsActivations());
        EXPECT_FALSE(lean.keepsActivations());
        EXPECT_FALSE(lean.keepsWeights());
        EXPECT_THROW(static_cast<void>(lean.input(1)), std::logic_error);
        EXPECT_THROW(static_cast<void>(lean.normed(0)), std::logic_error);
        EXPECT_EQ(lean.logits, kept.logits);
        EXPECT_EQ(lean.final(), kept.final());
        expectSameMaps(kept, lean, cfg);
        // the store holds no [C, d] of any layer
        EXPECT_EQ(decoder::storeBytes(cfg, 64, 0, decoder::PassMaps::OnDemand) - decoder::storeBytes(cfg, 64, 0, decoder::PassMaps::Lean),
                  64ULL * 2 * static_cast<std::uint64_t>(cfg.nEmbd * cfg.nLayer) * sizeof(float));

        const std::vector<int> shorter(m_ids.begin(), m_ids.end() - 5);
        const decoder::Run appended =
            decoder::forwardAppend(*model, m_ids, decoder::forward(*model, shorter, nullptr, decoder::PassMaps::Lean));
        EXPECT_EQ(appended.maps(), decoder::PassMaps::Lean);
        EXPECT_EQ(appended.logits, kept.logits);
        expectSameMaps(kept, appended, cfg);

        // Edits from layer 2 up: layers 0 and 1 replayed. Then the same with one more edit in layer
        // 2, reusing the first edited pass (whose layer 1 ablation the replay must apply), and a
        // hidden token shared by both (the replay hides it too).
        const int top = cfg.nLayer - 1;
        const std::vector<std::vector<decoder::Intervention>> chain = {
            {{Kind::ZeroHead, top, 2, 0}},
            {{Kind::MeanHead, 1, 0, 0}, {Kind::HideToken, 0, 0, 6}},
            {{Kind::MeanHead, 1, 0, 0}, {Kind::HideToken, 0, 0, 6}, {Kind::ZeroHead, top, 3, 0}}};
        std::optional<decoder::Run> keptBefore, leanBefore;
        for (const std::vector<decoder::Intervention>& edits : chain) {
            SCOPED_TRACE(decoder::interventionText(edits.back()));
            const decoder::Run keptEdited = decoder::forwardEdited(*model, kept, edits, keptBefore ? &*keptBefore : nullptr);
            const decoder::Run leanEdited = decoder::forwardEdited(*model, lean, edits, leanBefore ? &*leanBefore : nullptr);
            EXPECT_EQ(leanEdited.computedFrom(), keptEdited.computedFrom());
            EXPECT_EQ(leanEdited.maps(), decoder::PassMaps::Lean);
            EXPECT_EQ(leanEdited.logits, keptEdited.logits);
            EXPECT_EQ(leanEdited.final(), keptEdited.final());
            expectSameMaps(keptEdited, leanEdited, cfg);
            keptBefore = keptEdited;
            leanBefore = leanEdited;
        }
        EXPECT_GT(leanBefore->computedFrom(), 0);  // the last one reused its predecessor's lower layers
        EXPECT_NE(leanBefore->logits, lean.logits);
    }
}

// Past 2,048 new rows the projections and the MLP run a chunk of rows at a time: every row is what
// it is when computed alone (a pass extended by 60 tokens at 2,100), with attention by row blocks
// and by tiles (each pass of a pair computed one way).
TEST_F(MapsOnDemand, APassInChunksOfRowsIsThePassRowByRow) {
    const auto model = writeLlama(tinyllama::config("qwen2", {{"max_position_embeddings", 4096}}));
    std::vector<int> ids;
    for (int i = 0; i < 2100; ++i) ids.push_back(32 + (i * 37 + i / 7) % 90);
    const std::vector<int> shorter(ids.begin(), ids.end() - 60);
    const Eigen::Index before = decoder::tiledAttentionFrom();
    for (const auto& [maps, tiledFrom] :
         {std::pair{decoder::PassMaps::OnDemand, Eigen::Index{1} << 30}, std::pair{decoder::PassMaps::Lean, Eigen::Index{1} << 30},
          std::pair{decoder::PassMaps::OnDemand, Eigen::Index{0}}, std::pair{decoder::PassMaps::Lean, Eigen::Index{0}}}) {
        SCOPED_TRACE("tiled from " + std::to_string(tiledFrom));
        decoder::useTiledAttentionFrom(tiledFrom);
        const decoder::Run whole = decoder::forward(*model, ids, nullptr, maps);
        const decoder::Run grown = decoder::forwardAppend(*model, ids, decoder::forward(*model, shorter, nullptr, maps));
        EXPECT_EQ(whole.logits, grown.logits);
        EXPECT_EQ(whole.final(), grown.final());
        for (int l = 0; l < model->config().nLayer; ++l) {
            EXPECT_EQ(whole.qkv(l), grown.qkv(l));
            EXPECT_EQ(whole.logSum(l), grown.logSum(l));
            if (maps != decoder::PassMaps::Lean) {
                EXPECT_EQ(whole.input(l), grown.input(l));
            }
        }
    }
    decoder::useTiledAttentionFrom(before);
}

}  // namespace

// A pass that keeps no map and is longer than decoder::tiledAttentionFrom() computes attention a
// tile of 256 keys at a time with an online softmax, 96 queries a task (core::attendTiled). Forced
// here at 600 tokens (three tiles, the last 8 keys outside packKeys' panels, a partial block of
// queries), with heads of 32 and 20 dimensions (whole panels of 16 and a remainder), grouped kv
// heads, a sliding window across tiles and a hidden token: each row's log-sum-exp equals the
// float64 sum over the pass's own q and k, every weight the row-block pass's to float rounding,
// and the next token's logits agree.
TEST_F(MapsOnDemand, ATiledPassIsTheRowBlockPassToFloatRounding) {
    using tinyllama::config;
    struct Restore {
        Eigen::Index before = decoder::useTiledAttentionFrom(0);
        ~Restore() { decoder::useTiledAttentionFrom(before); }
    };
    std::vector<int> ids(600);
    for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int>((i * 37 + i / 7) % 256);
    for (const json& c : {config("llama", {{"head_dim", 32}, {"max_position_embeddings", 1024}}),
                          config("mistral", {{"head_dim", 20}, {"max_position_embeddings", 1024}, {"sliding_window", 300}})}) {
        SCOPED_TRACE(c.dump());
        const auto model = writeLlama(c);
        const decoder::Config& cfg = model->config();
        const decoder::Run kept = decoder::forward(*model, ids);
        std::optional<decoder::Run> tiled;
        {
            const Restore restore;
            EXPECT_STREQ(decoder::attentionStrategyName(cfg, decoder::PassMaps::OnDemand, 600), "tiles, online softmax");
            tiled = decoder::forward(*model, ids, nullptr, decoder::PassMaps::OnDemand);
        }
        EXPECT_STREQ(decoder::attentionStrategyName(cfg, decoder::PassMaps::OnDemand, 600), "row blocks");
        EXPECT_LT((tiled->logits - kept.logits).cwiseAbs().maxCoeff(), 1e-4f * std::max(1.0f, kept.logits.cwiseAbs().maxCoeff()));
        const auto expectClose = [&](const decoder::Run& want, const decoder::Run& got) {
            const Eigen::Index t = want.tokens();
            Mat map(t, t);
            const double scale = cfg.scaleScores ? 1.0 / std::sqrt(static_cast<double>(cfg.headDim)) : 1.0;
            for (int l = 0; l < cfg.nLayer; ++l)
                for (int h = 0; h < cfg.nHead; ++h) {
                    SCOPED_TRACE("layer " + std::to_string(l) + " head " + std::to_string(h));
                    decoder::mapWeightRows(got, cfg, l, h, 0, map);
                    // layer 0 reads the same q and k; later ones inputs that differ by rounding
                    EXPECT_LT((map - want.weights(l, h)).cwiseAbs().maxCoeff(), l == 0 ? 2e-6f : 2e-5f);
                    for (Eigen::Index i = 0; i < t; i += 7) {
                        const double lse = referenceLse(got, cfg, l, h, i);
                        const double sum = scale * got.scoreMax(l)(h, i) + got.logSum(l)(h, i);
                        if (std::isinf(lse)) EXPECT_TRUE(std::isinf(sum) && sum < 0) << i;
                        else EXPECT_NEAR(sum, lse, 1e-6 * std::max(1.0, std::abs(lse))) << i;
                    }
                }
        };
        expectClose(kept, *tiled);
        // Token 3 hidden in every layer: a key no query reads, and query 3's own row is left
        // with keys 0 … 2 (a what-if's pass, tiled as the pass it edits).
        const std::vector<decoder::Intervention> hide = {{decoder::Intervention::Kind::HideToken, 0, 0, 3}};
        const decoder::Run keptHidden = decoder::forwardEdited(*model, kept, hide);
        const Restore restore;
        const decoder::Run tiledHidden = decoder::forwardEdited(*model, *tiled, hide);
        EXPECT_LT((tiledHidden.logits - keptHidden.logits).cwiseAbs().maxCoeff(),
                  1e-4f * std::max(1.0f, keptHidden.logits.cwiseAbs().maxCoeff()));
        expectClose(keptHidden, tiledHidden);
    }
}
