// The labs' work in the state, without a window: the training and cost jobs started and stopped
// by actions and read as snapshots, the linear lab's maps recomputed lazily, and the one table
// of lab names. No test here asserts anything about a measured time: waits are on a condition
// variable or on published state.
#include "app/state/actions.hpp"
#include "core/scenario/presets.hpp"
#include "tests/state/ready_state.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

using namespace attnviz;
using namespace attnviz::app;

using attnviz::app::testing::ready;

// The timing runs on its own thread: results arrive while the UI goes on, and stopping returns
// with what was measured so far. The measurement is a stand-in that holds the third point until
// the stop is asked for, so the test depends on no clock and no scheduling.
TEST(CostTiming, RunsOffTheUiThreadAndStops) {
    std::mutex mutex;
    std::condition_variable reached;
    bool third = false;
    std::thread::id worker;
    AppState s = ready();
    s.labs.jobs = std::make_unique<LabJobs>([&](long long tokens, int width, const std::atomic<bool>& cancel) {
        core::CostPoint p;
        p.tokens = tokens;
        p.width = width;
        p.rnnMs = 2.0 * static_cast<double>(tokens);
        p.attentionMs = 1.0;
        if (tokens == CostSweepJob::sweepTokens()[2]) {
            {
                const std::lock_guard lock(mutex);
                third = true;
                worker = std::this_thread::get_id();
            }
            reached.notify_all();
            while (!cancel) std::this_thread::yield();  // measured across the stop: dropped
        }
        return p;
    });
    ASSERT_TRUE(apply(s, action::StartCostSweep{}));
    {
        std::unique_lock lock(mutex);
        reached.wait(lock, [&] { return third; });
    }
    EXPECT_TRUE(costSnapshot(s).running);
    EXPECT_NE(worker, std::this_thread::get_id());
    ASSERT_EQ(costSnapshot(s).points.size(), 2u);  // published while the sweep goes on
    ASSERT_TRUE(apply(s, action::StopCostSweep{}));
    const CostSnapshot stopped = costSnapshot(s);
    EXPECT_FALSE(stopped.running);
    const auto& points = stopped.points;
    ASSERT_EQ(points.size(), 2u);
    EXPECT_EQ(points[0].tokens, 16);
    EXPECT_EQ(points[1].tokens, 32);
    EXPECT_EQ(points[1].width, 64);  // seed 000's width
    EXPECT_DOUBLE_EQ(points[1].rnnOverAttention(), 64.0);
}

// The real measurement through the state: every point of the sweep, each with the work the
// timed code did (nothing is asserted about its times).
TEST(CostTiming, SweepsTheSeedsLengthsWithTheWorkOfEach) {
    EXPECT_EQ(CostSweepJob::sweepTokens(), (std::vector<long long>{16, 32, 64, 128, 256, 512, 1024, 2048, 4096}));
    AppState s = ready();
    s.labs.jobs = std::make_unique<LabJobs>([](long long tokens, int width, const std::atomic<bool>&) {
        return core::measureCost(std::min(tokens, 64LL), width, 0.0);  // three runs each, small T
    });
    ASSERT_TRUE(apply(s, action::StartCostSweep{}));
    while (costSnapshot(s).running) std::this_thread::yield();
    const auto points = costSnapshot(s).points;
    ASSERT_EQ(points.size(), 9u);
    for (const auto& p : points) {
        EXPECT_EQ(p.width, 64);  // seed 000's width
        EXPECT_EQ(p.rnnSteps, p.tokens);
        EXPECT_EQ(p.rnnMultiplyAdds, static_cast<double>(p.tokens) * 2 * 64 * 64);
        EXPECT_EQ(p.attentionMultiplyAdds, 2.0 * static_cast<double>(p.tokens) * static_cast<double>(p.tokens) * 64);
    }
}

