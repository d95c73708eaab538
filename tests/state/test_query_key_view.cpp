// The query–key view through actions, without a window: made once per pass, layer and head from
// the q and k the head reads; a checkpoint's kept q and k give the same map as its layer rebuilt as
// a scenario (another path: the layer's weights projected again).
#include "app/state/actions.hpp"
#include "app/state/query_key_view.hpp"
#include "tests/state/ready_state.hpp"
#include "tests/test_folder.hpp"
#include "tests/tiny_gpt2.hpp"

#include <gtest/gtest.h>

using namespace attnviz;
using namespace attnviz::app;

namespace {

float gap(const core::Mat& a, const core::Mat& b) { return (a - b).cwiseAbs().maxCoeff(); }

TEST(QueryKeyView, MadeOncePerPassAndHeadNotPerFrame) {
    AppState s = attnviz::app::testing::ready("seed000-four-heads");
    ASSERT_TRUE(apply(s, action::SelectHead{1}));
    EXPECT_FALSE(queryKeyCurrent(s));
    EXPECT_EQ(shownQueryKeyMap(s), nullptr);
    ASSERT_TRUE(refreshQueryKeyMap(s));
    const core::QueryKeyMap* map = shownQueryKeyMap(s);
    ASSERT_NE(map, nullptr);
    EXPECT_EQ(s.work.queryKeyMaps, 1);
    const core::HeadTensors& h = s.forward.heads[1];
    EXPECT_EQ(map->queries, h.q.rows());
    EXPECT_EQ(gap(map->points, core::queryKeyMap(h.q, h.k).points), 0.0f);
    // Frames, a query picked, hovering: nothing new.
    for (int frame = 0; frame < 5; ++frame) EXPECT_TRUE(refreshQueryKeyMap(s));
    ASSERT_TRUE(apply(s, action::SelectQuery{2}));
    ASSERT_TRUE(apply(s, action::HoverToken{3, true}));
    EXPECT_EQ(s.view.hoverToken, 3);
    EXPECT_TRUE(s.view.hoverKey);
    ASSERT_TRUE(apply(s, action::HoverToken{99, false}));  // no such token: none
    EXPECT_EQ(s.view.hoverToken, -1);
    EXPECT_TRUE(refreshQueryKeyMap(s));
    EXPECT_EQ(s.work.queryKeyMaps, 1);
    // The selected query's strongest keys: its weights row, largest first.
    const std::vector<int> lines = queryKeyLines(s, 2, 3);
    ASSERT_FALSE(lines.empty());
    const core::RowVec row = h.weights.row(2);
    EXPECT_EQ(row.maxCoeff(), row(lines.front()));
    // Another head: a new map.
    ASSERT_TRUE(apply(s, action::SelectHead{3}));
    ASSERT_TRUE(refreshQueryKeyMap(s));
    EXPECT_EQ(s.work.queryKeyMaps, 2);
    EXPECT_EQ(gap(shownQueryKeyMap(s)->points, core::queryKeyMap(s.forward.heads[3].q, s.forward.heads[3].k).points), 0.0f);
    // A new pass (τ changes the weights, not q or k, but the pass is new): made once the head is ready.
    ASSERT_TRUE(apply(s, action::SetTemperature{0.5f}));
    EXPECT_FALSE(queryKeyCurrent(s));
    recompute(s);
    ASSERT_TRUE(refreshQueryKeyMap(s));
    EXPECT_EQ(s.work.queryKeyMaps, 3);
    // The mean over heads has no map, and says so.
    ASSERT_TRUE(apply(s, action::SelectHead{-1}));
    ASSERT_TRUE(refreshQueryKeyMap(s));
    EXPECT_EQ(shownQueryKeyMap(s), nullptr);
    EXPECT_NE(s.queryKey.why.find("one head"), std::string::npos);
    EXPECT_TRUE(queryKeyLines(s, 0, 8).empty());
}

class QueryKeyModel : public testfs::TestFolder {};

TEST_F(QueryKeyModel, TheKeptQAndKOfTheSelectedLayer) {
    tinygpt2::writeCheckpoint(m_dir, tinygpt2::weights(7));
    core::Scenario scenario;
    scenario.model = m_dir.string();
    scenario.sentence = " the the he then the";
    scenario.causal = true;
    AppState s = makeState(scenario);
    recompute(s);
    ASSERT_TRUE(s.loaded);
    for (int l = 0; l < tinygpt2::kLayers; ++l) {
        ASSERT_TRUE(apply(s, action::SelectLayer{l}));
        recompute(s);
        for (int h = 0; h < tinygpt2::kHeads; ++h) {
            ASSERT_TRUE(apply(s, action::SelectHead{h}));
            ASSERT_TRUE(refreshQueryKeyMap(s));
            const core::QueryKeyMap* map = shownQueryKeyMap(s);
            ASSERT_NE(map, nullptr) << s.queryKey.why;
            // The layer as a scenario model projects the layer's normed input again.
            const core::HeadTensors& t = s.forward.heads[static_cast<std::size_t>(h)];
            const core::QueryKeyMap again = core::queryKeyMap(t.q, t.k);
            EXPECT_LT(gap(map->points, again.points), 2e-3f * std::max(1.0f, again.points.cwiseAbs().maxCoeff()))
                << "layer " << l << " head " << h;
            EXPECT_NE(queryKeyCaption(s).find("Layer " + std::to_string(l + 1)), std::string::npos);
        }
    }
    EXPECT_EQ(s.work.queryKeyMaps, tinygpt2::kLayers * tinygpt2::kHeads);
    // The lines read the pass's weights of the layer and head.
    const core::RowVec row = queryKeyWeights(s, 4);
    ASSERT_EQ(row.size(), s.loaded.run->tokens());
    EXPECT_EQ(gap(row, s.loaded.run->weights(tinygpt2::kLayers - 1, tinygpt2::kHeads - 1).row(4)), 0.0f);
    EXPECT_EQ(s.loaded.forwardPasses, 1);
}

}  // namespace
