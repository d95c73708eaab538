// Attention as modern models run it: grouped-query heads, sliding windows, RoPE and ALiBi,
// against hand derivations (the numpy oracle checks random scenarios of each).
#include "core/base/error.hpp"
#include "core/scenario/model.hpp"
#include "core/scenario/scenario.hpp"
#include "core/scenario/shift.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>

using namespace attnviz::core;

namespace {

Scenario scenarioOf(const std::string& text) { return parseScenario(text, "s.json"); }

Forward forwardOf(const Scenario& s) {
    const Model m = buildModel(s);
    return runForward(m, buildSettings(s, m));
}

std::string errorOf(const std::string& text) {
    try {
        const Scenario s = scenarioOf(text);
        forwardOf(s);
    } catch (const InputError& e) {
        const std::string m = e.message();  // parse errors name the file first; build errors do not
        return m.rfind("s.json: ", 0) == 0 ? m.substr(8) : m;
    }
    return "";
}

}  // namespace

TEST(Variants, AlibiSlopesFollowThePaper) {
    // A power of two: 2^(-8h/H), h = 1 … H.
    const std::vector<float> eight = alibiSlopes(8);
    ASSERT_EQ(eight.size(), 8u);
    for (int h = 0; h < 8; ++h) EXPECT_EQ(eight[static_cast<std::size_t>(h)], std::exp2(-(h + 1.0f)));
    // 6 heads: the 4 of P = 4 (2^-2, 2^-4, 2^-6, 2^-8), then slopes 1 and 3 of 2P = 8 (2^-1, 2^-3).
    EXPECT_EQ(alibiSlopes(6), (std::vector<float>{0.25f, 0.0625f, 0.015625f, 0.00390625f, 0.5f, 0.125f}));
    EXPECT_EQ(alibiSlopes(1), (std::vector<float>{std::exp2(-8.0f)}));
}

TEST(Variants, AlibiAddsTheDistancePenaltyToTheScaledLogits) {
    // W_Q = 0: every q·k is 0, so the logits are the bias alone: -m |i - j| with m = 2^-8 for one
    // head; the scores hold it over c = 1/√d_k, i.e. times √2.
    for (bool scaled : {true, false}) {
        const Scenario s = scenarioOf(R"({"X": [[1, 0], [0, 1], [1, 1]], "W_Q": [[0, 0], [0, 0]], "W_K": "identity",
            "W_V": "identity", "positional": "alibi", "causal": true, "temperature": 0.5, "scaled": )" +
                                      std::string(scaled ? "true" : "false") + "}");
        const Forward f = forwardOf(s);
        const double m = std::exp2(-8.0), c = scaled ? 1.0 / std::sqrt(2.0) : 1.0;
        EXPECT_NEAR(f.heads[0].scores(2, 0), -2.0 * m / c, 1e-7);
        EXPECT_NEAR(f.heads[0].scores(0, 2), -2.0 * m / c, 1e-7);
        // Row 2 under the causal mask: softmax of [-2m, -m, 0] / τ.
        const double e0 = std::exp(-2.0 * m / 0.5), e1 = std::exp(-m / 0.5), e2 = 1.0, sum = e0 + e1 + e2;
        EXPECT_NEAR(f.heads[0].weights(2, 0), e0 / sum, 1e-6);
        EXPECT_NEAR(f.heads[0].weights(2, 1), e1 / sum, 1e-6);
        EXPECT_NEAR(f.heads[0].weights(2, 2), e2 / sum, 1e-6);
    }
}

// A scenario's formulas: RoPE when it has it, no bias, and Q, K and V given whole as given.
TEST(Variants, TheFormulasFollowWhatTheScenarioHas) {
    const Scenario rope =
        scenarioOf(R"({"X": [[1, 0], [1, 0], [0, 2]], "W_Q": "identity", "W_K": "identity", "W_V": "identity", "positional": "rope"})");
    const Model m = buildModel(rope);
    EXPECT_EQ(projectionFormula(m, 'Q'), "Q = RoPE(X W_Q)");
    EXPECT_EQ(projectionFormula(m, 'V'), "V = X W_V");
    const Model plain = buildModel(scenarioOf(R"({"X": [[1, 0], [0, 1]], "W_Q": "identity", "W_K": "identity", "W_V": "identity"})"));
    EXPECT_EQ(projectionFormula(plain, 'K'), "K = X W_K");
    const Model given = buildModel(scenarioOf(R"({"Q": [[1, 0]], "K": [[1, 0]], "V": [[1, 0]]})"));
    EXPECT_EQ(projectionFormula(given, 'Q'), "Q, as the scenario gives it");
}