// Training runs on its own thread, publishes curves and maps, gives the same run for the same
// seed, and stops when asked.
TEST(TrainLab, TrainsOffTheUiThreadDeterministicallyAndStops) {
    AppState s = ready();
    TrainSettings settings;
    settings.config.task = core::TrainTask::Reversal;
    const auto start = [&](int steps) {
        settings.steps = steps;
        ASSERT_TRUE(apply(s, action::StartTraining{settings})) << s.error;
    };
    const auto wait = [&] {
        while (trainSnapshot(s).running) std::this_thread::yield();
    };
    start(60);
    wait();
    const auto first = trainSnapshot(s).runs;
    ASSERT_EQ(first.size(), 2u);
    EXPECT_EQ(first[0].label, "no positions");
    EXPECT_EQ(first[1].label, "learned positions");
    for (const auto& run : first) {
        EXPECT_EQ(run.losses.size(), 60u);
        ASSERT_EQ(run.maps.size(), 1u);
        EXPECT_EQ(run.maps[0].rows(), 6);
        ASSERT_TRUE(run.scenario.tokens);
    }
    EXPECT_LT(first[1].heldOut, first[0].heldOut);  // positions already help after 60 steps
    start(60);
    wait();
    EXPECT_EQ(trainSnapshot(s).runs[1].losses, first[1].losses);  // the same seed, the same run
    // A run far longer than any test (days on any machine): stopping ends it once it has published.
    constexpr int endless = 1 << 30;
    start(endless);
    while (trainSnapshot(s).runs[0].losses.empty()) std::this_thread::yield();
    ASSERT_TRUE(apply(s, action::StopTraining{}));
    const TrainSnapshot stopped = trainSnapshot(s);
    EXPECT_FALSE(stopped.running);
    EXPECT_GE(stopped.runs[0].losses.size(), 1u);
    EXPECT_LT(stopped.runs[0].losses.size(), static_cast<std::size_t>(endless));
}

// The lab's settings are the state's: edited while idle, fixed while a run goes on, checked
// before anything starts. Jobs go on across a new model.
TEST(TrainLab, SettingsAreStateAndCheckedBeforeARunStarts) {
    AppState s = ready();
    EXPECT_EQ(s.labs.train.config.task, core::TrainTask::TwoRelations);  // the panel's first choice
    EXPECT_EQ(s.labs.train.steps, 400);
    TrainSettings bad = s.labs.train;
    bad.config.task = core::TrainTask::Reversal;
    bad.config.heads = 3;  // does not divide d_model 16
    EXPECT_FALSE(apply(s, action::StartTraining{bad}));
    EXPECT_EQ(s.error, "heads: 3 heads do not divide d_model 16");
    EXPECT_TRUE(trainSnapshot(s).runs.empty());  // nothing started
    EXPECT_EQ(s.labs.train.config.heads, 1);     // nor were the settings taken
    bad.config.heads = 1;
    bad.steps = 0;
    EXPECT_FALSE(apply(s, action::SetTrainSettings{bad}));
    EXPECT_EQ(s.error, "steps: expected at least 1, got 0");

    TrainSettings endless = s.labs.train;
    endless.steps = 1 << 30;
    ASSERT_TRUE(apply(s, action::StartTraining{endless}));
    EXPECT_EQ(s.labs.train.steps, 1 << 30);
    TrainSettings other = endless;
    other.config.seed = 7;
    EXPECT_FALSE(apply(s, action::SetTrainSettings{other}));  // fixed while running
    EXPECT_EQ(s.labs.train.config.seed, 1u);
    ASSERT_TRUE(apply(s, action::SetSentence{"dog bites man"}));  // a new model: the run goes on
    while (trainSnapshot(s).runs[0].losses.empty()) std::this_thread::yield();
    EXPECT_TRUE(trainSnapshot(s).running);
    EXPECT_EQ(s.labs.train.steps, 1 << 30);
    ASSERT_TRUE(apply(s, action::StopTraining{}));
    EXPECT_FALSE(trainSnapshot(s).running);
    EXPECT_TRUE(apply(s, action::SetTrainSettings{other}));
    EXPECT_EQ(s.labs.train.config.seed, 7u);
}

