// Every worked example the seeds print, to the digits they print.
#include "core/attention/permutation.hpp"
#include "core/scenario/model.hpp"
#include "core/scenario/presets.hpp"

#include <gtest/gtest.h>

#include <cmath>

using namespace attnviz::core;

namespace {

struct PresetRun {
    Model model;
    Forward forward;
};

PresetRun runPreset(const std::string& id) {
    PresetRun r;
    const Scenario s = loadPreset(id);
    r.model = buildModel(s);
    r.forward = runForward(r.model, buildSettings(s, r.model));
    return r;
}

// Rounds as numpy's .round(3) prints: the printed digits are exact to half a unit.
void expectPrinted(const Mat& actual, const std::vector<std::vector<double>>& printed, int digits) {
    ASSERT_EQ(actual.rows(), static_cast<Eigen::Index>(printed.size()));
    const double half = 0.5 * std::pow(10.0, -digits) + 1e-9;
    for (Eigen::Index r = 0; r < actual.rows(); ++r) {
        ASSERT_EQ(actual.cols(), static_cast<Eigen::Index>(printed[r].size()));
        for (Eigen::Index c = 0; c < actual.cols(); ++c) EXPECT_NEAR(actual(r, c), printed[r][c], half) << "at (" << r << ", " << c << ")";
    }
}

}  // namespace

// Seed 000 §39.2.1: X = [[1,0],[0,1],[1,1]], identity W_Q and W_K, W_V = [[1,0],[0,2]].
TEST(Seed000, ThreeTokenExample) {
    const PresetRun r = runPreset("seed000-three-tokens");
    const HeadTensors& h = r.forward.heads[0];
    expectPrinted(h.v, {{1, 0}, {0, 2}, {1, 2}}, 3);
    expectPrinted(h.scores / std::sqrt(2.0f), {{0.707, 0, 0.707}, {0, 0.707, 0.707}, {0.707, 0.707, 1.414}}, 3);
    expectPrinted(h.weights, {{0.401, 0.198, 0.401}, {0.198, 0.401, 0.401}, {0.248, 0.248, 0.503}}, 3);
    expectPrinted(h.output, {{0.802, 1.198}, {0.599, 1.604}, {0.752, 1.503}}, 3);
    expectPrinted(r.forward.output, {{0.802, 1.198}, {0.599, 1.604}, {0.752, 1.503}}, 3);
    for (Eigen::Index i = 0; i < 3; ++i) EXPECT_NEAR(h.weights.row(i).sum(), 1.0f, 1e-6f);
}

// Seed 000 §39.2: Q = K = I4, V = arange(16).reshape(4, 4).
TEST(Seed000, IdentityQueriesAndKeys) {
    const PresetRun r = runPreset("seed000-identity4");
    const HeadTensors& h = r.forward.heads[0];
    expectPrinted(h.weights,
                  {{0.355, 0.215, 0.215, 0.215}, {0.215, 0.355, 0.215, 0.215}, {0.215, 0.215, 0.355, 0.215}, {0.215, 0.215, 0.215, 0.355}},
                  3);
    expectPrinted(h.output,
                  {{5.163, 6.163, 7.163, 8.163}, {5.721, 6.721, 7.721, 8.721}, {6.279, 7.279, 8.279, 9.279}, {6.837, 7.837, 8.837, 9.837}},
                  3);
}

