// The flash-attention walk against the materialised forward pass (runForward's weights and A·V)
// over masks, positions, lengths and tile sizes, and against a two-key example derived by hand.
#include "core/base/error.hpp"
#include "core/labs/flash_walk.hpp"
#include "core/scenario/model.hpp"
#include "core/scenario/scenario.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace attnviz::core {
namespace {

struct Case {
    std::string label;
    std::string text;
    bool causalOnly = false;  // the mask is the causal triangle alone
};

// The scenarios every length and tile size is walked over; `length` tokens (>= 1).
std::vector<Case> cases(int length) {
    const std::string base = R"({"d_model": 8, "heads": 2, "seed": 3, "length": )" + std::to_string(length);
    // A custom mask: a scattering of blocked cells, and row 1 (when there is one) blocked whole.
    std::string mask = "[";
    for (int i = 0; i < length; ++i) {
        mask += i ? ", [" : "[";
        for (int j = 0; j < length; ++j) mask += std::string(j ? ", " : "") + ((i == 1 || (i * 7 + j * 3) % 5 == 0) ? "1" : "0");
        mask += "]";
    }
    mask += "]";
    const std::string pad = std::to_string(length / 2);
    return {
        {"plain", base + "}"},
        {"causal", base + R"(, "causal": true})", true},
        {"causal window 3", base + R"(, "causal": true, "window": 3})"},
        {"window 3", base + R"(, "window": 3})"},
        {"padding", base + R"(, "padding": [)" + pad + "]}"},
        {"alibi, 4 heads", R"({"d_model": 8, "heads": 4, "seed": 5, "positional": "alibi", "length": )" + std::to_string(length) + "}"},
        {"alibi, causal, unscaled",
         R"({"d_model": 8, "heads": 4, "seed": 6, "positional": "alibi", "causal": true, "scaled": false, "length": )" +
             std::to_string(length) + "}",
         true},
        {"rope", base + R"(, "positional": "rope"})"},
        {"sharp, causal, padded", base + R"(, "temperature": 0.3, "scaled": false, "causal": true, "padding": [)" + pad + "]}"},
        {"custom mask", base + R"(, "mask": )" + mask + "}"},
    };
}

// |got - want| <= 1e-5 · max(1, |want|) everywhere; the number of cells that are not.
int farCells(const Mat& got, const Mat& want) {
    if (got.rows() != want.rows() || got.cols() != want.cols()) return -1;
    int far = 0;
    for (Eigen::Index i = 0; i < got.rows(); ++i)
        for (Eigen::Index j = 0; j < got.cols(); ++j)
            if (!(std::abs(got(i, j) - want(i, j)) <= 1e-5f * std::max(1.0f, std::abs(want(i, j))))) ++far;
    return far;
}

bool readsAnyKey(const Settings& settings, Eigen::Index i, Eigen::Index tk) {
    for (Eigen::Index j = 0; j < tk; ++j)
        if (!isBlocked(settings, i, j)) return true;
    return false;
}

// Everything a walk of `head` must hold, whatever the scenario and the tiles.
void checkWalk(const FlashWalk& walk, const HeadTensors& head, const Settings& settings, float scale, const FlashTiles& tiles,
               bool causalOnly) {
    const Eigen::Index tq = head.q.rows(), tk = head.k.rows();
    // The same A·V and A as the materialised softmax, to float rounding.
    EXPECT_EQ(farCells(walk.output, head.output), 0);
    EXPECT_EQ(farCells(walk.weights, head.weights), 0);
    EXPECT_TRUE(walk.output.allFinite() && walk.weights.allFinite());
    for (Eigen::Index i = 0; i < tq; ++i) {
        if (readsAnyKey(settings, i, tk)) EXPECT_NEAR(walk.weights.row(i).sum(), 1.0f, 1e-5f) << "row " << i;
        else EXPECT_EQ(walk.weights.row(i).cwiseAbs().sum(), 0.0f) << "row " << i;
    }
    // ⌈T_q/B_r⌉ · ⌈T_k/B_c⌉ steps in row-major tile order.
    const Eigen::Index br = std::min<Eigen::Index>(tiles.queries, tq), bc = std::min<Eigen::Index>(tiles.keys, tk);
    const Eigen::Index qTiles = (tq + br - 1) / br, kTiles = (tk + bc - 1) / bc;
    ASSERT_EQ(static_cast<Eigen::Index>(walk.steps.size()), qTiles * kTiles);
    for (Eigen::Index a = 0; a < qTiles; ++a)
        for (Eigen::Index b = 0; b < kTiles; ++b) {
            const FlashStep& step = walk.steps[static_cast<std::size_t>(a * kTiles + b)];
            ASSERT_EQ(step.q0, a * br);
            ASSERT_EQ(step.k0, b * bc);
            ASSERT_EQ(step.rows, std::min(br, tq - step.q0));
            ASSERT_EQ(step.cols, std::min(bc, tk - step.k0));
            ASSERT_EQ(step.rowMax.size(), step.rows);
            // Skipped exactly when every cell is blocked; under the causal mask alone, when the
            // tile lies wholly above the diagonal (its first key after its last query).
            bool allBlocked = true;
            for (Eigen::Index i = step.q0; i < step.q0 + step.rows; ++i)
                for (Eigen::Index j = step.k0; j < step.k0 + step.cols; ++j) allBlocked = allBlocked && isBlocked(settings, i, j);
            EXPECT_EQ(step.skipped, allBlocked) << "tile " << a << ", " << b;
            if (causalOnly) {
                EXPECT_EQ(step.skipped, step.k0 > step.q0 + step.rows - 1) << "tile " << a << ", " << b;
            }
            for (Eigen::Index r = 0; r < step.rows; ++r) {
                // The rescale is exp(m_old - m_new): 0 when the row reads its first key (m_old =
                // -inf, nothing to keep), 1 while it has read none.
                constexpr float kMinusInf = -std::numeric_limits<float>::infinity();
                const float mOld = b == 0 ? kMinusInf : walk.steps[static_cast<std::size_t>(a * kTiles + b - 1)].rowMax(r);
                const float rescale = mOld > kMinusInf ? std::exp(mOld - step.rowMax(r)) : step.rowMax(r) > kMinusInf ? 0.0f : 1.0f;
                EXPECT_NEAR(step.rescale(r), rescale, 1e-5f);
                if (b == 0) continue;
                // m never falls; a skipped tile changes nothing
                const FlashStep& before = walk.steps[static_cast<std::size_t>(a * kTiles + b - 1)];
                EXPECT_GE(step.rowMax(r), before.rowMax(r));
                if (step.skipped) {
                    EXPECT_EQ(step.rescale(r), 1.0f);
                    EXPECT_EQ(step.rowMax(r), before.rowMax(r));
                    EXPECT_EQ(step.rowSum(r), before.rowSum(r));
                }
            }
        }
    // After a query tile's last step, m and l are those of the whole row of the materialised
    // scores: m = max_j S_ij and l = Σ_j exp(S_ij - m), in double, over the readable keys.
    for (Eigen::Index a = 0; a < qTiles; ++a) {
        const FlashStep& last = walk.steps[static_cast<std::size_t>(a * kTiles + kTiles - 1)];
        for (Eigen::Index r = 0; r < last.rows; ++r) {
            const Eigen::Index i = last.q0 + r;
            double m = -std::numeric_limits<double>::infinity(), l = 0;
            for (Eigen::Index j = 0; j < tk; ++j)
                if (!isBlocked(settings, i, j)) m = std::max(m, static_cast<double>(head.scores(i, j)) * scale);
            for (Eigen::Index j = 0; j < tk; ++j)
                if (!isBlocked(settings, i, j)) l += std::exp(static_cast<double>(head.scores(i, j)) * scale - m);
            if (std::isinf(m)) {
                EXPECT_EQ(last.rowMax(r), -std::numeric_limits<float>::infinity());
                EXPECT_EQ(last.rowSum(r), 0.0f);
                continue;
            }
            EXPECT_NEAR(last.rowMax(r), m, 1e-5 * std::max(1.0, std::abs(m))) << "row " << i;
            EXPECT_NEAR(last.rowSum(r), l, 1e-5 * l) << "row " << i;
        }
    }
}

TEST(FlashWalk, MatchesTheMaterialisedSoftmaxEverywhere) {
    const std::vector<FlashTiles> tileSizes = {{1, 1}, {3, 5}, {4, 4}, {2, 7}, {64, 64}};
    for (int length : {1, 2, 5, 8, 13, 37})
        for (const Case& c : cases(length)) {
            const Scenario s = parseScenario(c.text, "s.json");
            const Model model = buildModel(s);
            const Settings settings = buildSettings(s, model);
            const Forward forward = runForward(model, settings);
            const float scale = logitScale(model.dk, settings);
            for (const FlashTiles& tiles : tileSizes)
                for (std::size_t h = 0; h < forward.heads.size(); ++h) {
                    SCOPED_TRACE(c.label + ", T = " + std::to_string(length) + ", tiles " + std::to_string(tiles.queries) + " x " +
                                 std::to_string(tiles.keys) + ", head " + std::to_string(h));
                    const HeadTensors& head = forward.heads[h];
                    checkWalk(flashWalk(head, settings, tiles), head, settings, scale, tiles, c.causalOnly);
                }
        }
}

// Cross-attention: 3 queries, 5 keys, causal (key j > query i blocked), tiles 2 × 3.
TEST(FlashWalk, WalksCrossAttention) {
    const Scenario s = parseScenario(R"({"Q": [[1, -2], [0.5, 3], [-1, 1]], "K": [[2, 0], [-1, 1], [0, 0.5], [3, -1], [1, 1]],
        "V": [[1, 0, 2], [0, 1, -1], [4, 2, 0], [-3, 1, 1], [0, 0, 5]], "causal": true})",
                                     "s.json");
    const Model model = buildModel(s);
    const Settings settings = buildSettings(s, model);
    const Forward forward = runForward(model, settings);
    const FlashTiles tiles{2, 3};
    const FlashWalk walk = flashWalk(forward.heads[0], settings, tiles);
    ASSERT_EQ(walk.steps.size(), 4u);  // ⌈3/2⌉ · ⌈5/3⌉
    // Keys 3-4 lie above the diagonal for queries 0-1 and for query 2 alike.
    EXPECT_FALSE(walk.steps[0].skipped);
    EXPECT_TRUE(walk.steps[1].skipped);
    EXPECT_FALSE(walk.steps[2].skipped);
    EXPECT_TRUE(walk.steps[3].skipped);
    checkWalk(walk, forward.heads[0], settings, logitScale(model.dk, settings), tiles, true);
}