TEST(Variants, RopeTurnsEachPairByItsPosition) {
    // d_k = 2, identity projections: pair 0 turns by t · base^0 = t radians at position t.
    const Scenario s =
        scenarioOf(R"({"X": [[1, 0], [1, 0], [0, 2]], "W_Q": "identity", "W_K": "identity", "W_V": "identity", "positional": "rope"})");
    const Forward f = forwardOf(s);
    const HeadTensors& h = f.heads[0];
    EXPECT_NEAR(h.q(1, 0), std::cos(1.0), 1e-6);
    EXPECT_NEAR(h.q(1, 1), std::sin(1.0), 1e-6);
    // (0, 2) at position 2: (a cos - b sin, b cos + a sin) = (-2 sin 2, 2 cos 2).
    EXPECT_NEAR(h.k(2, 0), -2.0 * std::sin(2.0), 1e-6);
    EXPECT_NEAR(h.k(2, 1), 2.0 * std::cos(2.0), 1e-6);
    // A score depends on the distance only: q_1 · k_0 = cos(1 - 0).
    EXPECT_NEAR(h.scores(1, 0), std::cos(1.0), 1e-6);
    EXPECT_NEAR(h.scores(0, 1), std::cos(-1.0), 1e-6);
    // The rotate-half layout: with d_k = 4, dimension 0 pairs with 2 and 1 with 3, at θ = 1 and base^(-1/2).
    const Scenario wide = scenarioOf(R"({"X": [[0, 0, 0, 0], [1, 0, 0, 0], [0, 1, 0, 0]], "W_Q": "identity", "W_K": "identity",
        "W_V": "identity", "positional": "rope", "rope_base": 100})");
    const Forward fw = forwardOf(wide);
    const HeadTensors& w = fw.heads[0];
    EXPECT_NEAR(w.q(1, 0), std::cos(1.0), 1e-6);
    EXPECT_NEAR(w.q(1, 2), std::sin(1.0), 1e-6);
    EXPECT_NEAR(w.q(2, 1), std::cos(2.0 / 10.0), 1e-6);
    EXPECT_NEAR(w.q(2, 3), std::sin(2.0 / 10.0), 1e-6);
    EXPECT_EQ(w.q(2, 0), 0.0f);
}

TEST(Variants, GroupedQueryHeadsShareTheirKeysAndValues) {
    const Scenario s = scenarioOf(R"({"sentence": "the cat sat on the mat", "d_model": 8, "heads": 4, "kv_heads": 2, "seed": 3})");
    const Model m = buildModel(s);
    EXPECT_EQ(m.wq.cols(), 8);
    EXPECT_EQ(m.wk.cols(), 4);  // kv_heads · d_k
    EXPECT_EQ(m.wv.cols(), 4);
    EXPECT_EQ(m.kvHeadOf(0), 0);
    EXPECT_EQ(m.kvHeadOf(1), 0);
    EXPECT_EQ(m.kvHeadOf(2), 1);
    EXPECT_EQ(m.kvHeadOf(3), 1);
    const Forward f = runForward(m, buildSettings(s, m));
    EXPECT_EQ(f.heads[0].k, f.heads[1].k);
    EXPECT_EQ(f.heads[2].v, f.heads[3].v);
    EXPECT_NE(f.heads[1].k, f.heads[2].k);
    EXPECT_NE(f.heads[0].q, f.heads[1].q);
    // Multi-query: one key/value head for all.
    const Model mq = buildModel(scenarioOf(R"({"d_model": 8, "heads": 4, "kv_heads": 1})"));
    for (int h = 0; h < 4; ++h) EXPECT_EQ(mq.kvHeadOf(h), 0);
    EXPECT_EQ(mq.wk.cols(), 2);
}

TEST(Variants, ASlidingWindowMasksTheFarKeys) {
    Settings causal;
    causal.causal = true;
    causal.window = 2;
    // i - 2 < j <= i
    EXPECT_TRUE(isBlocked(causal, 3, 1));
    EXPECT_FALSE(isBlocked(causal, 3, 2));
    EXPECT_FALSE(isBlocked(causal, 3, 3));
    EXPECT_TRUE(isBlocked(causal, 3, 4));
    Settings both;
    both.window = 2;
    // |i - j| < 2
    EXPECT_TRUE(isBlocked(both, 3, 1));
    EXPECT_FALSE(isBlocked(both, 3, 4));
    EXPECT_TRUE(isBlocked(both, 3, 5));
    const Forward f = forwardOf(scenarioOf(R"({"d_model": 4, "length": 9, "window": 3, "causal": true})"));
    const Mat& a = f.heads[0].weights;
    for (Eigen::Index i = 0; i < a.rows(); ++i) {
        EXPECT_NEAR(a.row(i).sum(), 1.0f, 1e-6f);
        for (Eigen::Index j = 0; j < a.cols(); ++j)
            if (j <= i - 3 || j > i) EXPECT_EQ(a(i, j), 0.0f) << i << "," << j;
            else EXPECT_GT(a(i, j), 0.0f) << i << "," << j;
    }
}