// Seed 000 §39.5.1: the three anagrams give the same multiset of output rows, in different orders.
TEST(Seed000, AnagramsShareOutputRows) {
    const PresetRun s1 = runPreset("seed000-anagram-original");
    const PresetRun s2 = runPreset("seed000-anagram-swapped");
    const PresetRun s3 = runPreset("seed000-anagram-gibberish");
    EXPECT_TRUE(sameRowMultiset(s1.forward.output, s2.forward.output, 1e-5f));
    EXPECT_TRUE(sameRowMultiset(s1.forward.output, s3.forward.output, 1e-5f));
    // "the" at position 0 in s1 and s2: the same row; "mat" at position 0 in s3: a different one.
    EXPECT_LT(maxAbsDiff(s1.forward.output.row(0), s2.forward.output.row(0)), 1e-6f);
    EXPECT_GT(maxAbsDiff(s1.forward.output.row(0), s3.forward.output.row(0)), 1e-2f);
    // The outputs per position differ: the rows come out in another order.
    EXPECT_GT(maxAbsDiff(s1.forward.output, s3.forward.output), 1e-2f);
    EXPECT_EQ(s1.model.heads, 1);
    EXPECT_EQ(s1.model.dModel, 16);
    EXPECT_EQ(s1.model.dk, 8);
}

// Seed 000 §39.5: 22 character tokens, d_model 32, d_k 16, attention [22, 22], output [22, 16].
TEST(Seed000, CharacterShapes) {
    const PresetRun r = runPreset("seed000-characters");
    EXPECT_EQ(r.model.tq(), 22);
    EXPECT_EQ(r.forward.heads[0].weights.rows(), 22);
    EXPECT_EQ(r.forward.heads[0].weights.cols(), 22);
    EXPECT_EQ(r.forward.heads[0].output.cols(), 16);
    EXPECT_EQ(r.model.queryTokens[3], " ");
}

// Seed 000 §39.7: multi-head output [22, 32], per-head attention [4, 22, 22].
TEST(Seed000, FourHeadShapes) {
    const PresetRun r = runPreset("seed000-four-heads");
    EXPECT_EQ(r.forward.heads.size(), 4u);
    EXPECT_EQ(r.forward.output.rows(), 22);
    EXPECT_EQ(r.forward.output.cols(), 32);
    EXPECT_EQ(r.model.dk, 8);
}

// Seed 002 "The cat sat": its Q Kᵀ and scaled scores are right to the printed digits; its printed
// softmax rows (0.31 0.34 0.28 = 0.93 …) are not distributions. The true values come from numpy:
//   softmax(Q Kᵀ / √2) = [[0.333 0.357 0.310] [0.302 0.417 0.281] [0.362 0.305 0.333]]
//   output             = [[0.443 0.664] [0.477 0.649] [0.414 0.678]]
TEST(Seed002, TheCatSatTrueSoftmax) {
    const PresetRun r = runPreset("seed002-the-cat-sat");
    const HeadTensors& h = r.forward.heads[0];
    expectPrinted(h.scores, {{0.50, 0.60, 0.40}, {0.32, 0.78, 0.22}, {0.78, 0.54, 0.66}}, 2);
    expectPrinted(h.scores / std::sqrt(2.0f), {{0.35, 0.42, 0.28}, {0.23, 0.55, 0.16}, {0.55, 0.38, 0.47}}, 2);
    expectPrinted(h.weights, {{0.333, 0.357, 0.310}, {0.302, 0.417, 0.281}, {0.362, 0.305, 0.333}}, 3);
    expectPrinted(h.output, {{0.443, 0.664}, {0.477, 0.649}, {0.414, 0.678}}, 3);
    // The textbook's printed rows do not sum to 1; ours do.
    const double printed[3][3] = {{0.31, 0.34, 0.28}, {0.27, 0.42, 0.24}, {0.36, 0.30, 0.33}};
    for (int i = 0; i < 3; ++i) {
        EXPECT_GT(std::abs(printed[i][0] + printed[i][1] + printed[i][2] - 1.0), 0.005);
        EXPECT_NEAR(h.weights.row(i).sum(), 1.0f, 1e-6f);
    }
}

// Seed 003's exam: Q 2×3, K 3×3, V 3×2.
TEST(Seed003, ExamCrossAttention) {
    const PresetRun r = runPreset("seed003-exam");
    const HeadTensors& h = r.forward.heads[0];
    EXPECT_EQ(r.model.tq(), 2);
    EXPECT_EQ(r.model.tk(), 3);
    expectPrinted(h.weights, {{0.264, 0.264, 0.471}, {0.39, 0.39, 0.219}}, 3);
    expectPrinted(h.output, {{1.058, 1.0}, {1.562, 1.0}}, 3);
}