// One query, q = [1], keys k = [0], [ln 3], values [4], [8], d_k = 1 (so c = 1/√1 = 1): the scores
// are [0, ln 3], the softmax [1/4, 3/4], the output 4/4 + 3·8/4 = 7. Walked one key at a time:
//   step 1: m = max(-inf, 0) = 0, P = e^0 = 1, rescale e^(-inf - 0) = 0, l = 0·0 + 1 = 1, Õ = 1·4 = 4
//   step 2: m = max(0, ln 3) = ln 3, P = e^0 = 1, rescale e^(0 - ln 3) = 1/3,
//           l = 1 · 1/3 + 1 = 4/3, Õ = 4/3 + 1·8 = 28/3
//   O = Õ / l = (28/3) / (4/3) = 7; A = [e^(0 - ln 3), e^0] / l = [1/3, 1] · 3/4 = [1/4, 3/4].
TEST(FlashWalk, TwoKeysByHand) {
    const float ln3 = std::log(3.0f);
    HeadTensors head;
    head.q = Mat::Constant(1, 1, 1.0f);
    head.k.resize(2, 1);
    head.k << 0.0f, ln3;
    head.v.resize(2, 1);
    head.v << 4.0f, 8.0f;
    const FlashWalk walk = flashWalk(head, Settings{}, {1, 1});
    ASSERT_EQ(walk.steps.size(), 2u);
    const FlashStep &first = walk.steps[0], &second = walk.steps[1];
    EXPECT_EQ(first.k0, 0);
    EXPECT_EQ(second.k0, 1);
    EXPECT_FALSE(first.skipped || second.skipped);
    EXPECT_FLOAT_EQ(first.rowMax(0), 0.0f);
    EXPECT_FLOAT_EQ(first.rowSum(0), 1.0f);
    EXPECT_EQ(first.rescale(0), 0.0f);
    EXPECT_FLOAT_EQ(second.rowMax(0), ln3);
    EXPECT_FLOAT_EQ(second.rowSum(0), 4.0f / 3.0f);
    EXPECT_FLOAT_EQ(second.rescale(0), 1.0f / 3.0f);
    EXPECT_FLOAT_EQ(walk.output(0, 0), 7.0f);
    EXPECT_FLOAT_EQ(walk.weights(0, 0), 0.25f);
    EXPECT_FLOAT_EQ(walk.weights(0, 1), 0.75f);
    // Both keys in one tile: one step, the whole row at once, no earlier state to rescale.
    const FlashWalk whole = flashWalk(head, Settings{}, {1, 2});
    ASSERT_EQ(whole.steps.size(), 1u);
    EXPECT_FLOAT_EQ(whole.steps[0].rowMax(0), ln3);
    EXPECT_FLOAT_EQ(whole.steps[0].rowSum(0), 4.0f / 3.0f);
    EXPECT_FLOAT_EQ(whole.output(0, 0), 7.0f);
    // The keys the other way round: the maximum comes first, so the second step rescales by
    // e^(ln 3 - ln 3) = 1 and adds e^(0 - ln 3) = 1/3 to l = 1.
    head.k << ln3, 0.0f;
    head.v << 8.0f, 4.0f;
    const FlashWalk reversed = flashWalk(head, Settings{}, {1, 1});
    EXPECT_FLOAT_EQ(reversed.steps[1].rescale(0), 1.0f);
    EXPECT_FLOAT_EQ(reversed.steps[1].rowSum(0), 4.0f / 3.0f);
    EXPECT_FLOAT_EQ(reversed.output(0, 0), 7.0f);
}