// The linear lab's maps are made by the state's recompute, only while that lab is shown, and
// each part only when its own inputs change.
TEST(LinearLab, MapsAreDerivedLazilyInTheState) {
    AppState s = ready();
    EXPECT_EQ(linearMaps(s), nullptr);  // not shown: nothing made
    EXPECT_EQ(s.work.linearMaps, 0);
    ASSERT_TRUE(apply(s, action::SetLab{Lab::Linear}));
    EXPECT_EQ(linearMaps(s), nullptr);  // made by the next recompute, not by the action
    recompute(s);
    const LinearMaps* m = linearMaps(s);
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(s.work.linearMaps, 1);
    EXPECT_EQ(s.work.fastWeights, 1);
    EXPECT_EQ(s.work.hopfieldSteps, 1);
    const core::HeadTensors& t = s.forward.heads[0];
    EXPECT_EQ(m->head, 0);
    EXPECT_EQ(m->linear.weights, core::linearAttention(t.q, t.k, t.v, false).weights);
    EXPECT_EQ(m->fast, core::fastWeights(t.k, t.v, 6));  // every token
    EXPECT_LT(m->recurrentDiff, 1e-5f);
    ASSERT_TRUE(m->hopfieldDiff);  // τ = 1, scaled, no mask: one Hopfield step is attention row 1
    EXPECT_LT(*m->hopfieldDiff, 1e-5f);

    // A view change remakes only what reads it.
    apply(s, action::SelectQuery{3});
    apply(s, action::SetFastWeightSteps{2});
    EXPECT_EQ(linearMaps(s), nullptr);
    recomputeStep(s, 0, 1);
    m = linearMaps(s);
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(s.work.linearMaps, 1);
    EXPECT_EQ(s.work.fastWeights, 2);
    EXPECT_EQ(s.work.hopfieldSteps, 2);
    EXPECT_EQ(m->query, 3);
    EXPECT_EQ(m->fast, core::fastWeights(t.k, t.v, 2));
    recompute(s);
    EXPECT_EQ(s.work.linearMaps, 1);  // nothing changed: nothing remade
    EXPECT_EQ(s.work.fastWeights, 2);
    EXPECT_EQ(s.work.hopfieldSteps, 2);

    // The mask: new weights, so everything is remade, with the causal map.
    apply(s, action::ToggleCausal{});
    recompute(s);
    m = linearMaps(s);
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(s.work.linearMaps, 2);
    EXPECT_TRUE(m->causal);
    EXPECT_EQ(m->linear.weights(0, 5), 0.0f);
    EXPECT_FALSE(m->hopfieldDiff);  // the mask is on: no longer one attention row

    // Not shown: no work for the lab.
    apply(s, action::SetLab{Lab::Cost});
    apply(s, action::SetTemperature{0.5f});
    recompute(s);
    EXPECT_EQ(s.work.linearMaps, 2);
    EXPECT_EQ(linearMaps(s), nullptr);
}

TEST(LinearLab, NoMapsPastTheTokenLimit) {
    core::Scenario big;
    big.tokens = std::vector<std::string>(static_cast<std::size_t>(kMaxLinearTokens) + 1, "x");
    big.heads = 1;
    big.dModel = 4;
    AppState s = makeState(big);
    apply(s, action::SetLab{Lab::Linear});
    recompute(s);
    EXPECT_FALSE(linearInputs(s));
    EXPECT_EQ(linearMaps(s), nullptr);
    EXPECT_EQ(s.work.linearMaps, 0);
}

TEST(Labs, NamesComeFromOneTable) {
    EXPECT_STREQ(labName(Lab::None), "");
    for (const LabInfo& l : kLabs) EXPECT_EQ(labFromName(labName(l.lab)), l.lab) << l.name;
    EXPECT_STREQ(labName(Lab::Linear), "linear");
    EXPECT_STREQ(labName(Lab::Cost), "cost");
    EXPECT_STREQ(labName(Lab::Train), "train");
    EXPECT_EQ(labNameList(), "linear, cost, train or flash");
}

