// Actions and lazy recompute, without a window.
#include "app/state/actions.hpp"
#include "core/scenario/presets.hpp"
#include "tests/state/ready_state.hpp"

#include <gtest/gtest.h>

using namespace attnviz;
using namespace attnviz::app;

using attnviz::app::testing::ready;

TEST(State, InitialRecomputeRunsEveryStageOncePerHead) {
    const AppState s = ready();
    EXPECT_EQ(s.model.heads, 4);
    EXPECT_EQ(s.work.projections, 4);
    EXPECT_EQ(s.work.scores, 4);
    EXPECT_EQ(s.work.softmaxes, 4);
    EXPECT_EQ(s.work.outputs, 4);
    EXPECT_TRUE(isFresh(s));
}

TEST(State, TemperatureChangeDoesNotRecomputeScores) {
    AppState s = ready();
    const core::Mat before = s.forward.heads[0].weights;
    const core::Mat scores = s.forward.heads[0].scores;
    ASSERT_TRUE(apply(s, action::SetTemperature{0.1f}));
    EXPECT_FALSE(isFresh(s));
    recompute(s);
    EXPECT_EQ(s.work.scores, 4);  // unchanged: no new Q Kᵀ
    EXPECT_EQ(s.work.projections, 4);
    EXPECT_EQ(s.work.softmaxes, 8);  // one more softmax per head
    EXPECT_EQ(s.work.outputs, 8);
    EXPECT_EQ(s.forward.heads[0].scores, scores);
    // τ = 0.1 sharpens every row.
    for (Eigen::Index i = 0; i < before.rows(); ++i) EXPECT_GT(s.forward.heads[0].weights.row(i).maxCoeff(), before.row(i).maxCoeff());
}

TEST(State, CausalToggleOnlyReweighs) {
    AppState s = ready();
    ASSERT_TRUE(apply(s, action::ToggleCausal{}));
    recompute(s);
    EXPECT_EQ(s.work.scores, 4);
    EXPECT_EQ(s.work.softmaxes, 8);
    EXPECT_EQ(s.forward.heads[2].weights(0, 5), 0.0f);
    EXPECT_EQ(s.forward.heads[2].weights(0, 0), 1.0f);
    ASSERT_TRUE(apply(s, action::ToggleCausal{}));
    recompute(s);
    EXPECT_GT(s.forward.heads[2].weights(0, 5), 0.0f);
}

TEST(State, VisibleHeadFirstThenTheRest) {
    AppState s = ready();
    apply(s, action::SetTemperature{0.5f});
    recomputeHead(s, 1);
    EXPECT_EQ(s.stale[1], Stage::Fresh);
    EXPECT_EQ(s.stale[0], Stage::Weights);
    EXPECT_EQ(s.work.softmaxes, 5);
    recompute(s);
    EXPECT_EQ(s.work.softmaxes, 8);
}

TEST(State, AFrameAfterAChangeComputesOnlyTheVisibleWeights) {
    AppState s = ready();
    apply(s, action::SetTemperature{0.5f});
    EXPECT_FALSE(recomputeStep(s, 2, 1));
    EXPECT_EQ(s.stale[2], Stage::Outputs);  // weights fresh, A·V not yet
    EXPECT_TRUE(weightsFresh(s, 2));
    EXPECT_FALSE(headFresh(s, 2));
    EXPECT_EQ(s.work.softmaxes, 5);
    EXPECT_EQ(s.work.outputs, 4);
    const std::uint64_t version = s.headVersions[2];
    // The next frame finishes the visible head first; its weights, and so its texture, stay.
    EXPECT_FALSE(recomputeStep(s, 2, 1));
    EXPECT_EQ(s.stale[2], Stage::Fresh);
    EXPECT_EQ(s.stale[0], Stage::Weights);
    EXPECT_EQ(s.work.outputs, 5);
    EXPECT_EQ(s.headVersions[2], version);
    // The mean needs every head's weights at once.
    EXPECT_FALSE(recomputeStep(s, -1, 1));
    EXPECT_EQ(s.work.softmaxes, 8);
    EXPECT_TRUE(weightsFresh(s, -1));
    for (int frame = 0; frame < 3; ++frame) recomputeStep(s, -1, 1);
    EXPECT_TRUE(isFresh(s));
    EXPECT_EQ(s.work.outputs, 8);
    EXPECT_EQ(s.work.scores, 4);
}