// A query whose every key is blocked ends with output 0 and weights 0, never NaN; its m stays
// -inf and its l 0 through every step.
TEST(FlashWalk, ARowThatReadsNothingIsZeroNotNaN) {
    const Scenario s = parseScenario(R"({"d_model": 4, "seed": 2, "length": 6, "padding": [0, 1, 2, 3, 4, 5]})", "s.json");
    const Model model = buildModel(s);
    const Settings settings = buildSettings(s, model);
    const Forward forward = runForward(model, settings);
    const FlashWalk walk = flashWalk(forward.heads[0], settings, {4, 4});
    EXPECT_EQ(walk.output, Mat::Zero(6, model.dv));
    EXPECT_EQ(walk.weights, Mat::Zero(6, 6));
    for (const FlashStep& step : walk.steps) EXPECT_TRUE(step.skipped);
    // Row 1 blocked whole in a tile whose other rows read keys: the tile is computed, row 1 is not.
    std::string mask = R"({"d_model": 4, "seed": 2, "length": 3, "mask": [[0, 0, 1], [1, 1, 1], [0, 1, 0]]})";
    const Scenario masked = parseScenario(mask, "s.json");
    const Model m2 = buildModel(masked);
    const Settings s2 = buildSettings(masked, m2);
    const Forward f2 = runForward(m2, s2);
    const FlashWalk w2 = flashWalk(f2.heads[0], s2, {3, 2});
    ASSERT_EQ(w2.steps.size(), 2u);
    for (const FlashStep& step : w2.steps) {
        EXPECT_FALSE(step.skipped);
        EXPECT_EQ(step.rowMax(1), -std::numeric_limits<float>::infinity());
        EXPECT_EQ(step.rowSum(1), 0.0f);
        EXPECT_EQ(step.rescale(1), 1.0f);
    }
    EXPECT_TRUE(w2.output.allFinite());
    EXPECT_EQ(w2.output.row(1).cwiseAbs().sum(), 0.0f);
    EXPECT_EQ(w2.weights.row(1).cwiseAbs().sum(), 0.0f);
    EXPECT_EQ(farCells(w2.output, f2.heads[0].output), 0);
}