// The scenario is the one source of the softmax settings: an edit writes it alone, and the
// next recompute derives the settings from it.
TEST(State, SoftmaxEditsWriteTheScenarioAndRecomputeDerivesTheSettings) {
    AppState s = ready();
    ASSERT_TRUE(apply(s, action::SetTemperature{0.5f}));
    ASSERT_TRUE(apply(s, action::SetCausal{true}));
    ASSERT_TRUE(apply(s, action::SetScaled{false}));
    EXPECT_EQ(s.scenario.temperature, 0.5f);
    EXPECT_TRUE(s.scenario.causal);
    EXPECT_FALSE(s.scenario.scaled);
    EXPECT_EQ(s.settings.temperature, 1.0f);  // not written by the actions
    recomputeStep(s, 0, 0);
    EXPECT_EQ(s.settings.temperature, 0.5f);
    EXPECT_TRUE(s.settings.causal);
    EXPECT_FALSE(s.settings.scaled);
    ASSERT_TRUE(apply(s, action::ToggleCausal{}));  // toggles the scenario's flag
    EXPECT_FALSE(s.scenario.causal);
    recompute(s);
    EXPECT_FALSE(s.settings.causal);
    const core::Forward reference = core::runForward(s.model, core::buildSettings(s.scenario, s.model));
    EXPECT_LT((s.forward.heads[0].weights - reference.heads[0].weights).cwiseAbs().maxCoeff(), 1e-6f);
}

TEST(Labs, TheFlashWalkEndsInTheHeadsOutput) {
    AppState s = ready();
    ASSERT_TRUE(apply(s, action::SetCausal{true}));
    ASSERT_TRUE(apply(s, action::SetLab{Lab::Flash}));
    recompute(s);
    const FlashMaps* f = flashMaps(s);
    ASSERT_NE(f, nullptr);
    const Eigen::Index T = s.model.tq();
    const auto tiles = [](Eigen::Index n, int b) { return static_cast<std::size_t>((n + b - 1) / b); };
    EXPECT_EQ(f->walk.steps.size(), tiles(T, 4) * tiles(T, 4));
    EXPECT_LE(f->gap.output, 1e-5f);
    EXPECT_LE(f->gap.weights, 1e-5f);
    EXPECT_EQ(f->walk.materialisedFloats, static_cast<std::uint64_t>(T * T));
    // New tiles: a new walk, from its first step.
    ASSERT_TRUE(apply(s, action::SetFlashStep{3}));
    ASSERT_TRUE(apply(s, action::SetFlashTiles{{2, 3}}));
    EXPECT_EQ(s.view.flashStep, 0);
    f = flashMaps(s);
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->walk.steps.size(), tiles(T, 2) * tiles(T, 3));
    EXPECT_FALSE(apply(s, action::SetFlashTiles{{0, 3}}));
    EXPECT_FALSE(apply(s, action::SetFlashStep{-2}));
    // A temperature change: the walk follows the head's new weights.
    ASSERT_TRUE(apply(s, action::SetTemperature{0.2f}));
    EXPECT_EQ(flashMaps(s), nullptr);
    recompute(s);
    f = flashMaps(s);
    ASSERT_NE(f, nullptr);
    EXPECT_LE(f->gap.output, 1e-5f);
    // Too long to draw cell by cell: said, not walked.
    AppState long_ = ready();
    ASSERT_TRUE(apply(long_, action::SetSentence{std::string(200, 'a') + " b"}));
    ASSERT_TRUE(apply(long_, action::SetTokenizer{core::Tokenizer::Char}));
    ASSERT_TRUE(apply(long_, action::SetLab{Lab::Flash}));
    recompute(long_);
    EXPECT_EQ(flashMaps(long_), nullptr);
    EXPECT_NE(flashWhy(long_).find("up to 64 tokens"), std::string::npos);
}

TEST(Labs, TheKvCacheInputsAreTheViews) {
    AppState s = ready();
    const core::KvCacheConfig llama2 = core::kvCachePresets().front().config;
    ASSERT_TRUE(apply(s, action::SetKvCache{llama2}));
    EXPECT_EQ(s.view.kvCache, llama2);
    EXPECT_EQ(core::kvCacheBytesPerToken(s.view.kvCache), 524288u);  // 2 · 32 layers · 32 heads · 128 · 2 bytes
}
