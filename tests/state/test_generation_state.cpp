// Generation in the window through the action layer: Generate writes one token a frame (stepGeneration,
// as the app calls it after each frame's actions), each the pass's own greedy or sampled choice; Stop
// ends it; taking tokens back and a new sentence clear them; what cannot generate is refused in a line.
#include "app/state/actions.hpp"
#include "app/state/generation.hpp"
#include "app/state/source.hpp"
#include "core/models/decoder/generate.hpp"
#include "ready_state.hpp"
#include "tests/test_folder.hpp"
#include "tests/tiny_gpt2.hpp"

#include <gtest/gtest.h>

namespace attnviz::app {
namespace {

class Generation : public testfs::TestFolder {
protected:
    AppState open() { return app::testing::readyTinyGpt2(m_dir); }
};

TEST_F(Generation, OneTokenAFrameAsTheCoreGeneratesThem) {
    AppState s = open();
    const core::LoadedModel prompt = s.loaded;
    const std::vector<int> want = core::decoder::generate(*prompt.checkpoint, *prompt.run, 5, {});
    ASSERT_TRUE(apply(s, action::StartGenerating{5, {}}));
    for (int frame = 0; frame < 3; ++frame) EXPECT_TRUE(stepGeneration(s));
    EXPECT_EQ(s.scenario.generated, std::vector<int>(want.begin(), want.begin() + 3));
    EXPECT_EQ(s.generation.left, 2);
    // the pass is the prompt's and the new tokens', appended (no whole pass run again)
    EXPECT_EQ(s.loaded.run->ids.size(), prompt.run->ids.size() + 3);
    EXPECT_EQ(s.loaded.generated, 3u);
    EXPECT_EQ(s.loaded.forwardPasses, prompt.forwardPasses);
    EXPECT_EQ(s.loaded.appendedPasses, prompt.appendedPasses + 3);
    // Stop, then take one back
    ASSERT_TRUE(apply(s, action::StopGenerating{}));
    EXPECT_FALSE(stepGeneration(s));
    ASSERT_TRUE(apply(s, action::SetGenerated{std::vector<int>(want.begin(), want.begin() + 2)}));
    EXPECT_EQ(s.loaded.run->ids.size(), prompt.run->ids.size() + 2);
    // resumed: the same tokens as one run of five
    ASSERT_TRUE(apply(s, action::StartGenerating{3, {}}));
    while (stepGeneration(s)) {}
    EXPECT_EQ(s.scenario.generated, want);
    // a new sentence clears them
    ASSERT_TRUE(apply(s, action::SetSentence{" a cat"}));
    EXPECT_TRUE(s.scenario.generated.empty());
    EXPECT_EQ(s.loaded.generated, 0u);
}

TEST_F(Generation, SampledDrawsFollowTheSeedAndStepAndRefusalsSayWhy) {
    AppState s = open();
    const core::decoder::Sampling sampled{.greedy = false, .temperature = 3.0f, .topK = 0, .seed = 9};
    const std::vector<int> want = core::decoder::generate(*s.loaded.checkpoint, *s.loaded.run, 6, sampled);
    ASSERT_EQ(generateTokens(s, 6, sampled), "");
    EXPECT_EQ(s.scenario.generated, want);
    EXPECT_NE(want, core::decoder::generate(*s.loaded.checkpoint, *s.loaded.run, 6, {}));
    // a what-if pass is not generated from; a scenario has no model
    ASSERT_TRUE(apply(s, action::AblateHead{0, 1, false}));
    EXPECT_FALSE(apply(s, action::StartGenerating{2, {}}));
    EXPECT_EQ(s.error, "generate: a what-if pass is not generated from; clear the edits first");
    AppState scenario = app::testing::ready("default");
    EXPECT_FALSE(apply(scenario, action::StartGenerating{2, {}}));
    EXPECT_NE(generateTokens(scenario, 2, {}), "");
    EXPECT_FALSE(apply(s, action::StartGenerating{0, {}}));
}

TEST_F(Generation, TheWindowsSamplingKeepsItsTopKAndSeed) {
    AppState s = open();
    ASSERT_TRUE(apply(s, action::SetGenerateSampled{true, 5, 42}));
    EXPECT_TRUE(s.view.generateSampled);
    EXPECT_EQ(s.view.generateTopK, 5);
    EXPECT_EQ(s.view.generateSeed, 42u);
    EXPECT_FALSE(apply(s, action::SetGenerateSampled{true, -1, 0}));
    EXPECT_EQ(s.error, "generate: top-k must be 0 (every token) or more, got -1");
    EXPECT_EQ(s.view.generateTopK, 5);  // unchanged
    ASSERT_TRUE(apply(s, action::SetGenerateSampled{false}));
    EXPECT_FALSE(s.view.generateSampled);
    EXPECT_EQ(s.view.generateTopK, 0);
}

}  // namespace
}  // namespace attnviz::app