TEST(Variants, RelativePositionsIgnoreAShiftAndSinusoidalOnesDoNot) {
    const std::string base = R"({"sentence": "the cat sat on the mat because it was warm", "d_model": 16, "heads": 2, "seed": 5, )";
    for (const char* kind : {"rope", "alibi", "none"}) {
        const ShiftReport r = checkShift(scenarioOf(base + R"("positional": ")" + kind + "\"}"), 7);
        EXPECT_TRUE(r.unchanged()) << kind << ": " << r.scoreDiff;
        EXPECT_LT(r.scoreDiff, 1e-5f) << kind;
        EXPECT_EQ(shiftVerdict(r).rfind("scores unchanged after a shift of 7: max |ΔS| = ", 0), 0u) << shiftVerdict(r);
    }
    const ShiftReport sinusoidal = checkShift(scenarioOf(base + R"("positional": "sinusoidal"})"), 7);
    EXPECT_FALSE(sinusoidal.unchanged());
    EXPECT_GT(sinusoidal.scoreDiff, 0.1f);
    EXPECT_EQ(shiftVerdict(sinusoidal).rfind("scores change after a shift of 7", 0), 0u);
    // Wide heads far along a document: still float rounding.
    const ShiftReport wide = checkShift(
        scenarioOf(R"({"sentence": "a b c d e f g h i j k l m n o p q r s t", "d_model": 256, "heads": 4, "positional": "rope"})"), 3000);
    EXPECT_TRUE(wide.unchanged()) << wide.scoreDiff << " of " << wide.scoreScale;
    // No shift: the very same numbers.
    EXPECT_EQ(checkShift(scenarioOf(base + R"("positional": "sinusoidal"})"), 0).scoreDiff, 0.0f);
}

TEST(Variants, BadValuesNameTheirField) {
    EXPECT_EQ(errorOf(R"({"heads": 4, "kv_heads": 3})"),
              "kv_heads: 3 does not divide 4 query heads (each key/value head serves heads / kv_heads of them)");
    EXPECT_EQ(errorOf(R"({"heads": 2, "kv_heads": 4})").rfind("kv_heads: 4 does not divide 2 query heads", 0), 0u);
    EXPECT_EQ(errorOf(R"({"window": 0})"), "window: must be at least 1, got 0");
    EXPECT_EQ(errorOf(R"({"window": -3})"), "window: must be at least 1, got -3");
    EXPECT_EQ(errorOf(R"({"d_model": 6, "heads": 2, "positional": "rope"})"),
              "d_k: 3 is odd; RoPE turns pairs of dimensions and needs an even d_k");
    EXPECT_EQ(errorOf(R"({"positional": "rope", "rope_base": 1})"), "rope_base: must be greater than 1, got 1");
    EXPECT_EQ(errorOf(R"({"rope_base": 500})"), "rope_base: only with \"positional\": \"rope\"");
    EXPECT_EQ(errorOf(R"({"positional": "xpos"})"), "positional: expected \"none\", \"sinusoidal\", \"rope\" or \"alibi\", got \"xpos\"");
    EXPECT_EQ(errorOf(R"({"X": [[1, 0]], "heads": 2, "d_k": 1, "kv_heads": 1, "W_K": [[1, 0], [0, 1]]})"),
              "W_K: expected 2 x 1 (d_model x kv_heads*d_k, 1 kv head), got 2 x 2");
    EXPECT_EQ(errorOf(R"({"Q": [[1]], "K": [[1]], "V": [[1]], "kv_heads": 2})"), "kv_heads: explicit Q, K, V describe one head");
}

TEST(Variants, TheKeysRoundTrip) {
    const Scenario s =
        scenarioOf(R"({"heads": 4, "d_model": 8, "kv_heads": 2, "window": 5, "positional": "rope", "rope_base": 500000, "causal": true})");
    const Scenario back = scenarioFromJson(scenarioToJson(s));
    EXPECT_EQ(back.kvHeads, 2);
    EXPECT_EQ(back.window, 5);
    EXPECT_EQ(back.positional, Positional::Rope);
    EXPECT_EQ(back.ropeBase, 500000.0f);
}
