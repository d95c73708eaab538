// Leaving out the first key (ViewState::skipFirstKey): set by its action and by --skip-first-key
// through the request, and nothing else changed.
#include "app/state/actions.hpp"
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

}  // namespace
}  // namespace attnviz::app
