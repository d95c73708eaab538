// --max-tokens and --max-memory in the window: a sentence typed for a model that passes either
// limit is refused with a message naming the flag, and the pass before stays on screen.
#include "app/state/actions.hpp"
#include "core/models/loaded_model.hpp"
#include "tests/sized_gpt2.hpp"
#include "tests/test_folder.hpp"
#include "tests/tiny_gpt2.hpp"

#include <gtest/gtest.h>

#include <string>

using namespace attnviz;
using namespace attnviz::app;

namespace {

using IgnoredLimits = testfs::TestFolder;

AppState openModel(const std::string& folder, const std::string& sentence, const core::Limits& limits) {
    core::Scenario s;
    s.model = core::modelFolder(folder);
    s.sentence = sentence;
    s.causal = true;
    AppState state = makeState(s, limits);
    recompute(state);
    return state;
}

TEST_F(IgnoredLimits, ASentenceTypedPastMaxTokensKeepsThePassBefore) {
    tinygpt2::writeCheckpoint(m_dir, tinygpt2::weights(7));
    core::Limits limits;
    limits.maxTokens = 5;
    AppState s = openModel(m_dir.string(), "aaaa", limits);
    const auto run = s.loaded.run;
    ASSERT_TRUE(apply(s, action::SetSentence{"aaaaa"}));  // at the limit
    EXPECT_EQ(s.model.tq(), 5);
    const auto atLimit = s.loaded.run;
    EXPECT_FALSE(apply(s, action::SetSentence{"aaaaaa"}));
    EXPECT_EQ(s.error, "sentence: 6 tokens (read by the model's tokenizer) are over the limit of 5 (--max-tokens)");
    EXPECT_EQ(s.loaded.run, atLimit);
    EXPECT_EQ(s.model.tq(), 5);
    EXPECT_EQ(s.scenario.sentence, "aaaaa");
    recompute(s);  // the state on screen still computes
    EXPECT_TRUE(isFresh(s));
    EXPECT_NE(run, nullptr);
}

TEST_F(IgnoredLimits, ASentenceTypedPastMaxMemoryKeepsThePassBefore) {
    // 4 heads of width 64, 256 positions: 8 tokens need about 2.1 MiB (the shown layer's weights
    // are most of it), 200 need over 4 (the heads' 200 x 200 maps in the pass and the layer).
    sizedgpt2::writeCheckpoint(m_dir, {1, 4, 256, 256});
    core::Limits limits;
    limits.maxBytes = 4ULL << 20;
    AppState s = openModel(m_dir.string(), std::string(8, 'a'), limits);
    ASSERT_EQ(s.model.tq(), 8);
    const auto run = s.loaded.run;
    EXPECT_FALSE(apply(s, action::SetSentence{std::string(200, 'a')}));
    EXPECT_EQ(s.error.rfind("sentence: 200 tokens need about ", 0), 0u) << s.error;
    EXPECT_NE(s.error.find("over the limit of 4.0 MiB (--max-memory)"), std::string::npos) << s.error;
    EXPECT_EQ(s.loaded.run, run);
    EXPECT_EQ(s.model.tq(), 8);
    recompute(s);
    EXPECT_TRUE(isFresh(s));
}

}  // namespace
