// Comparing two sentences through actions, without a window: the other sentence's pass made once
// per pass and text, its tokens lined up, and every head's "moved" equal to the total variation
// written out here over a pass made independently of the state's.
#include "app/state/actions.hpp"
#include "app/state/compare_view.hpp"
#include "app/state/head_summary.hpp"
#include "app/state/model_view.hpp"
#include "core/models/pass_maps.hpp"
#include "tests/state/ready_state.hpp"
#include "tests/test_folder.hpp"
#include "tests/tiny_gpt2.hpp"
#include "tests/tiny_llama.hpp"

#include <gtest/gtest.h>

#include <cmath>

using namespace attnviz;
using namespace attnviz::app;

namespace {

// ½ Σ_j |a_ij − b_ij| averaged over rows, every position its own partner (same-length inputs).
double movedByHand(const core::Mat& a, const core::Mat& b) {
    double total = 0.0;
    for (Eigen::Index i = 0; i < a.rows(); ++i) total += 0.5 * (a.row(i).cast<double>() - b.row(i).cast<double>()).cwiseAbs().sum();
    return total / static_cast<double>(a.rows());
}

TEST(CompareView, AScenarioOverAnotherSentenceOneWordChanged) {
    AppState s = attnviz::app::testing::ready("default");
    ASSERT_EQ(s.keyLabels.size(), 6U);  // the cat sat on the mat
    EXPECT_TRUE(refreshCompare(s));     // nothing asked: nothing made
    EXPECT_EQ(s.work.compares, 0);
    ASSERT_TRUE(apply(s, action::SetCompare{"the dog sat on the mat"}));
    EXPECT_FALSE(compareCurrent(s));
    ASSERT_TRUE(refreshCompare(s));
    ASSERT_TRUE(s.compare.ready()) << s.compare.why;
    EXPECT_EQ(s.work.compares, 1);
    EXPECT_EQ(s.compare.alignment.changed, 1);
    // The other sentence built independently, as the state would build it.
    core::Scenario other = s.scenario;
    other.sentence = "the dog sat on the mat";
    AppState b = makeState(other);
    recompute(b);
    ASSERT_EQ(s.compare.moved.size(), s.forward.heads.size());
    for (std::size_t h = 0; h < s.forward.heads.size(); ++h) {
        const double want = movedByHand(s.forward.heads[h].weights, b.forward.heads[h].weights);
        EXPECT_NEAR(s.compare.moved[h], want, 1e-6) << "head " << h;
        EXPECT_GT(want, 1e-3);  // random heads all move when a word's embedding changes
    }
    // Frames and view changes make nothing new; the model view reads "moved" from it.
    for (int frame = 0; frame < 3; ++frame) EXPECT_TRUE(refreshCompare(s));
    ASSERT_TRUE(apply(s, action::SelectHead{2}));
    EXPECT_TRUE(refreshCompare(s));
    EXPECT_EQ(s.work.compares, 1);
    ASSERT_TRUE(summarizeHeads(s));
    const auto scores = summaryScores(s, core::HeadScore::Moved);
    ASSERT_TRUE(scores);
    EXPECT_EQ(*scores, s.compare.moved);
    // A new τ: both passes follow it.
    ASSERT_TRUE(apply(s, action::SetTemperature{0.5f}));
    recompute(s);
    ASSERT_TRUE(refreshCompare(s));
    EXPECT_EQ(s.work.compares, 2);
    EXPECT_FLOAT_EQ(s.compare.settings.temperature, 0.5f);
    // The same sentence: nothing moved.
    ASSERT_TRUE(apply(s, action::SetCompare{"the cat sat on the mat"}));
    ASSERT_TRUE(refreshCompare(s));
    EXPECT_TRUE(s.compare.alignment.identical());
    for (const double m : s.compare.moved) EXPECT_EQ(m, 0.0);
    // Stopping drops it.
    ASSERT_TRUE(apply(s, action::SetCompare{""}));
    EXPECT_TRUE(refreshCompare(s));
    EXPECT_FALSE(s.compare.ready());
    EXPECT_FALSE(summaryScores(s, core::HeadScore::Moved));
}

TEST(CompareView, AnInsertedWordLinesUpThePrefixAndSuffix) {
    AppState s = attnviz::app::testing::ready("default");
    ASSERT_TRUE(apply(s, action::SetCompare{"the cat sat on the red mat"}));
    ASSERT_TRUE(refreshCompare(s));
    ASSERT_TRUE(s.compare.ready()) << s.compare.why;
    EXPECT_EQ(s.compare.alignment.partner, (std::vector<int>{0, 1, 2, 3, 4, 6}));
    EXPECT_FALSE(s.compare.alignment.oneTokenChanged());
}

TEST(CompareView, AScenarioOfGivenVectorsIsRefused) {
    AppState s = attnviz::app::testing::ready("seed002-the-cat-sat");
    ASSERT_TRUE(s.scenario.x || s.scenario.q) << "the seed gives its vectors";
    EXPECT_FALSE(apply(s, action::SetCompare{"another sentence"}));
    EXPECT_NE(s.error.find("gives its vectors"), std::string::npos) << s.error;
    EXPECT_TRUE(s.view.compareText.empty());
}

class CompareModel : public testfs::TestFolder {};

TEST_F(CompareModel, EveryLayerOfTheModelsTwoPassesAndLayersKeepTheOtherPass) {
    tinygpt2::writeCheckpoint(m_dir, tinygpt2::weights(7));
    core::Scenario scenario;
    scenario.model = m_dir.string();
    scenario.sentence = " the the he then the";
    AppState s = makeState(scenario);
    recompute(s);
    ASSERT_TRUE(apply(s, action::SetCompare{" the the he them the"}));
    ASSERT_TRUE(refreshCompare(s));
    ASSERT_TRUE(s.compare.ready()) << s.compare.why;
    ASSERT_EQ(s.compare.loaded.checkpoint, s.loaded.checkpoint);  // one checkpoint, two passes
    const core::AttentionMaps a = core::passMaps(s.loaded), b = core::passMaps(s.compare.loaded);
    ASSERT_EQ(s.compare.moved.size(), static_cast<std::size_t>(tinygpt2::kLayers * tinygpt2::kHeads));
    ASSERT_EQ(s.loaded.run->ids.size(), s.compare.loaded.run->ids.size());  // "then" and "them": " the" + one byte
    EXPECT_TRUE(s.compare.alignment.oneTokenChanged());
    for (int l = 0; l < tinygpt2::kLayers; ++l)
        for (int h = 0; h < tinygpt2::kHeads; ++h) {
            const double got = s.compare.moved[static_cast<std::size_t>(l * tinygpt2::kHeads + h)];
            EXPECT_NEAR(got, movedByHand(a.weights(l, h), b.weights(l, h)), 1e-6);
            EXPECT_GE(got, 0.0);
            EXPECT_LE(got, 1.0);
        }
    // Another layer: the other pass is kept; the comparison is remade from it.
    const void* otherRun = s.compare.loaded.run.get();
    ASSERT_TRUE(apply(s, action::SelectLayer{1}));
    recompute(s);
    ASSERT_TRUE(refreshCompare(s));
    EXPECT_EQ(s.compare.loaded.run.get(), otherRun);
    EXPECT_EQ(compareLayer(s), 1);
}

TEST_F(CompareModel, InputsPastTheLongestComparedAreRefusedInOneLineWithoutAPass) {
    // One token a character: the shown input at the limit is compared; a longer compared sentence,
    // or a longer shown input, is refused with a reason and no pass is run for it.
    const nlohmann::json c = tinyllama::config("llama", {{"max_position_embeddings", 4096}});
    tinyllama::writeCheckpoint(m_dir, c, tinyllama::weights(c, 5), 1);
    core::Scenario scenario;
    scenario.model = m_dir.string();
    const std::string shorter(static_cast<std::size_t>(kCompareMostTokens) - 2, 'a');
    scenario.sentence = shorter;
    AppState s = makeState(scenario);
    recompute(s);
    ASSERT_TRUE(apply(s, action::SetCompare{shorter + "b"}));
    ASSERT_TRUE(refreshCompare(s));
    ASSERT_TRUE(s.compare.ready()) << s.compare.why;
    ASSERT_TRUE(apply(s, action::SetCompare{shorter + "bbbb"}));
    ASSERT_TRUE(refreshCompare(s));
    EXPECT_FALSE(s.compare.ready());
    EXPECT_FALSE(s.compare.loaded);  // no pass over it
    const std::size_t tokens = s.loaded.checkpoint->tokenizer().encode(shorter + "bbbb").size();
    ASSERT_GT(tokens, static_cast<std::size_t>(kCompareMostTokens));
    EXPECT_NE(s.compare.why.find("the compared sentence has " + std::to_string(tokens) + " tokens"), std::string::npos) << s.compare.why;
    EXPECT_NE(s.compare.why.find("up to " + std::to_string(kCompareMostTokens)), std::string::npos) << s.compare.why;
    scenario.sentence = shorter + "aaaa";
    AppState longer = makeState(scenario);
    recompute(longer);
    ASSERT_TRUE(apply(longer, action::SetCompare{"a short one"}));
    ASSERT_TRUE(refreshCompare(longer));
    EXPECT_FALSE(longer.compare.ready());
    EXPECT_NE(longer.compare.why.find("the shown input has " + std::to_string(longer.loaded.run->tokens()) + " tokens"), std::string::npos)
        << longer.compare.why;
}

}  // namespace
