// Leaving out the first key (ViewState::skipFirstKey): set by its action and by --skip-first-key
// through the request, and nothing else changed.
#include "app/state/actions.hpp"
#include "app/state/head_summary.hpp"
#include "app/state/launch.hpp"
#include "tests/state/ready_state.hpp"

#include <gtest/gtest.h>

namespace attnviz::app {
namespace {

TEST(SkipFirstKey, TheActionSetsAndClearsIt) {
    AppState state = testing::ready();
    EXPECT_FALSE(state.view.skipFirstKey);
    const auto version = state.dataVersion;
    EXPECT_TRUE(apply(state, action::SetSkipFirstKey{true}));
    EXPECT_TRUE(state.view.skipFirstKey);
    EXPECT_EQ(state.dataVersion, version);  // a view of the same weights: nothing recomputed
    EXPECT_TRUE(apply(state, action::SetSkipFirstKey{false}));
    EXPECT_FALSE(state.view.skipFirstKey);
}

TEST(SkipFirstKey, TheRequestTurnsItOn) {
    ViewState saved;
    GuiRequest request;
    EXPECT_FALSE(requestedView(request, saved).skipFirstKey);
    request.skipFirstKey = true;
    EXPECT_TRUE(requestedView(request, saved).skipFirstKey);
    saved.skipFirstKey = true;  // a saved view keeps it when the flag is not given
    EXPECT_TRUE(requestedView(GuiRequest{}, saved).skipFirstKey);
}

TEST(FirstTokens, TheActionSetsKAndTheStatisticsAreMadeAgainWithIt) {
    AppState state = testing::ready();
    ASSERT_TRUE(summarizeHeads(state));
    const PassKey before = *state.headSummary.key;
    EXPECT_EQ(before.firstTokens, 4);
    EXPECT_FALSE(apply(state, action::SetFirstTokens{0}));  // at least one token
    EXPECT_FALSE(apply(state, action::SetFirstTokens{kMaxFirstTokens + 1}));
    EXPECT_EQ(state.view.firstTokens, 4);
    EXPECT_TRUE(apply(state, action::SetFirstTokens{1}));
    EXPECT_FALSE(headSummaryCurrent(state));  // k is part of what the summary was made of
    ASSERT_TRUE(summarizeHeads(state));
    const core::AttentionMaps maps = attentionMaps(state);
    const std::vector<core::HeadStats> want = core::allHeadStats(maps, {.skipFirstKey = false, .firstTokens = 1});
    ASSERT_EQ(state.headSummary.stats.size(), want.size());
    for (std::size_t k = 0; k < want.size(); ++k) EXPECT_DOUBLE_EQ(state.headSummary.stats[k].firstK, want[k].firstK) << k;
    // --first-tokens sets it for the window; not given, the view keeps its own.
    GuiRequest request;
    EXPECT_EQ(requestedView(request, ViewState{}).firstTokens, 4);
    request.firstTokens = 9;
    EXPECT_EQ(requestedView(request, ViewState{}).firstTokens, 9);
}

}  // namespace
}  // namespace attnviz::app