TEST(State, LabSettingsAreViewChangesAndChecked) {
    AppState s = ready();
    const WorkCounters w = s.work;
    EXPECT_EQ(labFromName(""), Lab::None);
    EXPECT_EQ(labFromName("linear"), Lab::Linear);
    EXPECT_EQ(labFromName("cost"), Lab::Cost);
    EXPECT_EQ(labFromName("train"), Lab::Train);
    EXPECT_FALSE(labFromName("fourier"));
    EXPECT_TRUE(apply(s, action::SetLab{Lab::Linear}));
    EXPECT_EQ(s.view.lab, Lab::Linear);
    EXPECT_TRUE(apply(s, action::SetFastWeightSteps{99}));
    EXPECT_EQ(s.view.fastWeightSteps, 6);  // clamped to the tokens
    EXPECT_TRUE(apply(s, action::SetFastWeightSteps{-5}));
    EXPECT_EQ(s.view.fastWeightSteps, -1);  // every token
    EXPECT_TRUE(apply(s, action::SetMemoryWall{core::MemoryWall{2, 8, 4, 4}}));
    EXPECT_EQ(s.view.wall.heads, 8);
    EXPECT_FALSE(apply(s, action::SetMemoryWall{core::MemoryWall{1, 0, 32, 2}}));
    EXPECT_EQ(s.error, "heads: expected 1 to 1000000, got 0");
    EXPECT_FALSE(apply(s, action::SetMemoryWall{core::MemoryWall{1, 16, 32, 3}}));
    EXPECT_EQ(s.error, "bytes per value: expected 1, 2, 4 or 8, got 3");
    EXPECT_FALSE(apply(s, action::SetMemoryWall{core::MemoryWall{1, 16, 32, 2, 0}}));
    EXPECT_EQ(s.error, "T: expected 1 to 100000000 tokens, got 0");
    EXPECT_EQ(s.view.wall.heads, 8);  // the rejected values never land
    recompute(s);
    EXPECT_EQ(s.work.softmaxes, w.softmaxes);
}

TEST(State, HeadAndQuerySelectionComputeNothing) {
    AppState s = ready();
    const WorkCounters w = s.work;
    apply(s, action::SelectHead{2});
    apply(s, action::StepQuery{3});
    apply(s, action::StepHead{1});
    recompute(s);
    EXPECT_EQ(s.view.selectedHead, 3);
    EXPECT_EQ(s.view.selectedQuery, 3);
    EXPECT_EQ(s.work.scores, w.scores);
    EXPECT_EQ(s.work.softmaxes, w.softmaxes);
    EXPECT_TRUE(isFresh(s));
    // StepHead cycles 3 -> mean (-1) -> 0
    apply(s, action::StepHead{1});
    EXPECT_EQ(s.view.selectedHead, -1);
    apply(s, action::StepHead{1});
    EXPECT_EQ(s.view.selectedHead, 0);
    apply(s, action::StepQuery{100});
    EXPECT_EQ(s.view.selectedQuery, 5);
}

TEST(State, SentenceEditRebuildsAndBadInputKeepsPreviousState) {
    AppState s = ready();
    ASSERT_TRUE(apply(s, action::SetSentence{"dog bites man"}));
    recompute(s);
    EXPECT_EQ(s.model.tq(), 3);
    EXPECT_EQ(s.work.scores, 8);
    EXPECT_FALSE(apply(s, action::SetSentence{"   "}));
    EXPECT_EQ(s.error, "sentence: no tokens: the text is empty or only white space");
    EXPECT_EQ(s.model.tq(), 3);  // the previous state stays on screen
    EXPECT_TRUE(isFresh(s));
    EXPECT_FALSE(apply(s, action::SetTemperature{0.0f}));
    EXPECT_EQ(s.settings.temperature, 1.0f);
    apply(s, action::ClearError{});
    EXPECT_TRUE(s.error.empty());
}