// Seed 003 §3: d_model 512 split over 8 heads gives d_k = 64 and a scale factor of 8.
TEST(Seed003, BaseTransformerHeadWidth) {
    Scenario s;
    s.dModel = 512;
    s.heads = 8;
    const Model m = buildModel(s);
    EXPECT_EQ(m.dk, 64);
    EXPECT_EQ(m.dv, 64);
    EXPECT_FLOAT_EQ(logitScale(m.dk, Settings{}), 1.0f / 8.0f);
}

// Seed 003 §4: dividing by 1 instead of √d_k saturates the softmax.
TEST(Seed003, UnscaledSaturates) {
    Scenario s = loadPreset("seed003-saturation");
    Model m = buildModel(s);
    const Mat unscaled = runForward(m, buildSettings(s, m)).heads[0].weights;
    s.scaled = true;
    const Mat scaled = runForward(m, buildSettings(s, m)).heads[0].weights;
    const RowStats a = rowStats(unscaled), b = rowStats(scaled);
    for (Eigen::Index i = 0; i < unscaled.rows(); ++i) {
        EXPECT_GT(a.max(i), 0.99f) << "row " << i;
        EXPECT_LT(b.max(i), a.max(i)) << "row " << i;
        EXPECT_GT(b.entropy(i), a.entropy(i)) << "row " << i;
    }
}

// Seed 004: Q Kᵀ at T = 4 has 16 entries; α₂,₃ under the causal mask is 0; ‖Y′ − P·Y‖ = 0
// with positional encoding off, and clearly not with it on.
TEST(Seed004, QuickChecks) {
    Scenario s = loadPreset("seed004-swap");
    Model base = buildModel(s, false), swapped = buildModel(s);
    EXPECT_EQ(runForward(base, {}).heads[0].scores.size(), 16);

    s.causal = true;
    const Forward causal = runForward(base, buildSettings(s, base));
    EXPECT_EQ(causal.heads[0].weights(1, 2), 0.0f);  // query 2 attends to key 3 (1-based)

    s.causal = false;
    const Forward f0 = runForward(base, {}), f1 = runForward(swapped, {});
    const EquivarianceReport off = checkEquivariance(f0, f1, swapped.perm);
    EXPECT_LT(off.outputDiff, 1e-6f);
    EXPECT_TRUE(off.holds());

    s.positional = Positional::Sinusoidal;
    base = buildModel(s, false);
    swapped = buildModel(s);
    const EquivarianceReport on = checkEquivariance(runForward(base, {}), runForward(swapped, {}), swapped.perm);
    EXPECT_GT(on.outputDiff, 1e-2f);
    EXPECT_FALSE(on.holds());
}

// Seed 004's causal demo: exact zeros above the diagonal, rows still sum to 1.
TEST(Seed004, CausalMaskRows) {
    const PresetRun r = runPreset("seed004-causal");
    const Mat& a = r.forward.heads[0].weights;
    for (Eigen::Index i = 0; i < a.rows(); ++i) {
        for (Eigen::Index j = i + 1; j < a.cols(); ++j) EXPECT_EQ(a(i, j), 0.0f);
        EXPECT_NEAR(a.row(i).sum(), 1.0f, 1e-6f);
    }
    EXPECT_EQ(a(0, 0), 1.0f);  // the first token can only read itself
}

// Every shipped preset builds, computes finite numbers and is described.
TEST(Seed000, EveryPresetBuilds) {
    for (const std::string& id : presetIds()) {
        SCOPED_TRACE(id);
        const PresetRun r = runPreset(id);
        for (const HeadTensors& h : r.forward.heads) {
            EXPECT_TRUE(h.weights.allFinite());
            EXPECT_TRUE(h.output.allFinite());
        }
        EXPECT_FALSE(loadPreset(id).name.empty());
        EXPECT_FALSE(loadPreset(id).description.empty());
    }
}
