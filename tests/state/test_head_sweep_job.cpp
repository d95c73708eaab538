// A pass that keeps no maps (--keep-maps) is summarized for the model view and the statistics on a
// worker thread (refreshHeadSummary): the window's refresh starts the sweep and returns at once,
// the summary is taken in the frame it is ready and equals the one made at once from kept maps,
// Stop leaves it stopped (no sweep starts again until Resume), and a new pass sweeps anew.
#include "app/state/actions.hpp"
#include "app/state/head_summary.hpp"
#include "core/models/loaded_model.hpp"
#include "tests/test_folder.hpp"
#include "tests/tiny_llama.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

using namespace attnviz;
using namespace attnviz::app;

namespace {

class HeadSweepState : public testfs::TestFolder {
protected:
    void SetUp() override {
        TestFolder::SetUp();
        const nlohmann::json c = tinyllama::config("mistral", {{"sliding_window", 10}});
        tinyllama::writeCheckpoint(m_dir, c, tinyllama::weights(c, 9));
        m_scenario.model = core::modelFolder(m_dir.string());
        m_scenario.sentence = "the cat sat on the mat. the cat sat on the mat.";
        m_scenario.causal = true;
    }
    AppState state(std::uint64_t keptMapsBytes) {
        core::Limits limits;
        limits.keptMapsBytes = keptMapsBytes;
        AppState s = makeState(m_scenario, limits);
        recompute(s);
        return s;
    }
    // Refreshes as the window does after each frame until the summary is current (or 20 s pass).
    static int framesUntilCurrent(AppState& s) {
        for (int frame = 1; frame < 2000; ++frame) {
            if (refreshHeadSummary(s)) return frame;
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        return -1;
    }
    core::Scenario m_scenario;
};

TEST_F(HeadSweepState, APassWithoutMapsIsSweptOnAWorkerAndTakenWhenReady) {
    AppState kept = state(1ULL << 30), made = state(0);
    ASSERT_TRUE(kept.loaded.run->keepsWeights());
    ASSERT_FALSE(made.loaded.run->keepsWeights());
    EXPECT_TRUE(refreshHeadSummary(kept));  // kept maps: read at once, no worker
    EXPECT_FALSE(kept.headSweep);
    EXPECT_FALSE(refreshHeadSummary(made));  // started, not waited for
    ASSERT_TRUE(made.headSweep);
    EXPECT_GT(framesUntilCurrent(made), 0);
    EXPECT_EQ(pendingHeadSweep(made), nullptr);
    const HeadSummary &a = kept.headSummary, &b = made.headSummary;
    ASSERT_EQ(b.stats.size(), a.stats.size());
    for (std::size_t k = 0; k < a.stats.size(); ++k) {
        EXPECT_NEAR(b.stats[k].entropy, a.stats[k].entropy, 1e-6) << k;
        EXPECT_NEAR(b.stats[k].previous, a.stats[k].previous, 1e-6) << k;
        EXPECT_NEAR(b.stats[k].induction, a.stats[k].induction, 1e-6) << k;
    }
    ASSERT_EQ(b.means.size(), a.means.size());
    for (std::size_t k = 0; k < a.means.size(); ++k) EXPECT_NEAR(b.means[k], a.means[k], 1e-6f) << k;
    EXPECT_EQ(b.side, a.side);
    EXPECT_NEAR(b.largestMax, a.largestMax, 1e-6f);
    // Once current, the summary stays; the rule leaving out the first key sweeps again.
    EXPECT_TRUE(refreshHeadSummary(made));
    ASSERT_TRUE(apply(made, action::SetSkipFirstKey{true}));
    EXPECT_FALSE(refreshHeadSummary(made));
    EXPECT_GT(framesUntilCurrent(made), 0);
    EXPECT_FALSE(made.headSummary.everyKey.empty());
}

TEST_F(HeadSweepState, StopLeavesTheSweepStoppedUntilResumed) {
    AppState s = state(0);
    // A sweep that takes its time (a row a block, 2 ms a row) under the state's key, as the
    // refresh would have started it.
    core::AttentionMaps slow;
    slow.layers = slow.heads = 1;
    slow.queries = slow.keys = 64;
    slow.settings.assign(1, core::Settings{});
    slow.rows = [](int, int, Eigen::Index, const Eigen::Ref<core::Mat>& out) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        const_cast<Eigen::Ref<core::Mat>&>(out).setConstant(1.0f / 64);
    };
    s.headSweep = std::make_shared<HeadSweepJob>();
    s.headSweep->start(headSummaryKey(s), slow, nullptr, {.stats = {}, .everyKey = false, .factor = 0, .blockFloats = 64});
    EXPECT_EQ(pendingHeadSweep(s), s.headSweep.get());
    EXPECT_FALSE(refreshHeadSummary(s));  // under way: not started again
    ASSERT_TRUE(apply(s, action::StopHeadSweep{}));
    const HeadSweepJob* job = pendingHeadSweep(s);
    ASSERT_NE(job, nullptr);
    EXPECT_TRUE(job->stoppedAt(headSummaryKey(s)));
    EXPECT_FALSE(job->running());
    EXPECT_LT(job->fraction(), 1.0);
    for (int frame = 0; frame < 5; ++frame) EXPECT_FALSE(refreshHeadSummary(s));  // no sweep starts again
    EXPECT_FALSE(s.headSweep->running());
    ASSERT_TRUE(apply(s, action::ResumeHeadSweep{}));
    EXPECT_EQ(pendingHeadSweep(s), nullptr);
    EXPECT_GT(framesUntilCurrent(s), 0);  // the pass's own maps, swept anew
    EXPECT_EQ(s.headSummary.heads, tinyllama::kHeads);
    EXPECT_EQ(s.headSummary.layers, tinyllama::kLayers);
}

}  // namespace
