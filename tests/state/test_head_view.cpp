// The head view's and the neuron view's state: which heads and tokens are picked (through the
// actions), the layer a model shows, and a score taken apart term by term. Without a window.
#include "app/state/actions.hpp"
#include "app/state/head_summary.hpp"
#include "app/state/head_view.hpp"
#include "core/attention/head_lines.hpp"
#include "core/models/loaded_model.hpp"
#include "tests/state/ready_state.hpp"
#include "tests/test_folder.hpp"
#include "tests/tiny_llama.hpp"

#include <gtest/gtest.h>

#include <cmath>

using namespace attnviz;
using namespace attnviz::app;

namespace {

TEST(HeadViewState, DefaultHeadsFollowTheSelection) {
    AppState s = app::testing::ready("seed000-four-heads");
    ASSERT_EQ(s.model.heads, 4);
    ASSERT_TRUE(apply(s, action::SelectHead{2}));
    EXPECT_EQ(headViewHeads(s), std::vector<int>{2});
    ASSERT_TRUE(apply(s, action::SelectHead{-1}));  // the mean: every head of the layer
    EXPECT_EQ(headViewHeads(s), (std::vector<int>{0, 1, 2, 3}));
}

TEST(HeadViewState, SwatchesToggleHeadsAndTheLastStaysOn) {
    AppState s = app::testing::ready("seed000-four-heads");
    ASSERT_TRUE(apply(s, action::SelectHead{1}));
    ASSERT_TRUE(apply(s, action::ToggleViewHead{3}));  // starts from the default, {1}
    EXPECT_EQ(s.view.viewHeads, (std::vector<int>{1, 3}));
    ASSERT_TRUE(apply(s, action::ToggleViewHead{0}));
    EXPECT_EQ(headViewHeads(s), (std::vector<int>{0, 1, 3}));
    ASSERT_TRUE(apply(s, action::ToggleViewHead{1}));
    ASSERT_TRUE(apply(s, action::ToggleViewHead{3}));
    EXPECT_EQ(headViewHeads(s), std::vector<int>{0});
    ASSERT_TRUE(apply(s, action::ToggleViewHead{0}));  // the last one stays on
    EXPECT_EQ(headViewHeads(s), std::vector<int>{0});
    EXPECT_FALSE(apply(s, action::ToggleViewHead{4}));
    EXPECT_NE(s.error.find("head view"), std::string::npos);
    ASSERT_TRUE(apply(s, action::SetViewHeads{{3, 1, 3}}));
    EXPECT_EQ(headViewHeads(s), (std::vector<int>{1, 3}));
    ASSERT_TRUE(apply(s, action::SetViewHeads{{}}));  // back to the selected head
    EXPECT_EQ(headViewHeads(s), std::vector<int>{1});
}

TEST(HeadViewState, ClickIsolatesATokenAndShiftClickAddsOthers) {
    AppState s = app::testing::ready("default");
    ASSERT_GE(s.model.tq(), 4);
    ASSERT_TRUE(apply(s, action::PickViewToken{2, false}));
    EXPECT_EQ(s.view.viewTokens, std::vector<int>{2});
    EXPECT_EQ(s.view.selectedQuery, 2);
    ASSERT_TRUE(apply(s, action::PickViewToken{0, true}));
    ASSERT_TRUE(apply(s, action::PickViewToken{3, true}));
    EXPECT_EQ(s.view.viewTokens, (std::vector<int>{0, 2, 3}));
    ASSERT_TRUE(apply(s, action::PickViewToken{2, true}));  // shift-click again: out
    EXPECT_EQ(s.view.viewTokens, (std::vector<int>{0, 3}));
    ASSERT_TRUE(apply(s, action::PickViewToken{3, false}));  // a plain click: it alone
    EXPECT_EQ(s.view.viewTokens, std::vector<int>{3});
    ASSERT_TRUE(apply(s, action::PickViewToken{3, false}));  // and again: none
    EXPECT_TRUE(s.view.viewTokens.empty());
    ASSERT_TRUE(apply(s, action::PickViewToken{1, true}));
    ASSERT_TRUE(apply(s, action::PickViewToken{2, true}));
    ASSERT_TRUE(apply(s, action::PickViewToken{-1, false}));  // clear
    EXPECT_TRUE(s.view.viewTokens.empty());
    EXPECT_FALSE(apply(s, action::PickViewToken{-1, true}));
    EXPECT_FALSE(apply(s, action::PickViewToken{static_cast<int>(s.model.tq()), false}));
}

TEST(HeadViewState, AHeatmapCellSelectsTheQueryAndTheKey) {
    AppState s = app::testing::ready("default");
    ASSERT_TRUE(apply(s, action::SelectCell{3, 1}));
    EXPECT_EQ(s.view.selectedQuery, 3);
    EXPECT_EQ(s.view.selectedKey, 1);
    EXPECT_FALSE(apply(s, action::SelectCell{0, static_cast<int>(s.model.tk())}));
    EXPECT_EQ(s.view.selectedKey, 1);
}

TEST(HeadViewState, PicksBeyondASmallerModelAreDropped) {
    AppState s = app::testing::ready("seed000-four-heads");
    ASSERT_TRUE(apply(s, action::SetViewHeads{{0, 3}}));
    ASSERT_TRUE(apply(s, action::SelectCell{2, 2}));
    ASSERT_TRUE(apply(s, action::PickViewToken{2, true}));
    ASSERT_TRUE(apply(s, action::SetHeads{2}));
    EXPECT_EQ(s.view.viewHeads, std::vector<int>{0});
    ASSERT_TRUE(apply(s, action::SetTokens{{"a", "b"}}));
    EXPECT_TRUE(s.view.viewTokens.empty());
    EXPECT_EQ(s.view.selectedKey, 1);
}

// Σ q_i[d] k_j[d] (+ ALiBi's penalty) is the score forward kept, and the softmax of the scaled
// scores over the readable keys is the row the panel draws.
void expectTermsAddUp(const AppState& s, int head, int query, int key) {
    const NeuronTerms t = neuronTerms(s, head, query, key);
    ASSERT_EQ(static_cast<int>(t.q.size()), s.model.dk);
    double sum = 0;
    for (std::size_t d = 0; d < t.product.size(); ++d) {
        EXPECT_EQ(t.product[d], t.q[d] * t.k[d]);
        sum += t.product[d];
    }
    const double tolerance = 1e-5 * std::max(1.0, std::abs(static_cast<double>(t.score)));
    EXPECT_NEAR(sum + t.alibi, t.score, tolerance) << "head " << head << " (" << query << ", " << key << ")";
    EXPECT_NEAR(t.dot + t.alibi, t.score, tolerance);
    const core::HeadTensors& h = s.forward.heads[static_cast<std::size_t>(head)];
    double largest = -1e300, total = 0;
    for (int j = 0; j < static_cast<int>(t.row.size()); ++j)
        if (!t.mask[static_cast<std::size_t>(j)]) largest = std::max(largest, static_cast<double>(h.scores(query, j)) * t.scale);
    for (int j = 0; j < static_cast<int>(t.row.size()); ++j)
        if (!t.mask[static_cast<std::size_t>(j)]) total += std::exp(static_cast<double>(h.scores(query, j)) * t.scale - largest);
    for (int j = 0; j < static_cast<int>(t.row.size()); ++j) {
        const double expected =
            t.mask[static_cast<std::size_t>(j)] ? 0.0 : std::exp(static_cast<double>(h.scores(query, j)) * t.scale - largest) / total;
        EXPECT_NEAR(t.row[static_cast<std::size_t>(j)], expected, 1e-5) << j;
    }
    const double c = (t.scaled ? 1.0 / std::sqrt(static_cast<double>(s.model.dk)) : 1.0) / t.temperature;
    EXPECT_NEAR(t.scale, c, 1e-6);
}

TEST(NeuronState, ScenarioTermsAddUpToTheKeptScore) {
    AppState s = app::testing::ready("seed000-four-heads");
    for (int h = 0; h < s.model.heads; ++h)
        for (int i = 0; i < static_cast<int>(s.model.tq()); ++i)
            for (int j = 0; j < static_cast<int>(s.model.tk()); ++j) expectTermsAddUp(s, h, i, j);
    // q is x W_Q's slice of this head: compare one element independently.
    const NeuronTerms t = neuronTerms(s, 1, 2, 0);
    double q0 = 0;
    for (Eigen::Index c = 0; c < s.model.x.cols(); ++c) q0 += static_cast<double>(s.model.x(2, c)) * s.model.wq(c, s.model.dk);
    EXPECT_NEAR(t.q[0], q0, 1e-5);
    EXPECT_EQ(t.vectors, "x W_Q, x W_K");
}

TEST(NeuronState, AlibiPenaltyIsATermOfTheScore) {
    AppState s = app::testing::ready("seed001-alibi");
    ASSERT_FALSE(s.model.alibiSlopes.empty());
    ASSERT_TRUE(apply(s, action::SetTemperature{0.5f}));
    recompute(s);
    const NeuronTerms t = neuronTerms(s, 0, 3, 0);
    EXPECT_LT(t.alibi, 0.0);
    for (int h = 0; h < s.model.heads; ++h) expectTermsAddUp(s, h, 3, 0);
}

class NeuronModelState : public testfs::TestFolder {};

TEST_F(NeuronModelState, RotatedNormedQwen3VectorsAddUpAndTheLayerIsTheSelectedOne) {
    const nlohmann::json config = tinyllama::config("qwen3");
    tinyllama::writeCheckpoint(m_dir, config, tinyllama::weights(config, 7));
    core::Scenario scenario;
    scenario.model = m_dir.string();
    scenario.sentence = " the cat sat on the mat";
    scenario.causal = true;
    AppState s = makeState(scenario);
    recompute(s);
    ASSERT_TRUE(apply(s, action::SelectLayer{1}));
    recompute(s);
    const NeuronTerms t = neuronTerms(s, 1, 4, 2);
    EXPECT_EQ(t.vectors, "x W_Q, x W_K, RMS-normed (q/k norm), rotated by RoPE at their positions");
    for (int h = 0; h < s.model.heads; ++h) expectTermsAddUp(s, h, 4, 2);
    // The head view reads the model's own pass, at the selected layer.
    const core::AttentionMaps maps = attentionMaps(s);
    ASSERT_TRUE(maps);
    EXPECT_EQ(headViewLayer(s, maps), 1);
    const core::HeadLines lines = core::headLines(maps, headViewLayer(s, maps), {1}, {4});
    ASSERT_FALSE(lines.lines.empty());
    for (const core::HeadLine& l : lines.lines) {
        EXPECT_LE(l.key, 4);  // causal: no line to a later key
        EXPECT_EQ(l.weight, s.loaded.run->weights(1, 1)(4, l.key));
    }
}

}  // namespace
