// Attention rollout (rollout.hpp) against a hand derivation, and the blocked causal product
// against Eigen's dense one.
#include "core/attention/rollout.hpp"

#include "core/attention/head_stats.hpp"

#include "core/base/error.hpp"
#include "core/base/prng.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace attnviz::core {
namespace {

// Two layers × two heads over three tokens, causal.
struct HandMaps {
    std::vector<Mat> heads;  // [layer · 2 + head]
    AttentionMaps maps;
    HandMaps() {
        const auto m = [](std::initializer_list<float> v) {
            Mat a(3, 3);
            auto it = v.begin();
            for (int i = 0; i < 3; ++i)
                for (int j = 0; j < 3; ++j) a(i, j) = *it++;
            return a;
        };
        heads = {m({1, 0, 0, 0.5f, 0.5f, 0, 0.2f, 0.3f, 0.5f}), m({1, 0, 0, 0.9f, 0.1f, 0, 0.6f, 0.2f, 0.2f}),
                 m({1, 0, 0, 0, 1, 0, 0, 0.5f, 0.5f}), m({1, 0, 0, 1, 0, 0, 0.5f, 0.5f, 0})};
        maps.layers = 2;
        maps.heads = 2;
        maps.queries = maps.keys = 3;
        Settings causal;
        causal.causal = true;
        maps.settings = {causal, causal};
        maps.weights = [this](int layer, int head) { return MatRef(heads[static_cast<std::size_t>(layer * 2 + head)]); };
    }
};

void expectMatrix(const Mat& got, std::initializer_list<double> want) {
    ASSERT_EQ(got.size(), static_cast<Eigen::Index>(want.size()));
    auto it = want.begin();
    for (Eigen::Index i = 0; i < got.rows(); ++i)
        for (Eigen::Index j = 0; j < got.cols(); ++j) EXPECT_NEAR(got(i, j), *it++, 1e-6) << "at (" << i << ", " << j << ")";
}

TEST(Rollout, MeanOverHeadsByHand) {
    const HandMaps h;
    // Layer 1: mean [[1,0,0],[.7,.3,0],[.4,.25,.35]]; Â = ½ mean + ½ I (rows already sum to 1).
    expectMatrix(rolloutLayer(h.maps, 0, {}), {1, 0, 0, 0.35, 0.65, 0, 0.2, 0.125, 0.675});
    expectMatrix(attentionRollout(h.maps, 0, {}), {1, 0, 0, 0.35, 0.65, 0, 0.2, 0.125, 0.675});
    // Layer 2: mean [[1,0,0],[.5,.5,0],[.25,.5,.25]] → Â² = [[1,0,0],[.25,.75,0],[.125,.25,.625]];
    // R = Â² Â¹: row 2 = .125·[1,0,0] + .25·[.35,.65,0] + .625·[.2,.125,.675].
    expectMatrix(attentionRollout(h.maps, 1, {}), {1, 0, 0, 0.5125, 0.4875, 0, 0.3375, 0.240625, 0.421875});
}

TEST(Rollout, MaxOverHeadsByHand) {
    const HandMaps h;
    const RolloutOptions max{.heads = RolloutHeads::Max};
    // Layer 1: max [[1,0,0],[.9,.5,0],[.6,.3,.5]]; ½ max + ½ I has row sums 1, 1.2, 1.2.
    expectMatrix(rolloutLayer(h.maps, 0, max), {1, 0, 0, 0.375, 0.625, 0, 0.25, 0.125, 0.625});
    // Layer 2: max [[1,0,0],[1,1,0],[.5,.5,.5]] → rows ÷ 1, 1.5, 1.25: [[1,0,0],[⅓,⅔,0],[.2,.2,.6]].
    expectMatrix(rolloutLayer(h.maps, 1, max), {1, 0, 0, 1.0 / 3, 2.0 / 3, 0, 0.2, 0.2, 0.6});
    expectMatrix(attentionRollout(h.maps, 1, max), {1, 0, 0, 1.0 / 3 + 0.25, 2.0 / 3 * 0.625, 0, 0.425, 0.2, 0.375});
}

TEST(Rollout, FirstKeyLeftOutByHand) {
    const HandMaps h;
    const RolloutOptions skip{.skipFirstKey = true};
    // Layer 1, rows over keys 2 … 3: head 1 [0], [0,1,0], [0,.375,.625]; head 2 [0], [0,1,0], [0,.5,.5].
    // Row 1 reads nothing past the first key: its Â row is the identity's.
    expectMatrix(rolloutLayer(h.maps, 0, skip), {1, 0, 0, 0, 1, 0, 0, 0.21875, 0.78125});
    // Layer 2: head 2's row 2 ([1,0,0]) has nothing past the first key: mean row 2 = [0,.5,0] → [0,1,0];
    // row 3 mean [0,.75,.25] → [0,.375,.625].
    expectMatrix(rolloutLayer(h.maps, 1, skip), {1, 0, 0, 0, 1, 0, 0, 0.375, 0.625});
    expectMatrix(attentionRollout(h.maps, 1, skip), {1, 0, 0, 0, 1, 0, 0, 0.375 + 0.625 * 0.21875, 0.625 * 0.78125});
    EXPECT_NE(rolloutRule(skip).find("first key left out"), std::string::npos);
    EXPECT_EQ(rolloutRule({}).find("first key"), std::string::npos);
    EXPECT_NE(rolloutRule({.heads = RolloutHeads::Max}).find("max over heads"), std::string::npos);
}

TEST(Rollout, BlockedCausalProductMatchesTheDenseOne) {
    // Four causal layers of three random heads over 301 tokens (more than one block of rows, and a
    // last block that is not full), each row a softmax of Gaussian scores over the keys it may read.
    const Eigen::Index t = 301;
    const int layers = 4, heads = 3;
    Prng rng(7);
    std::vector<Mat> maps(static_cast<std::size_t>(layers * heads));
    for (Mat& a : maps) {
        a = Mat::Zero(t, t);
        for (Eigen::Index i = 0; i < t; ++i) {
            for (Eigen::Index j = 0; j <= i; ++j) a(i, j) = std::exp(3.0f * static_cast<float>(rng.normal()));
            a.row(i) /= a.row(i).sum();
        }
    }
    AttentionMaps m;
    m.layers = layers;
    m.heads = heads;
    m.queries = m.keys = t;
    Settings causal;
    causal.causal = true;
    m.settings.assign(layers, causal);
    m.weights = [&](int l, int h) { return MatRef(maps[static_cast<std::size_t>(l * heads + h)]); };
    for (const RolloutOptions& options : {RolloutOptions{}, RolloutOptions{.heads = RolloutHeads::Max, .skipFirstKey = true}}) {
        Eigen::MatrixXd dense = rolloutLayer(m, 0, options).cast<double>();
        for (int l = 1; l < layers; ++l) dense = rolloutLayer(m, l, options).cast<double>() * dense;
        const Mat r = attentionRollout(m, layers - 1, options);
        EXPECT_LT((r.cast<double>() - dense).cwiseAbs().maxCoeff(), 1e-5);
        // Rows sum to 1; nothing flows from a later token.
        EXPECT_LT((r.rowwise().sum().cast<double>().array() - 1.0).abs().maxCoeff(), 1e-4);
        EXPECT_EQ(r.triangularView<Eigen::StrictlyUpper>().toDenseMatrix().cwiseAbs().maxCoeff(), 0.0f);
    }
}

// Every map rollout reads is given back through done, once per read (a mapped import frees it then).
TEST(Rollout, EveryMapReadIsFinished) {
    HandMaps h;
    std::vector<int> reads(4, 0), finished(4, 0);
    const auto weights = h.maps.weights;
    h.maps.weights = [&](int layer, int head) {
        ++reads[static_cast<std::size_t>(layer * 2 + head)];
        return weights(layer, head);
    };
    h.maps.done = [&](int layer, int head) { ++finished[static_cast<std::size_t>(layer * 2 + head)]; };
    for (const bool skip : {false, true}) attentionRollout(h.maps, 1, {.skipFirstKey = skip});
    EXPECT_EQ(reads, (std::vector<int>{2, 2, 2, 2}));
    EXPECT_EQ(finished, reads);
    allHeadStats(h.maps, {});
    EXPECT_EQ(reads, (std::vector<int>{3, 3, 3, 3}));
    EXPECT_EQ(finished, reads);
}

TEST(Rollout, RejectsWhatItCannotRollOut) {
    HandMaps h;
    EXPECT_THROW(attentionRollout(h.maps, 2, {}), InputError);
    EXPECT_THROW(attentionRollout(h.maps, -1, {}), InputError);
    h.maps.keys = 4;  // cross-attention: queries are not keys
    EXPECT_THROW(attentionRollout(h.maps, 0, {}), InputError);
    EXPECT_EQ(parseRolloutHeads("max", "--rollout-heads"), RolloutHeads::Max);
    EXPECT_THROW(parseRolloutHeads("median", "--rollout-heads"), InputError);
}

}  // namespace
}  // namespace attnviz::core