TEST(State, SwapVerdictFlipsWithPositionalEncoding) {
    AppState s = ready("seed004-swap");
    EXPECT_TRUE(s.swapped());
    EXPECT_TRUE(s.equivariance.holds());
    EXPECT_LT(s.equivariance.outputDiff, 1e-6f);
    ASSERT_TRUE(apply(s, action::SetPositional{core::Positional::Sinusoidal}));
    recompute(s);
    EXPECT_FALSE(s.equivariance.holds());
    EXPECT_GT(s.equivariance.outputDiff, 1e-2f);
    ASSERT_TRUE(apply(s, action::ResetSwaps{}));
    recompute(s);
    EXPECT_FALSE(s.swapped());
    EXPECT_EQ(s.equivariance.outputDiff, 0.0f);
    ASSERT_TRUE(apply(s, action::SwapTokens{1, 3}));
    recompute(s);
    EXPECT_EQ(s.model.queryTokens, (std::vector<std::string>{"a", "d", "c", "b"}));
    EXPECT_FALSE(apply(s, action::SwapTokens{0, 9}));
}

// With the tokens swapped, the permutation reference (the forward pass in the original order)
// follows a softmax setting with a softmax of its own: its projections and Q Kᵀ stand.
TEST(State, SwappedReferenceFollowsATemperatureWithoutNewScores) {
    AppState s = ready("seed004-swap");
    ASSERT_TRUE(s.swapped());
    EXPECT_EQ(s.work.referencePasses, 1);
    EXPECT_EQ(s.work.referenceSoftmaxes, 0);
    const core::Mat scores = s.baseForward.heads[0].scores;
    const core::Mat weights = s.baseForward.heads[0].weights;
    ASSERT_TRUE(apply(s, action::SetTemperature{0.25f}));
    recompute(s);
    EXPECT_EQ(s.work.referencePasses, 1);  // no new projections or scores
    EXPECT_EQ(s.work.referenceSoftmaxes, 1);
    EXPECT_EQ(s.baseForward.heads[0].scores, scores);
    EXPECT_NE(s.baseForward.heads[0].weights, weights);
    // The same reference, and verdict, as a state built at τ = 0.25 from the start.
    core::Scenario cold = core::loadPreset("seed004-swap");
    cold.temperature = 0.25f;
    AppState fresh = makeState(cold);
    recompute(fresh);
    EXPECT_TRUE(s.baseForward.heads[0].weights.isApprox(fresh.baseForward.heads[0].weights, 1e-6f));
    EXPECT_TRUE(s.baseForward.output.isApprox(fresh.baseForward.output, 1e-6f));
    EXPECT_TRUE(s.equivariance.holds());
    EXPECT_NEAR(s.equivariance.outputDiff, fresh.equivariance.outputDiff, 1e-6f);
    // A new model (positions added) is a whole pass again.
    ASSERT_TRUE(apply(s, action::SetPositional{core::Positional::Sinusoidal}));
    recompute(s);
    EXPECT_EQ(s.work.referencePasses, 2);
    EXPECT_FALSE(s.equivariance.holds());
}

TEST(State, ShuffleIsDeterministicAndAPermutation) {
    AppState a = ready(), b = ready();
    apply(a, action::Shuffle{42});
    apply(b, action::Shuffle{42});
    EXPECT_EQ(a.model.perm, b.model.perm);
    std::vector<int> sorted = a.model.perm;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, (std::vector<int>{0, 1, 2, 3, 4, 5}));
    recompute(a);
    EXPECT_TRUE(a.equivariance.holds());
}

TEST(State, HeadCountChangeKeepsDkConsistent) {
    AppState s = ready();
    ASSERT_TRUE(apply(s, action::SetHeads{3}));  // 16 / 3 does not divide: d_k falls back to 5
    recompute(s);
    EXPECT_EQ(s.model.heads, 3);
    EXPECT_EQ(s.model.dk, 5);
    apply(s, action::SelectHead{2});
    ASSERT_TRUE(apply(s, action::SetHeads{2}));
    EXPECT_EQ(s.model.dk, 8);
    EXPECT_EQ(s.view.selectedHead, 1);  // clamped to the heads that exist
}

