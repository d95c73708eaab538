// The rollout view through actions, without a window: R made once per pass, layer and rule, and
// equal to the product of each layer's ½·fused + ½·I written out here.
#include "app/state/actions.hpp"
#include "app/state/rollout_view.hpp"
#include "tests/state/ready_state.hpp"
#include "tests/test_folder.hpp"
#include "tests/tiny_gpt2.hpp"

#include <gtest/gtest.h>

using namespace attnviz;
using namespace attnviz::app;

namespace {

// (F + I) with rows ÷ their sums, F the mean or elementwise max of `heads`: the same as ½ F + ½ I
// renormalised.
Eigen::MatrixXd layerHat(const std::vector<core::Mat>& heads, bool max) {
    Eigen::MatrixXd f = heads.front().cast<double>();
    for (std::size_t h = 1; h < heads.size(); ++h) {
        if (max) f = f.cwiseMax(heads[h].cast<double>());
        else f += heads[h].cast<double>();
    }
    if (!max) f /= static_cast<double>(heads.size());
    f += Eigen::MatrixXd::Identity(f.rows(), f.cols());
    for (Eigen::Index i = 0; i < f.rows(); ++i) f.row(i) /= f.row(i).sum();
    return f;
}

std::vector<core::Mat> scenarioHeads(const AppState& s) {
    std::vector<core::Mat> heads;
    for (const core::HeadTensors& h : s.forward.heads) heads.push_back(h.weights);
    return heads;
}

double gap(const core::Mat& got, const Eigen::MatrixXd& want) { return (got.cast<double>() - want).cwiseAbs().maxCoeff(); }

TEST(RolloutView, MadeOncePerPassAndRuleNotPerFrame) {
    AppState s = attnviz::app::testing::ready("seed000-four-heads");
    EXPECT_EQ(shownRollout(s), nullptr);  // off by default
    ASSERT_TRUE(apply(s, action::SetRollout{true}));
    EXPECT_FALSE(rolloutCurrent(s));
    EXPECT_EQ(shownRollout(s), nullptr);
    ASSERT_TRUE(refreshRollout(s));
    ASSERT_NE(shownRollout(s), nullptr);
    EXPECT_EQ(s.work.rollouts, 1);
    // A scenario is one layer: R is that layer's Â.
    EXPECT_LT(gap(s.rollout.matrix, layerHat(scenarioHeads(s), false)), 1e-6);
    // Frames and view changes that do not touch the pass or the rule make nothing new.
    for (int frame = 0; frame < 5; ++frame) EXPECT_TRUE(refreshRollout(s));
    ASSERT_TRUE(apply(s, action::SelectQuery{2}));
    ASSERT_TRUE(apply(s, action::SelectHead{1}));
    EXPECT_TRUE(refreshRollout(s));
    EXPECT_EQ(s.work.rollouts, 1);
    // The rule: max over heads.
    ASSERT_TRUE(apply(s, action::SetRolloutHeads{core::RolloutHeads::Max}));
    EXPECT_FALSE(rolloutCurrent(s));
    ASSERT_TRUE(refreshRollout(s));
    EXPECT_EQ(s.work.rollouts, 2);
    EXPECT_LT(gap(s.rollout.matrix, layerHat(scenarioHeads(s), true)), 1e-6);
    EXPECT_GT(gap(s.rollout.matrix, layerHat(scenarioHeads(s), false)), 1e-3);  // the rules differ on these heads
    EXPECT_NE(rolloutCaption(s).find("max over heads"), std::string::npos);
    // A new pass (τ): not made until every head's weights are fresh again, then once.
    ASSERT_TRUE(apply(s, action::SetTemperature{0.5f}));
    EXPECT_FALSE(rolloutCurrent(s));
    EXPECT_FALSE(refreshRollout(s));
    EXPECT_EQ(shownRollout(s), nullptr);
    recompute(s);
    ASSERT_TRUE(refreshRollout(s));
    EXPECT_EQ(s.work.rollouts, 3);
    EXPECT_LT(gap(s.rollout.matrix, layerHat(scenarioHeads(s), true)), 1e-6);
    ASSERT_TRUE(apply(s, action::SetRollout{false}));
    EXPECT_EQ(shownRollout(s), nullptr);
}

class RolloutModel : public testfs::TestFolder {};

TEST_F(RolloutModel, UpToTheSelectedLayerOfTheModelsPass) {
    tinygpt2::writeCheckpoint(m_dir, tinygpt2::weights(7));
    core::Scenario scenario;
    scenario.model = m_dir.string();
    scenario.sentence = " the the he then the";
    scenario.causal = true;
    AppState s = makeState(scenario);
    recompute(s);
    ASSERT_TRUE(s.loaded);
    ASSERT_GE(tinygpt2::kLayers, 2);
    ASSERT_TRUE(apply(s, action::SetRollout{true}));
    const auto layerHeads = [&](int l) {
        std::vector<core::Mat> heads;
        for (int h = 0; h < tinygpt2::kHeads; ++h) heads.emplace_back(s.loaded.run->weights(l, h));
        return heads;
    };
    Eigen::MatrixXd want = layerHat(layerHeads(0), false);
    for (int l = 0; l < tinygpt2::kLayers; ++l) {
        ASSERT_TRUE(apply(s, action::SelectLayer{l}));
        recompute(s);
        ASSERT_TRUE(refreshRollout(s));
        if (l > 0) want = layerHat(layerHeads(l), false) * want;
        EXPECT_LT(gap(s.rollout.matrix, want), 1e-5) << "up to layer " << l;
        EXPECT_NE(rolloutCaption(s).find("up to layer " + std::to_string(l + 1)), std::string::npos);
    }
    EXPECT_EQ(s.work.rollouts, tinygpt2::kLayers);
    // Nothing flows from a later token.
    EXPECT_EQ(s.rollout.matrix.triangularView<Eigen::StrictlyUpper>().toDenseMatrix().cwiseAbs().maxCoeff(), 0.0f);
    // Back to a layer already seen: made again (one R is kept), from the same kept pass.
    ASSERT_TRUE(apply(s, action::SelectLayer{0}));
    recompute(s);
    ASSERT_TRUE(refreshRollout(s));
    EXPECT_EQ(s.work.rollouts, tinygpt2::kLayers + 1);
    EXPECT_EQ(s.loaded.forwardPasses, 1);
}

}  // namespace
