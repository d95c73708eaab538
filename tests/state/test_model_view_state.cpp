// The views of every head in state: the summary made once per pass (kept across view changes and
// a model's other layer, remade for new numbers), the model view's order and atlas, selecting a
// layer and head in one step, the preview of another layer, the induction test's job.
#include "app/state/actions.hpp"
#include "app/state/attribution.hpp"
#include "app/state/head_summary.hpp"
#include "app/state/model_view.hpp"
#include "core/base/error.hpp"
#include "ready_state.hpp"
#include "tests/test_folder.hpp"
#include "tests/tiny_gpt2.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <thread>

using namespace attnviz;
using namespace attnviz::app;

namespace {

TEST(ModelViewState, ScenarioSummaryWaitsForEveryHeadThenIsMadeOncePerPass) {
    AppState s = makeState(core::loadPreset("default"));
    ASSERT_GT(s.model.heads, 1);
    recomputeStep(s, 0, 0);  // the visible head only: the others are stale
    EXPECT_FALSE(summarizeHeads(s));
    EXPECT_FALSE(s.headSummary.key.has_value());
    recompute(s);
    ASSERT_TRUE(summarizeHeads(s));
    const core::HeadStats* made = s.headSummary.stats.data();
    EXPECT_EQ(s.headSummary.layers, 1);
    EXPECT_EQ(s.headSummary.heads, s.model.heads);
    // Frame after frame on the same pass: current, never made again.
    for (int frame = 0; frame < 5; ++frame) {
        recomputeStep(s, shownHead(s), 1);
        ASSERT_TRUE(headSummaryCurrent(s));
        ASSERT_TRUE(summarizeHeads(s));
        EXPECT_EQ(s.headSummary.stats.data(), made);
    }
    // A view change keeps it; new weights (the temperature) make it stale.
    ASSERT_TRUE(apply(s, action::SelectHead{1}));
    ASSERT_TRUE(apply(s, action::SetModelView{{core::BlockPooling::Max, core::TileOrder::Ranked, core::HeadScore::Self, true}}));
    EXPECT_TRUE(headSummaryCurrent(s));
    ASSERT_TRUE(apply(s, action::SetTemperature{0.5f}));
    recompute(s);
    EXPECT_FALSE(headSummaryCurrent(s));
    ASSERT_TRUE(summarizeHeads(s));
    EXPECT_TRUE(headSummaryCurrent(s));
}

TEST(ModelViewState, OrderFollowsTheScoreAndTheAtlasPlacesEachThumbnail) {
    AppState s = app::testing::ready("default");
    ASSERT_TRUE(summarizeHeads(s));
    const HeadSummary& sum = s.headSummary;
    ModelViewOptions options;
    options.order = core::TileOrder::Ranked;
    options.score = core::HeadScore::Previous;
    const TileLayout layout = modelViewLayout(s, options);
    ASSERT_TRUE(layout.scores);
    ASSERT_EQ(layout.order.size(), sum.stats.size());
    for (std::size_t k = 1; k < layout.order.size(); ++k)
        EXPECT_GE(sum.stats[static_cast<std::size_t>(layout.order[k - 1])].previous,
                  sum.stats[static_cast<std::size_t>(layout.order[k])].previous);
    EXPECT_EQ(layout.rule, "every head ranked by previous-token mass, largest first");
    // The induction test has not run: its order falls back to head order, with no rule.
    options.score = core::HeadScore::InductionTest;
    const TileLayout none = modelViewLayout(s, options);
    EXPECT_FALSE(none.scores);
    EXPECT_TRUE(none.rule.empty());
    for (std::size_t k = 0; k < none.order.size(); ++k) EXPECT_EQ(none.order[k], static_cast<int>(k));
    // The atlas: slot k's block is head order[k]'s thumbnail, texel for texel.
    const std::vector<float> atlas = thumbnailAtlas(sum, layout.order, core::BlockPooling::Max, tileCrop(s));
    const auto side = static_cast<std::size_t>(sum.side), sideKeys = static_cast<std::size_t>(sum.sideKeys);
    const std::size_t width = static_cast<std::size_t>(sum.heads) * sideKeys;
    ASSERT_EQ(atlas.size(), static_cast<std::size_t>(sum.layers) * side * width);
    for (std::size_t k = 0; k < layout.order.size(); ++k) {
        const float* tile = sum.thumbnail(layout.order[k], core::BlockPooling::Max);
        for (std::size_t r = 0; r < side; ++r)
            for (std::size_t c = 0; c < sideKeys; ++c)
                ASSERT_EQ(atlas[(k / static_cast<std::size_t>(sum.heads) * side + r) * width +
                                k % static_cast<std::size_t>(sum.heads) * sideKeys + c],
                          tile[r * sideKeys + c]);
    }
}

// Gemma 3 270M's 4 heads over 18 layers in a wide panel (900 × 500, labels 20 px, groups 10 px
// apart): one column makes tiles of 500 / 18 → 27 px; two groups of 9 layers side by side
// min((900 − 40 − 10) / 8, 500 / 9) → 55; three of 6 would make min((900 − 60 − 20) / 12, 500 / 6)
// → 68, less than a quarter above 55, so two it is. GPT-2's 12 × 12 in the same panel stays one
// group, as 18 layers do in a tall panel.
TEST(ModelViewState, FewHeadsOverManyLayersWrapIntoGroups) {
    EXPECT_EQ(tileGrid(18, 4, 1.0f, 900.0f, 500.0f, 20.0f, 10.0f), (TileGrid{.groups = 2, .perGroup = 9, .tile = 55.0f, .tileH = 55.0f}));
    // two groups of 6: (900 − 40 − 10) / 24 → 35 against one's min(880 / 12, 500 / 12) → 41
    EXPECT_EQ(tileGrid(12, 12, 1.0f, 900.0f, 500.0f, 20.0f, 10.0f), (TileGrid{.groups = 1, .perGroup = 12, .tile = 41.0f, .tileH = 41.0f}));
    EXPECT_EQ(tileGrid(18, 4, 1.0f, 300.0f, 1000.0f, 20.0f, 10.0f), (TileGrid{.groups = 1, .perGroup = 18, .tile = 55.0f, .tileH = 55.0f}));
    // 7 layers of one head in a low, wide panel, tiles twice as wide as high: the groups grow
    // while the tiles gain a quarter: 1 (tile 60 / 3.5 → 17), 2 of 4 (30), 3 of 3 (40), 4 of 2 (60); 5 would
    // be 4 groups of 2 again (never an empty group); 7 of 1 (120) is capped by the width,
    // (1000 − 6 · 10) / 7 → 134, and gains 2×: 7 groups, tiles 120 × 60.
    EXPECT_EQ(tileGrid(7, 1, 0.5f, 1000.0f, 60.0f, 0.0f, 10.0f), (TileGrid{.groups = 7, .perGroup = 1, .tile = 120.0f, .tileH = 60.0f}));
    EXPECT_EQ(tileGrid(7, 1, 0.5f, 300.0f, 60.0f, 0.0f, 10.0f).groups, 4);  // 7 of (300 − 60) / 7 → 34 < 60 · 1.25
}

TEST(ModelViewState, TileOrderSortsWithinLayersStablyAndNamesTheRule) {
    // 2 layers × 3 heads; ties keep head order.
    const std::vector<double> scores = {0.1, 0.5, 0.5, 0.9, 0.2, 0.4};
    EXPECT_EQ(core::tileOrder(2, 3, core::TileOrder::WithinLayer, scores), (std::vector<int>{1, 2, 0, 3, 5, 4}));
    EXPECT_EQ(core::tileOrder(2, 3, core::TileOrder::Ranked, scores), (std::vector<int>{3, 1, 2, 5, 4, 0}));
    EXPECT_EQ(core::tileOrder(2, 3, core::TileOrder::Natural, scores), (std::vector<int>{0, 1, 2, 3, 4, 5}));
    EXPECT_EQ(core::orderRule(core::TileOrder::WithinLayer, core::HeadScore::Previous, core::HeadScore::Previous),
              "sorted by previous-token mass within each layer; tint = previous");
    EXPECT_EQ(core::parseHeadScore("entropy-share", "--x"), core::HeadScore::EntropyShare);
    EXPECT_THROW(core::parseHeadScore("prev", "--x"), core::InputError);
}

TEST(ModelViewState, TintStrengthsShareTheLargestOrAreSignedBySize) {
    // no negative score: each its share of the largest (negative none, non-finite 0)
    EXPECT_EQ(core::tintStrengths({0.5, 2.0, 0.0, 1.0}), (std::vector<double>{0.25, 1.0, 0.0, 0.5}));
    // a negative score: signed, against the largest size, whichever side it is on
    EXPECT_EQ(core::tintStrengths({1.0, -4.0, 2.0}), (std::vector<double>{0.25, -1.0, 0.5}));
    EXPECT_EQ(core::tintStrengths({0.0, 0.0}), (std::vector<double>{0.0, 0.0}));
    EXPECT_EQ(core::tintStrengths({std::nan(""), 2.0}), (std::vector<double>{0.0, 1.0}));
    EXPECT_EQ(core::parseHeadScore("attribution", "--x"), core::HeadScore::Attribution);
}

class ModelViewModel : public testfs::TestFolder {
protected:
    AppState open() { return app::testing::readyTinyGpt2(m_dir); }
};

TEST_F(ModelViewModel, EveryLayerSummarizedAndKeptAcrossLayersOfThePass) {
    AppState s = open();
    ASSERT_TRUE(summarizeHeads(s));
    EXPECT_EQ(s.headSummary.layers, tinygpt2::kLayers);
    EXPECT_EQ(s.headSummary.heads, tinygpt2::kHeads);
    const core::HeadStats* made = s.headSummary.stats.data();
    // One action selects layer and head; the pass, and so its summary, stays.
    ASSERT_TRUE(apply(s, action::SelectLayerHead{tinygpt2::kLayers - 1, 1}));
    EXPECT_EQ(s.scenario.layer, tinygpt2::kLayers - 1);
    EXPECT_EQ(s.view.selectedHead, 1);
    EXPECT_TRUE(headSummaryCurrent(s));
    EXPECT_EQ(s.headSummary.stats.data(), made);
    EXPECT_FALSE(apply(s, action::SelectLayerHead{tinygpt2::kLayers, 0}));
    EXPECT_FALSE(apply(s, action::SelectLayerHead{0, tinygpt2::kHeads}));
    // A new sentence is a new pass.
    ASSERT_TRUE(apply(s, action::SetSentence{" he then"}));
    EXPECT_FALSE(headSummaryCurrent(s));
}

TEST_F(ModelViewModel, PreviewOfAnotherLayerLeavesTheOtherPanelsOnTheSelection) {
    AppState s = open();
    ASSERT_TRUE(apply(s, action::SelectLayerHead{0, 1}));
    ASSERT_TRUE(apply(s, action::SetPreviewHead{0, 1}));  // layer 1, head 0
    EXPECT_EQ(s.view.previewLayer, 1);
    EXPECT_EQ(s.view.previewHead, 0);
    EXPECT_EQ(shownHead(s), 1);                           // the bars and stages stay on the selected head of the shown layer
    ASSERT_TRUE(apply(s, action::SetPreviewHead{0, 0}));  // the shown layer: the usual preview
    EXPECT_EQ(s.view.previewLayer, -1);
    EXPECT_EQ(shownHead(s), 0);
    ASSERT_TRUE(apply(s, action::SetPreviewHead{-2}));
    EXPECT_EQ(shownHead(s), 1);
}

TEST_F(ModelViewModel, InductionTestRunsOnAWorkerAndNeverTouchesTheSentence) {
    AppState s = open();
    const std::string sentence = *s.scenario.sentence;
    const std::uint64_t version = s.dataVersion;
    ASSERT_TRUE(apply(s, action::StartInductionTest{{.repeat = 8, .batch = 2, .seed = 1}}));
    for (int i = 0; i < 2000 && s.induction->running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ASSERT_FALSE(s.induction->running());
    const InductionSnapshot snap = s.induction->snapshot();
    EXPECT_EQ(snap.checkpoint, s.loaded.checkpoint.get());
    EXPECT_TRUE(snap.scores.has_value() != !snap.error.empty());  // a result or why not, never both
    if (snap.scores) {
        EXPECT_EQ(snap.scores->size(), static_cast<std::size_t>(tinygpt2::kLayers * tinygpt2::kHeads));
    }
    EXPECT_EQ(*s.scenario.sentence, sentence);
    EXPECT_EQ(s.dataVersion, version);
    // A scenario has no checkpoint to test.
    AppState scenario = app::testing::ready("default");
    EXPECT_FALSE(apply(scenario, action::StartInductionTest{}));
}

TEST_F(ModelViewModel, RetrievalTestRunsOnAWorkerAndTintsTheModelView) {
    AppState s = open();
    const std::string sentence = *s.scenario.sentence;
    EXPECT_FALSE(summaryScores(s, core::HeadScore::RetrievalTest).has_value());  // not run yet
    const core::RetrievalSettings settings{.lengths = {12, 16}, .depths = {0, 1}, .segment = 3, .seed = 2};
    ASSERT_TRUE(apply(s, action::StartRetrievalTest{settings}));
    for (int i = 0; i < 2000 && s.retrieval->running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ASSERT_FALSE(s.retrieval->running());
    const RetrievalSnapshot snap = s.retrieval->snapshot();
    ASSERT_TRUE(snap.scores.has_value()) << snap.error;
    EXPECT_EQ(snap.scores->mass, core::retrievalScores(*s.loaded.checkpoint, settings).mass);
    // The model view's tint and order read each head's mean over the lengths and depths.
    ASSERT_TRUE(summarizeHeads(s));
    const std::optional<std::vector<double>> tint = summaryScores(s, core::HeadScore::RetrievalTest);
    ASSERT_TRUE(tint.has_value());
    EXPECT_EQ(*tint, snap.scores->headMeans(snap.scores->mass));
    EXPECT_EQ(*s.scenario.sentence, sentence);
    // Settings the model cannot run, and a scenario, are refused in one line.
    EXPECT_FALSE(apply(s, action::StartRetrievalTest{{.lengths = {17}, .depths = {0}, .segment = 3, .seed = 0}}));
    EXPECT_EQ(s.error, "retrieval test: a length of 17 tokens exceeds the model's 16 positions");
    AppState scenario = app::testing::ready("default");
    EXPECT_FALSE(apply(scenario, action::StartRetrievalTest{}));
}

TEST_F(ModelViewModel, AttributionSortsAndTintsTheModelViewWithTheAttributionTabsTerms) {
    AppState s = open();
    ASSERT_TRUE(summarizeHeads(s));
    // Not made yet: no scores, the natural order; the model view's refresh asks for it.
    EXPECT_FALSE(summaryScores(s, core::HeadScore::Attribution).has_value());
    ASSERT_TRUE(apply(s, action::SetAttribution{1, " the"}));
    ASSERT_TRUE(refreshAttribution(s));
    const AttributionView* made = shownAttribution(s);
    ASSERT_NE(made, nullptr);
    ASSERT_TRUE(made->why.empty()) << made->why;
    const std::optional<std::vector<double>> scores = summaryScores(s, core::HeadScore::Attribution);
    ASSERT_TRUE(scores.has_value());
    EXPECT_EQ(*scores, made->value.terms.headTerms);  // each head's term, layer-major
    // Ranked by it, largest first; the rule says so and what the terms are of.
    const ModelViewOptions options{core::BlockPooling::Mean, core::TileOrder::Ranked, core::HeadScore::Attribution, true};
    const TileLayout layout = modelViewLayout(s, options);
    ASSERT_TRUE(layout.scores);
    for (std::size_t k = 1; k < layout.order.size(); ++k)
        EXPECT_GE((*scores)[static_cast<std::size_t>(layout.order[k - 1])], (*scores)[static_cast<std::size_t>(layout.order[k])]);
    EXPECT_EQ(layout.rule, "every head ranked by direct logit attribution, largest first; tint = attribution");
    // Another target: the scores follow it once it is made again (not before).
    ASSERT_TRUE(apply(s, action::SetAttribution{1, "#101"})) << s.error;
    EXPECT_FALSE(summaryScores(s, core::HeadScore::Attribution).has_value());
    ASSERT_TRUE(refreshAttribution(s));
    EXPECT_EQ(*summaryScores(s, core::HeadScore::Attribution), shownAttribution(s)->value.terms.headTerms);
    EXPECT_NE(*summaryScores(s, core::HeadScore::Attribution), *scores);
    // A scenario has no attribution: no scores, and the reason kept.
    AppState scenario = app::testing::ready("default");
    ASSERT_TRUE(summarizeHeads(scenario));
    ASSERT_TRUE(refreshAttribution(scenario));
    ASSERT_NE(shownAttribution(scenario), nullptr);
    EXPECT_NE(shownAttribution(scenario)->why.find("open a model"), std::string::npos);
    EXPECT_FALSE(summaryScores(scenario, core::HeadScore::Attribution).has_value());
}

}  // namespace
