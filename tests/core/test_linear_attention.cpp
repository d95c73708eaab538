// Linear attention in its three forms, the fast-weight matrix and the Hopfield step, against
// hand-written double-precision loops (independent of the Eigen products the engine uses).
#include "core/base/prng.hpp"
#include "core/labs/linear_attention.hpp"
#include "core/scenario/model.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace attnviz::core {
namespace {

Mat normalMatrix(Eigen::Index rows, Eigen::Index cols, std::uint64_t seed) {
    Prng prng(seed);
    Mat m(rows, cols);
    for (Eigen::Index i = 0; i < rows; ++i)
        for (Eigen::Index j = 0; j < cols; ++j) m(i, j) = static_cast<float>(prng.normal());
    return m;
}

double phi(double x) { return x > 0 ? x + 1 : std::exp(x); }

TEST(LinearAttention, FeatureMapIsEluPlusOne) {
    Mat x(1, 4);
    x << 0.0f, 1.5f, -1.0f, -30.0f;
    const Mat f = featureMap(x);
    EXPECT_FLOAT_EQ(f(0, 0), 1.0f);
    EXPECT_FLOAT_EQ(f(0, 1), 2.5f);
    EXPECT_FLOAT_EQ(f(0, 2), std::exp(-1.0f));
    EXPECT_GT(f(0, 3), 0.0f);  // positive everywhere: the normalisers never vanish
}

// Exercise 39.6's two forms agree: the recurrent fast-weight programmer and the causal
// parallel map, to 1e-5, over many seeds; and both equal a double-precision recurrence.
TEST(LinearAttention, RecurrentAndParallelFormsAgree) {
    for (std::uint64_t seed = 1; seed <= 20; ++seed) {
        const Eigen::Index T = 8 + static_cast<Eigen::Index>(seed) * 5, dk = 16, dv = 8;
        const Mat q = normalMatrix(T, dk, seed), k = normalMatrix(T, dk, seed + 100), v = normalMatrix(T, dv, seed + 200);
        const Mat recurrent = linearAttentionRecurrent(q, k, v);
        const LinearAttention parallel = linearAttention(q, k, v, true);
        EXPECT_LT((recurrent - parallel.output).cwiseAbs().maxCoeff(), 1e-5f) << "seed " << seed;
        // S and z in double, one token at a time
        std::vector<double> s(static_cast<std::size_t>(dk * dv), 0.0), z(static_cast<std::size_t>(dk), 0.0);
        double worst = 0;
        for (Eigen::Index t = 0; t < T; ++t) {
            for (Eigen::Index a = 0; a < dk; ++a) {
                z[static_cast<std::size_t>(a)] += phi(k(t, a));
                for (Eigen::Index b = 0; b < dv; ++b) s[static_cast<std::size_t>(a * dv + b)] += phi(k(t, a)) * v(t, b);
            }
            double norm = 0;
            for (Eigen::Index a = 0; a < dk; ++a) norm += phi(q(t, a)) * z[static_cast<std::size_t>(a)];
            for (Eigen::Index b = 0; b < dv; ++b) {
                double y = 0;
                for (Eigen::Index a = 0; a < dk; ++a) y += phi(q(t, a)) * s[static_cast<std::size_t>(a * dv + b)];
                worst = std::max(worst, std::abs(y / norm - recurrent(t, b)));
            }
        }
        EXPECT_LT(worst, 1e-5) << "seed " << seed;
    }
}

TEST(LinearAttention, FactoredFormEqualsTheMapWithEveryKey) {
    const Mat q = normalMatrix(40, 12, 7), k = normalMatrix(40, 12, 8), v = normalMatrix(40, 5, 9);
    const LinearAttention full = linearAttention(q, k, v, false);
    EXPECT_LT((linearAttentionFactored(q, k, v) - full.output).cwiseAbs().maxCoeff(), 1e-5f);
    // The last query reads every key in the causal form too: its recurrent output is the same.
    EXPECT_LT((linearAttentionRecurrent(q, k, v).bottomRows(1) - full.output.bottomRows(1)).cwiseAbs().maxCoeff(), 1e-5f);
}

TEST(LinearAttention, MapRowsAreDistributionsAndCausalIsLowerTriangular) {
    const Mat q = normalMatrix(9, 4, 3), k = normalMatrix(9, 4, 4), v = normalMatrix(9, 2, 5);
    const LinearAttention causal = linearAttention(q, k, v, true);
    for (Eigen::Index i = 0; i < 9; ++i) {
        EXPECT_NEAR(causal.weights.row(i).sum(), 1.0f, 1e-6f);
        for (Eigen::Index j = 0; j < 9; ++j) {
            if (j > i) EXPECT_EQ(causal.weights(i, j), 0.0f);
            else EXPECT_GT(causal.weights(i, j), 0.0f);  // φ > 0: every readable key gets some weight
        }
    }
    // A[i, j] = φ(q_i)·φ(k_j) / Σ_{j' <= i} φ(q_i)·φ(k_j'), by hand for one cell
    double num = 0, den = 0;
    for (Eigen::Index j = 0; j <= 4; ++j) {
        double dot = 0;
        for (Eigen::Index a = 0; a < 4; ++a) dot += phi(q(4, a)) * phi(k(j, a));
        den += dot;
        if (j == 2) num = dot;
    }
    EXPECT_NEAR(causal.weights(4, 2), num / den, 1e-6);
}

TEST(LinearAttention, FastWeightsAreTheSumOfOuterProducts) {
    const Mat k = normalMatrix(6, 3, 11), v = normalMatrix(6, 2, 12);
    EXPECT_EQ(fastWeights(k, v, 0).cwiseAbs().maxCoeff(), 0.0f);
    const Mat s = fastWeights(k, v, 4);
    ASSERT_EQ(s.rows(), 3);
    ASSERT_EQ(s.cols(), 2);
    for (Eigen::Index a = 0; a < 3; ++a)
        for (Eigen::Index b = 0; b < 2; ++b) {
            double expected = 0;
            for (Eigen::Index t = 0; t < 4; ++t) expected += phi(k(t, a)) * v(t, b);
            EXPECT_NEAR(s(a, b), expected, 1e-5);
        }
    EXPECT_EQ(fastWeights(k, v, 99), fastWeights(k, v, 6));  // clamped to the sequence
}

// §39.4.3: one Hopfield step with β = 1/√d_k is one row of softmax attention over the stored
// patterns (K = V = X).
TEST(Hopfield, OneStepIsOneAttentionRow) {
    const Mat x = normalMatrix(7, 16, 21), probes = normalMatrix(3, 16, 22);
    Scenario s;
    s.q = probes;
    s.k = x;
    s.v = x;
    const Model model = buildModel(s);
    const Forward f = runForward(model, buildSettings(s, model));
    for (Eigen::Index i = 0; i < 3; ++i) {
        const HopfieldStep step = hopfieldStep(x, probes.row(i).transpose(), 1.0f / 4.0f);
        EXPECT_LT((step.weights.transpose() - f.heads[0].weights.row(i)).cwiseAbs().maxCoeff(), 1e-6f);
        EXPECT_LT((step.retrieved.transpose() - f.heads[0].output.row(i)).cwiseAbs().maxCoeff(), 1e-5f);
        // and against a double-precision softmax
        std::vector<double> e(7);
        double sum = 0, max = -1e300;
        for (Eigen::Index n = 0; n < 7; ++n) max = std::max(max, static_cast<double>(x.row(n).dot(probes.row(i))) / 4.0);
        for (Eigen::Index n = 0; n < 7; ++n)
            sum += e[static_cast<std::size_t>(n)] = std::exp(static_cast<double>(x.row(n).dot(probes.row(i))) / 4.0 - max);
        for (Eigen::Index n = 0; n < 7; ++n) EXPECT_NEAR(step.weights(n), e[static_cast<std::size_t>(n)] / sum, 1e-6);
    }
}

TEST(Hopfield, ANoisyProbeRetrievesItsStoredPattern) {
    // Ten ±1 patterns of 32 dimensions; the probe is pattern 3 with 6 signs flipped.
    Mat x = normalMatrix(10, 32, 31).unaryExpr([](float a) { return a >= 0.0f ? 1.0f : -1.0f; });
    Vec probe = x.row(3).transpose();
    for (int d : {0, 5, 9, 14, 22, 30}) probe(d) = -probe(d);
    const HopfieldStep step = hopfieldStep(x, probe, 1.0f);
    Eigen::Index best = 0;
    step.weights.maxCoeff(&best);
    EXPECT_EQ(best, 3);
    EXPECT_GT(step.weights(3), 0.99f);
    const float cosine = step.retrieved.dot(x.row(3).transpose()) / (step.retrieved.norm() * x.row(3).norm());
    EXPECT_GT(cosine, 0.999f);
}

}  // namespace
}  // namespace attnviz::core
