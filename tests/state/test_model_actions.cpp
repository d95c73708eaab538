// A state showing a model read from a checkpoint: the layer selector, typing, the softmax
// what-ifs on one layer, the next-token temperature, a saved session. Without a window.
#include "app/state/actions.hpp"
#include "app/state/session.hpp"
#include "core/models/loaded_model.hpp"
#include "core/scenario/presets.hpp"
#include "tests/test_folder.hpp"
#include "tests/tiny_gpt2.hpp"

#include <gtest/gtest.h>

using namespace attnviz;
using namespace attnviz::app;

namespace {

class ModelState : public testfs::TestFolder {
protected:
    AppState open(const std::string& sentence = " the the he then") {
        tinygpt2::writeCheckpoint(m_dir, tinygpt2::weights(7));
        core::Scenario s;
        s.model = m_dir.string();
        s.sentence = sentence;
        s.causal = true;
        AppState state = makeState(s);
        recompute(state);
        return state;
    }
};

TEST_F(ModelState, EveryViewShowsTheSelectedLayersWeights) {
    AppState s = open();
    ASSERT_TRUE(s.loaded);
    EXPECT_EQ(s.loaded.forwardPasses, 1);
    EXPECT_EQ(s.model.heads, tinygpt2::kHeads);
    for (int l = 0; l < tinygpt2::kLayers; ++l) {
        ASSERT_TRUE(apply(s, action::SelectLayer{l}));
        recompute(s);
        EXPECT_EQ(s.scenario.layer, l);
        for (int h = 0; h < tinygpt2::kHeads; ++h)
            EXPECT_EQ(s.forward.heads[static_cast<std::size_t>(h)].weights, s.loaded.run->weights(l, h));
    }
    EXPECT_EQ(s.loaded.forwardPasses, 1);  // a new layer is read from the kept pass
    EXPECT_EQ(s.loaded.appendedPasses, 0);
    EXPECT_FALSE(apply(s, action::SelectLayer{tinygpt2::kLayers}));
    EXPECT_EQ(s.error, "layer: 2 is outside 0 … 1");
    ASSERT_TRUE(apply(s, action::StepLayer{-5}));  // clamped to the first
    EXPECT_EQ(s.scenario.layer, 0);
}

TEST_F(ModelState, TypingMoreTextRunsOnlyTheNewPositions) {
    AppState s = open(" the the");
    ASSERT_TRUE(apply(s, action::SetSentence{" the the the"}));
    EXPECT_EQ(s.loaded.forwardPasses, 1);
    EXPECT_EQ(s.loaded.appendedPasses, 1);
    EXPECT_EQ(s.model.tq(), 3);
    EXPECT_EQ(s.queryLabels, (std::vector<std::string>{"␣the", "␣the", "␣the"}));
    // Typing on writes into the kept store: the earlier positions' weights do not move.
    const float* kept = s.loaded.run->weights(1, 1).data();
    ASSERT_TRUE(apply(s, action::SetSentence{" the the the the"}));
    EXPECT_EQ(s.loaded.appendedPasses, 2);
    EXPECT_EQ(s.loaded.run->weights(1, 1).data(), kept);
    EXPECT_EQ(s.model.tq(), 4);
    ASSERT_TRUE(apply(s, action::SetSentence{"x"}));  // nothing in common: a whole pass
    EXPECT_EQ(s.loaded.forwardPasses, 2);
    EXPECT_FALSE(apply(s, action::SetSentence{""}));
    EXPECT_EQ(s.error, "sentence: no tokens: type some text for the model to read");
    EXPECT_FALSE(apply(s, action::SetSentence{std::string(30, 'a')}));  // 30 tokens of one byte
    EXPECT_EQ(s.error, "sentence: 30 tokens are more than this model's 16 positions");
    // Refused before it is encoded: 16 tokens of at most 13 bytes ("<|endoftext|>") hold 208.
    EXPECT_FALSE(apply(s, action::SetSentence{std::string(209, 'a')}));
    EXPECT_EQ(s.error, "sentence: 209 bytes are more than this model's 16 positions can hold");
    EXPECT_EQ(s.model.tq(), 1);  // the last good sentence stays
}

TEST_F(ModelState, TheSoftmaxWhatIfsActOnTheShownLayerOnly) {
    AppState s = open();
    const core::Mat causal = s.forward.heads[1].weights;
    ASSERT_TRUE(apply(s, action::SetCausal{false}));
    recompute(s);
    const core::Mat& both = s.forward.heads[1].weights;
    EXPECT_GT(both(0, 3), 0.0f);  // the first token now reads the last
    for (Eigen::Index i = 0; i < both.rows(); ++i) EXPECT_NEAR(both.row(i).sum(), 1.0f, 1e-6f);
    EXPECT_EQ(s.loaded.run->weights(0, 1), causal);  // the model's own pass is untouched
    const float sharpest = s.forward.heads[1].weights.rowwise().maxCoeff().minCoeff();
    ASSERT_TRUE(apply(s, action::SetTemperature{0.01f}));
    recompute(s);
    EXPECT_GT(s.forward.heads[1].weights.rowwise().maxCoeff().minCoeff(), std::max(0.9f, sharpest));  // rows collapse
}

TEST_F(ModelState, TheNextTokensTemperatureIsAView) {
    AppState s = open();
    const long long projections = s.work.projections;
    ASSERT_EQ(s.nextProbs.size(), 10u);
    EXPECT_EQ(s.nextProbs[0], s.loaded.next[0].prob);  // τ = 1
    ASSERT_TRUE(apply(s, action::SetNextTemperature{0.5f}));
    EXPECT_FLOAT_EQ(s.view.nextTemperature, 0.5f);
    EXPECT_TRUE(isFresh(s));
    EXPECT_EQ(s.work.projections, projections);
    const auto colder = core::decoder::topNext(s.loaded.run->logits, 0.5f, 10);
    EXPECT_NEAR(s.nextProbs[0], colder[0].prob, 1e-7f);
    EXPECT_GT(s.nextProbs[0], s.loaded.next[0].prob);  // sharper
    // A new sentence keeps the chosen temperature.
    ASSERT_TRUE(apply(s, action::SetSentence{" the the"}));
    EXPECT_NEAR(s.nextProbs[0], core::decoder::topNext(s.loaded.run->logits, 0.5f, 1)[0].prob, 1e-7f);
    EXPECT_FALSE(apply(s, action::SetNextTemperature{0.0f}));
}

TEST_F(ModelState, ModelsFixedSettingsAreRefusedWithAMessage) {
    AppState s = open();
    EXPECT_FALSE(apply(s, action::SetHeads{3}));
    EXPECT_EQ(s.error, "heads: not with a model: the checkpoint fixes the tokens, sizes and weights");
    EXPECT_EQ(s.model.heads, tinygpt2::kHeads);
    // Leaving for a preset drops the model.
    ASSERT_TRUE(apply(s, action::LoadScenario{core::loadPreset("default"), "default", ""}));
    EXPECT_FALSE(s.loaded);
    EXPECT_FALSE(apply(s, action::SelectLayer{1}));
}

// What the window's dialogs do: the model opens on a worker thread while the state on screen
// stays, and is adopted when ready.
TEST_F(ModelState, AModelOpenedInTheBackgroundReplacesTheStateWhenReady) {
    tinygpt2::writeCheckpoint(m_dir, tinygpt2::weights(7));
    AppState s = makeState(core::loadPreset("default"));
    ASSERT_TRUE(apply(s, action::SetColormap{core::ColormapKind::Magma}));
    core::Scenario next;
    next.model = core::modelFolder(m_dir.string());
    next.sentence = " the the he then";
    next.causal = true;
    ASSERT_TRUE(apply(s, action::LoadScenario{next, "", "from/here.json", true}));
    EXPECT_TRUE(s.opening->active());
    EXPECT_EQ(s.opening->name(), m_dir.filename().string());
    EXPECT_FALSE(s.loaded);  // the preset is still on screen
    s.opening->wait();
    EXPECT_EQ(s.opening->fraction(), 1.0);
    ASSERT_TRUE(adoptOpenedModel(s));
    EXPECT_FALSE(s.opening->active());
    EXPECT_FALSE(adoptOpenedModel(s));  // once
    ASSERT_TRUE(s.loaded);
    EXPECT_EQ(s.error, "");
    EXPECT_EQ(s.sourcePath, "from/here.json");
    EXPECT_EQ(s.view.colormap, core::ColormapKind::Magma);  // what the user set stays
    recompute(s);
    // The same numbers as the model opened at once.
    AppState direct = makeState(next);
    recompute(direct);
    EXPECT_EQ(s.loaded.labels, direct.loaded.labels);
    EXPECT_EQ(s.forward.heads[1].weights, direct.forward.heads[1].weights);
    EXPECT_EQ(s.nextProbs, direct.nextProbs);
    // The model already open is not opened again: the load applies at once.
    next.sentence = " the";
    ASSERT_TRUE(apply(s, action::LoadScenario{next, "", "", true}));
    EXPECT_FALSE(s.opening->active());
    EXPECT_EQ(s.scenario.sentence, " the");
    EXPECT_EQ(s.loaded.run->ids, s.loaded.checkpoint->tokenizer().encode(" the"));
}

TEST_F(ModelState, ABrokenFolderOpenedInTheBackgroundKeepsTheStateAndSaysWhy) {
    tinygpt2::writeCheckpoint(m_dir, tinygpt2::weights(7), tinygpt2::configText({{"n_head", 3}}));
    AppState s = makeState(core::loadPreset("default"));
    const int heads = s.model.heads;
    core::Scenario next;
    next.model = core::modelFolder(m_dir.string());
    ASSERT_TRUE(apply(s, action::LoadScenario{next, "", "", true}));
    s.opening->wait();
    ASSERT_TRUE(adoptOpenedModel(s));
    EXPECT_FALSE(s.loaded);
    EXPECT_EQ(s.model.heads, heads);
    EXPECT_EQ(s.presetId, "");  // as before: makeState from a preset without its id
    EXPECT_EQ(s.error, (m_dir / "config.json").string() + ": n_head: 3 does not divide n_embd 8");
}

TEST_F(ModelState, ACancelOrAnotherLoadDropsTheOpeningUnderWay) {
    tinygpt2::writeCheckpoint(m_dir, tinygpt2::weights(7));
    AppState s = makeState(core::loadPreset("default"));
    core::Scenario next;
    next.model = core::modelFolder(m_dir.string());
    ASSERT_TRUE(apply(s, action::LoadScenario{next, "", "", true}));
    ASSERT_TRUE(apply(s, action::CancelOpening{}));
    EXPECT_FALSE(s.opening->active());
    EXPECT_FALSE(adoptOpenedModel(s));
    EXPECT_FALSE(s.loaded);
    // A preset chosen while a model opens wins: the model never replaces it.
    ASSERT_TRUE(apply(s, action::LoadScenario{next, "", "", true}));
    ASSERT_TRUE(apply(s, action::LoadScenario{core::loadPreset("default"), "default", ""}));
    EXPECT_FALSE(s.opening->active());
    EXPECT_FALSE(adoptOpenedModel(s));
    EXPECT_FALSE(s.loaded);
    EXPECT_EQ(s.presetId, "default");
}

TEST_F(ModelState, SwapsPermuteTheLayersInput) {
    AppState s = open();
    ASSERT_TRUE(apply(s, action::SetCausal{false}));
    const std::string third = s.queryLabels[3];
    ASSERT_TRUE(apply(s, action::SwapTokens{0, 3}));
    recompute(s);
    EXPECT_EQ(s.queryLabels.front(), third);
    EXPECT_TRUE(s.equivariance.holds(1e-4f)) << s.equivariance.maxWeightDiff();  // unmasked attention is permutation-equivariant
}

}  // namespace