// The working set is one tile and two vectors of its rows, whatever T; the materialised path's
// S (and again A) is T_q · T_k.
TEST(FlashWalk, HoldsOneTileNotTheScores) {
    const Scenario s = parseScenario(R"({"d_model": 8, "heads": 2, "length": 37})", "s.json");
    const Model model = buildModel(s);
    const Settings settings = buildSettings(s, model);
    const Forward forward = runForward(model, settings);
    const HeadTensors& head = forward.heads[0];
    const FlashWalk fours = flashWalk(head, settings, {4, 4});
    EXPECT_EQ(fours.peakFloats, 4u * 4u + 2u * 4u);
    EXPECT_EQ(fours.materialisedFloats, 37u * 37u);
    EXPECT_EQ(flashWalk(head, settings, {3, 5}).peakFloats, 3u * 5u + 2u * 3u);
    // Tiles larger than T are clipped to it: one tile is the whole score matrix.
    EXPECT_EQ(flashWalk(head, settings, {64, 100}).peakFloats, 37u * 37u + 2u * 37u);
}

TEST(FlashWalk, GapToTheMaterialisedPath) {
    const Scenario s = parseScenario(R"({"d_model": 8, "heads": 2, "length": 11, "causal": true})", "s.json");
    const Model model = buildModel(s);
    const Settings settings = buildSettings(s, model);
    const Forward forward = runForward(model, settings);
    const FlashWalk walk = flashWalk(forward.heads[0], settings, {3, 3});
    const FlashGap gap = flashGap(walk, forward.heads[0]);
    EXPECT_LE(gap.output, 1e-5f);
    EXPECT_LE(gap.weights, 1e-5f);
    HeadTensors moved = forward.heads[0];
    moved.output(4, 1) += 0.5f;
    moved.weights(7, 2) -= 0.25f;
    const FlashGap off = flashGap(walk, moved);
    EXPECT_NEAR(off.output, 0.5f, 1e-5f);
    EXPECT_NEAR(off.weights, 0.25f, 1e-5f);
    const Scenario other = parseScenario(R"({"d_model": 8, "heads": 2, "length": 5})", "s.json");
    const Model m2 = buildModel(other);
    EXPECT_TRUE(std::isinf(flashGap(walk, runForward(m2, buildSettings(other, m2)).heads[0]).output));
}

TEST(FlashWalk, RejectsBadTilesAndOverflowedScores) {
    HeadTensors head;
    head.q = Mat::Ones(2, 2);
    head.k = Mat::Ones(3, 2);
    head.v = Mat::Ones(3, 1);
    EXPECT_THROW(flashWalk(head, Settings{}, {0, 4}), InputError);
    EXPECT_THROW(flashWalk(head, Settings{}, {4, -1}), InputError);
    EXPECT_NO_THROW(flashWalk(head, Settings{}, {1, 1}));
    head.v = Mat::Ones(2, 1);  // 2 values for 3 keys
    EXPECT_THROW(flashWalk(head, Settings{}, {1, 1}), InputError);
    head.v = Mat::Ones(3, 1);
    head.q.row(1).setConstant(3e38f);  // q · k = 6e38: past the float range
    try {
        flashWalk(head, Settings{}, {1, 1});
        ADD_FAILURE() << "no error";
    } catch (const InputError& e) {
        EXPECT_EQ(e.message(), "scores: Q Kᵀ overflows the float range; the inputs or weights are too large");
    }
}

}  // namespace
}  // namespace attnviz::core
