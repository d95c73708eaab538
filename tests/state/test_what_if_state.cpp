// A model's what-if through the action layer, without a window: a head ablated (zero or mean), a
// token hidden, several at once, removed, undone and redone, cleared; each edit reruns only the
// layers from the first one it changes; the heads' maps moved; the saved session keeps the edits.
#include "app/state/actions.hpp"
#include "app/state/session.hpp"
#include "core/attention/compare.hpp"
#include "core/base/error.hpp"
#include "core/models/run_maps.hpp"
#include "core/scenario/scenario.hpp"
#include "tests/sized_gpt2.hpp"
#include "tests/test_folder.hpp"
#include "tests/tiny_gpt2.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using namespace attnviz;
using namespace attnviz::app;
using Kind = core::decoder::Intervention::Kind;

namespace {

class WhatIfState : public testfs::TestFolder {
protected:
    AppState open(int layers = tinygpt2::kLayers) {
        if (layers == tinygpt2::kLayers) tinygpt2::writeCheckpoint(m_dir, tinygpt2::weights(7));
        else sizedgpt2::writeCheckpoint(m_dir, {layers, 2, 16, 32});
        core::Scenario s;
        s.model = m_dir.string();
        s.sentence = " the cat sat";
        s.causal = true;
        AppState state = makeState(s);
        recompute(state);
        return state;
    }
};

TEST_F(WhatIfState, AblatingAHeadRerunsFromItsLayerAndShowsThePassAfter) {
    AppState s = open();
    const auto base = s.loaded.base;
    ASSERT_TRUE(apply(s, action::AblateHead{1, 0, false}));
    EXPECT_TRUE(s.error.empty()) << s.error;
    ASSERT_TRUE(s.loaded.edited());
    EXPECT_EQ(s.loaded.base, base);  // the plain pass is kept, not rerun
    EXPECT_EQ(s.loaded.forwardPasses, 1);
    EXPECT_EQ(s.loaded.run->computedFrom(), 1);
    EXPECT_EQ(s.loaded.editedLayers, 1);
    EXPECT_EQ(s.scenario.ablations, (std::vector<core::HeadAblation>{{1, 0, false}}));
    // The next tokens are the pass after's; the table compares them with before.
    EXPECT_EQ(s.loaded.next[0].id, core::decoder::topNext(s.loaded.run->logits, 1.0f, 1)[0].id);
    ASSERT_FALSE(s.loaded.nextChanges.empty());
    for (std::size_t i = 1; i < s.loaded.nextChanges.size(); ++i)
        EXPECT_GE(std::abs(s.loaded.nextChanges[i - 1].deltaLogProb), std::abs(s.loaded.nextChanges[i].deltaLogProb));
    // Heads below the ablated layer did not move; the ablated layer's own maps neither (the
    // ablation changes what the head writes, not what its layer reads); the summary says so.
    const std::vector<double> moved = whatIfMoved(s);
    ASSERT_EQ(moved.size(), static_cast<std::size_t>(tinygpt2::kLayers * tinygpt2::kHeads));
    for (double m : moved) EXPECT_EQ(m, 0.0);
    EXPECT_EQ(whatIfDifference(s, 1, 0).cwiseAbs().maxCoeff(), 0.0f);
}

TEST_F(WhatIfState, AHiddenTokenMovesEveryLayerAndTheShownLayerHatchesIt) {
    AppState s = open();
    ASSERT_TRUE(apply(s, action::HideToken{2}));
    ASSERT_TRUE(s.loaded.edited());
    EXPECT_EQ(s.loaded.run->computedFrom(), 0);
    EXPECT_EQ(s.settings.paddedKeys, std::vector<int>{2});
    recompute(s);
    // The shown layer as a scenario gives the edited pass's weights: column 2 empty, rows sum to 1.
    const auto t = s.model.tq();
    for (int h = 0; h < s.model.heads; ++h) {
        const core::Mat& w = s.forward.heads[static_cast<std::size_t>(h)].weights;
        EXPECT_LT((w - core::Mat(s.loaded.run->weights(0, h))).cwiseAbs().maxCoeff(), 1e-6f);
        for (Eigen::Index i = 0; i < t; ++i) {
            EXPECT_EQ(w(i, 2), 0.0f);
            EXPECT_NEAR(w.row(i).sum(), 1.0f, 1e-5f);
        }
    }
    const std::vector<double> allMoved = whatIfMoved(s);
    ASSERT_EQ(allMoved.size(), static_cast<std::size_t>(tinygpt2::kLayers * tinygpt2::kHeads));
    // Every head's rows from query 2 on moved (their key 2 lost its weight); earlier rows did not.
    const core::AttentionMaps before = core::runMaps(*s.loaded.base, s.loaded.checkpoint->config());
    const core::AttentionMaps after = core::runMaps(*s.loaded.run, s.loaded.checkpoint->config());
    EXPECT_EQ(after.layerSettings(0).paddedKeys, std::vector<int>{2});
    for (int l = 0; l < tinygpt2::kLayers; ++l)
        for (int h = 0; h < tinygpt2::kHeads; ++h) {
            const double moved = allMoved[static_cast<std::size_t>(l * tinygpt2::kHeads + h)];
            EXPECT_GT(moved, 0.0);
            EXPECT_DOUBLE_EQ(moved, core::mapMoved(before.weights(l, h), after.weights(l, h), core::samePositions(static_cast<int>(t))));
            const core::Mat d = whatIfDifference(s, l, h);
            EXPECT_EQ(d.topRows(2).cwiseAbs().maxCoeff(), 0.0f);
            EXPECT_LT(d(2, 2), 0.0f);  // query 2's weight on itself went to the keys before it
        }
}

TEST_F(WhatIfState, HidingTokenZeroLeavesQueryZeroReadingNothingWithoutNaN) {
    AppState s = open();
    ASSERT_TRUE(apply(s, action::HideToken{0}));
    recompute(s);
    for (int h = 0; h < s.model.heads; ++h) {
        const core::Mat& w = s.forward.heads[static_cast<std::size_t>(h)].weights;
        EXPECT_TRUE(w.allFinite());
        EXPECT_EQ(w.row(0).sum(), 0.0f);
    }
    EXPECT_TRUE(s.loaded.run->logits.allFinite());
    for (double m : whatIfMoved(s)) EXPECT_TRUE(std::isfinite(m));
}

TEST_F(WhatIfState, EditsCombineAndAreRemovedUndoneRedoneAndCleared) {
    AppState s = open();
    ASSERT_TRUE(apply(s, action::AblateHead{1, 1, true}));
    ASSERT_TRUE(apply(s, action::HideToken{1}));
    ASSERT_TRUE(apply(s, action::AblateHead{0, 0, false}));
    EXPECT_EQ(core::interventions(s.scenario),
              (std::vector<core::decoder::Intervention>{{Kind::MeanHead, 1, 1, 0}, {Kind::ZeroHead, 0, 0, 0}, {Kind::HideToken, 0, 0, 1}}));
    EXPECT_EQ(s.whatIf.undo.size(), 3u);
    // The same head the other way replaces its edit; the same way changes nothing.
    ASSERT_TRUE(apply(s, action::AblateHead{1, 1, false}));
    EXPECT_EQ(s.scenario.ablations, (std::vector<core::HeadAblation>{{0, 0, false}, {1, 1, false}}));
    ASSERT_TRUE(apply(s, action::AblateHead{1, 1, false}));
    EXPECT_EQ(s.whatIf.undo.size(), 4u);
    const std::vector<float> four(s.loaded.run->logits.data(), s.loaded.run->logits.data() + s.loaded.run->logits.size());
    // Remove the hidden token (index 2: after the two ablations).
    ASSERT_TRUE(apply(s, action::RemoveWhatIfEdit{2}));
    EXPECT_TRUE(s.scenario.hiddenTokens.empty());
    EXPECT_EQ(s.loaded.run->computedFrom(), 0);
    EXPECT_FALSE(apply(s, action::RemoveWhatIfEdit{5}));
    EXPECT_EQ(s.error, "what-if: no edit 5 (2 in the list)");
    // Undo brings the token back, with the same numbers as before.
    ASSERT_TRUE(apply(s, action::UndoWhatIf{}));
    EXPECT_EQ(s.scenario.hiddenTokens, std::vector<int>{1});
    EXPECT_EQ(std::vector<float>(s.loaded.run->logits.data(), s.loaded.run->logits.data() + s.loaded.run->logits.size()), four);
    ASSERT_TRUE(apply(s, action::RedoWhatIf{}));
    EXPECT_TRUE(s.scenario.hiddenTokens.empty());
    ASSERT_TRUE(apply(s, action::ClearWhatIf{}));
    EXPECT_FALSE(s.loaded.edited());
    EXPECT_EQ(s.loaded.run, s.loaded.base);
    EXPECT_TRUE(s.loaded.nextChanges.empty());
    EXPECT_TRUE(whatIfMoved(s).empty());
    // Undo walks back through every list; a new edit forgets the redo history.
    while (!s.whatIf.undo.empty()) ASSERT_TRUE(apply(s, action::UndoWhatIf{}));
    EXPECT_TRUE(whatIfEdits(s.scenario).empty());
    EXPECT_EQ(s.whatIf.redo.size(), 6u);
    ASSERT_TRUE(apply(s, action::HideToken{2}));
    EXPECT_TRUE(s.whatIf.redo.empty());
    // Another layer shown keeps the edits and their history.
    ASSERT_TRUE(apply(s, action::SelectLayer{1}));
    EXPECT_EQ(s.scenario.hiddenTokens, std::vector<int>{2});
    EXPECT_EQ(s.whatIf.undo.size(), 1u);
    // A new sentence drops the hidden tokens (positions of another text) and the history.
    ASSERT_TRUE(apply(s, action::SetSentence{" the dog"}));
    EXPECT_TRUE(s.scenario.hiddenTokens.empty());
    EXPECT_TRUE(s.whatIf.undo.empty());
}

TEST_F(WhatIfState, BadEditsAreRefusedWithAMessageAndTheStateStays) {
    AppState s = open();
    EXPECT_FALSE(apply(s, action::AblateHead{2, 0, false}));
    EXPECT_EQ(s.error, "ablate: 2.0 is outside this model's layers 0 … 1 and heads 0 … 1");
    EXPECT_FALSE(apply(s, action::HideToken{-1}));
    EXPECT_FALSE(s.loaded.edited());
    EXPECT_TRUE(s.whatIf.undo.empty());
    ASSERT_TRUE(apply(s, action::UndoWhatIf{}));  // nothing to undo: no change
    // A scenario has no model to edit.
    core::Scenario plain;
    plain.sentence = "a b c";
    AppState scenario = makeState(plain);
    EXPECT_FALSE(apply(scenario, action::AblateHead{0, 0, false}));
    EXPECT_EQ(scenario.error, "ablate: a what-if edits a model's pass: open a model (--model DIR or a scenario's \"model\")");
}

TEST_F(WhatIfState, AnEditInALateLayerComputesOnlyTheLayersFromIt) {
    AppState s = open(12);
    ASSERT_EQ(s.loaded.layers(), 12);
    ASSERT_TRUE(apply(s, action::AblateHead{9, 1, false}));
    EXPECT_EQ(s.loaded.run->computedFrom(), 9);
    EXPECT_EQ(s.loaded.editedLayers, 3);  // layers 9, 10 and 11
    ASSERT_TRUE(apply(s, action::AblateHead{11, 0, true}));
    EXPECT_EQ(s.loaded.editedLayers, 3 + 1);  // from layer 11, over the pass with 9.1 ablated
    EXPECT_EQ(s.loaded.run->weights(3, 0).data(), s.loaded.base->weights(3, 0).data());
    ASSERT_TRUE(apply(s, action::UndoWhatIf{}));
    EXPECT_EQ(s.loaded.editedLayers, 3 + 1 + 1);  // undo reruns layer 11 only
    EXPECT_EQ(s.loaded.run->computedFrom(), 11);
    EXPECT_EQ(s.loaded.forwardPasses, 1);
}

TEST_F(WhatIfState, ASavedSessionKeepsTheEdits) {
    AppState s = open();
    ASSERT_TRUE(apply(s, action::AblateHead{1, 0, false}));
    ASSERT_TRUE(apply(s, action::AblateHead{0, 1, true}));
    ASSERT_TRUE(apply(s, action::HideToken{2}));
    const nlohmann::json j = core::scenarioToJson(s.scenario);
    EXPECT_EQ(j["ablate"], nlohmann::json::array({"1.0"}));
    EXPECT_EQ(j["ablate_mean"], nlohmann::json::array({"0.1"}));
    EXPECT_EQ(j["hide_tokens"], nlohmann::json::array({2}));
    const core::Scenario back = core::scenarioFromJson(j);
    EXPECT_EQ(back.ablations, s.scenario.ablations);
    EXPECT_EQ(back.hiddenTokens, s.scenario.hiddenTokens);
    AppState reopened = makeState(back);
    EXPECT_EQ(reopened.loaded.run->logits, s.loaded.run->logits);
    // The keys belong to a model's scenario, and name what is wrong.
    const auto error = [](const nlohmann::json& bad) {
        try {
            (void)core::scenarioFromJson(bad);
        } catch (const core::InputError& e) {
            return e.message();
        }
        return std::string("(read)");
    };
    EXPECT_EQ(error({{"sentence", "a b"}, {"ablate", {"0.0"}}}), "ablate: only with \"model\" (a what-if edits a model's pass)");
    EXPECT_EQ(error({{"model", "m"}, {"ablate", {"0-1"}}}),
              "ablate[0]: expected a head as \"L.H\" (layer.head, from 0: \"3.5\"), got the text '0-1'");
    EXPECT_EQ(error({{"model", "m"}, {"hide_tokens", {-1}}}), "hide_tokens[0]: positions must be 0 or more");
    EXPECT_EQ(error({{"model", "m"}, {"layer", 3000000000LL}}), "layer: expected a layer from 0 to 4096, got 3000000000");
    EXPECT_EQ(error({{"model", "m"}, {"layer", -1}}), "layer: expected a layer from 0 to 4096, got -1");
}

}  // namespace