TEST(State, MeanOverHeads) {
    AppState s = ready();
    apply(s, action::SelectHead{-1});
    const core::Mat mean = visibleWeights(s);
    core::Mat manual = core::Mat::Zero(6, 6);
    for (const auto& h : s.forward.heads) manual += h.weights;
    EXPECT_LT((mean - manual / 4.0f).cwiseAbs().maxCoeff(), 1e-6f);
}

TEST(State, VariantsAreActionsThatRebuild) {
    AppState s = ready();
    ASSERT_EQ(s.model.heads, 4);
    ASSERT_TRUE(apply(s, action::SetKvHeads{2}));
    recompute(s);
    EXPECT_EQ(s.model.kvHeads, 2);
    EXPECT_EQ(s.forward.heads[0].k, s.forward.heads[1].k);
    EXPECT_FALSE(apply(s, action::SetKvHeads{3}));  // does not divide 4: refused, the model kept
    EXPECT_EQ(s.error, "kv_heads: 3 does not divide 4 query heads (each key/value head serves heads / kv_heads of them)");
    EXPECT_EQ(s.model.kvHeads, 2);
    ASSERT_TRUE(apply(s, action::SetHeads{3}));  // 2 kv heads no longer divide: one per head again
    EXPECT_FALSE(s.scenario.kvHeads.has_value());
    ASSERT_TRUE(apply(s, action::SetWindow{2}));
    ASSERT_TRUE(apply(s, action::SetCausal{true}));
    recompute(s);
    const core::Mat& a = s.forward.heads[0].weights;
    EXPECT_EQ(a(3, 1), 0.0f);  // outside i - 2 < j <= i
    EXPECT_GT(a(3, 2), 0.0f);
    EXPECT_FALSE(apply(s, action::SetShift{-1}));
    EXPECT_TRUE(apply(s, action::SetShift{12}));
    EXPECT_EQ(s.view.shift, 12);
}

TEST(State, ScalingUnderAlibiComputesNewScores) {
    // ALiBi's penalty sits in the scores in raw-score units, which the scaling sets: a scaling
    // change must give what a fresh model with that scaling gives.
    AppState s = ready();
    ASSERT_TRUE(apply(s, action::SetPositional{core::Positional::Alibi}));
    recompute(s);
    const long long scores = s.work.scores;
    ASSERT_TRUE(apply(s, action::SetScaled{false}));
    recompute(s);
    EXPECT_EQ(s.work.scores, scores + s.model.heads);
    core::Scenario fresh = s.scenario;
    AppState other = makeState(fresh);
    recompute(other);
    for (int h = 0; h < s.model.heads; ++h) {
        EXPECT_EQ(s.forward.heads[static_cast<std::size_t>(h)].scores, other.forward.heads[static_cast<std::size_t>(h)].scores) << h;
        EXPECT_EQ(s.forward.heads[static_cast<std::size_t>(h)].weights, other.forward.heads[static_cast<std::size_t>(h)].weights) << h;
    }
}

TEST(State, TheShiftCheckFollowsTheModelAndTheShift) {
    AppState s = ready();
    ASSERT_TRUE(apply(s, action::SetPositional{core::Positional::Rope}));
    recompute(s);
    EXPECT_FALSE(shiftCheckCurrent(s));
    const ShiftCheck& rope = checkShift(s);
    ASSERT_TRUE(rope.report.has_value()) << rope.why;
    EXPECT_TRUE(rope.report->unchanged());
    EXPECT_EQ(rope.report->shift, 7);
    EXPECT_TRUE(shiftCheckCurrent(s));
    ASSERT_TRUE(apply(s, action::SetShift{30}));
    EXPECT_FALSE(shiftCheckCurrent(s));
    ASSERT_TRUE(apply(s, action::SetPositional{core::Positional::Sinusoidal}));
    recompute(s);
    const ShiftCheck& sinusoidal = checkShift(s);
    ASSERT_TRUE(sinusoidal.report.has_value());
    EXPECT_EQ(sinusoidal.report->shift, 30);
    EXPECT_FALSE(sinusoidal.report->unchanged());
}
