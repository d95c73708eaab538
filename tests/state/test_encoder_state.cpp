// A state showing an encoder (a tiny BERT written here): its layer in both directions, the masked
// token in place of the next, the tests that read a decoder refused, and a sentence pair: its
// token types, the boundary between A and B, and the pair filter's blocks. Without a window.
#include "app/state/actions.hpp"
#include "app/state/head_summary.hpp"
#include "app/state/model_view.hpp"
#include "app/state/source.hpp"
#include "core/models/loaded_model.hpp"
#include "tests/test_folder.hpp"
#include "tests/tiny_bert.hpp"

#include <gtest/gtest.h>

using namespace attnviz;
using namespace attnviz::app;

namespace {

class EncoderState : public testfs::TestFolder {
protected:
    AppState open(const std::string& sentence, std::optional<std::string> pair = std::nullopt, const std::string& sub = "bert") {
        const std::filesystem::path dir = m_dir / sub;
        std::filesystem::create_directories(dir);
        tinybert::writeCheckpoint(dir, tinybert::weights(3));
        core::Scenario s;
        s.model = dir.string();
        s.sentence = sentence;
        s.pair = std::move(pair);
        s.causal = true;  // as a scenario naming a model holds it: the model's own mask is taken unless given
        AppState state = makeState(s);
        recompute(state);
        return state;
    }
};

TEST_F(EncoderState, TheLayerReadsBothWaysAndTheMaskIsFilledIn) {
    AppState s = open("the cat [MASK] on the mat");
    ASSERT_TRUE(s.loaded);
    EXPECT_FALSE(s.settings.causal);
    EXPECT_FALSE(capabilities(s).readsBack);
    EXPECT_EQ(ownSoftmaxNote(s), "both directions, τ = 1");
    for (int h = 0; h < tinybert::kHeads; ++h) {
        EXPECT_EQ(s.forward.heads[static_cast<std::size_t>(h)].weights, s.loaded.run->weights(0, h));
        EXPECT_GT(s.forward.heads[static_cast<std::size_t>(h)].weights(0, 7), 0.0f);  // [CLS] reads [SEP]
    }
    EXPECT_EQ(s.loaded.run->predicted, 3);
    EXPECT_EQ(s.loaded.next.size(), 10u);
    EXPECT_FALSE(pairSegments(s).pair);
    // The induction test reads a decoder's heads: refused in one line.
    EXPECT_FALSE(apply(s, action::StartInductionTest{}));
    EXPECT_EQ(s.error, "induction test: scores a decoder's heads reading back along the text; this model reads every key");
    // The causal mask asked for on an encoder is a what-if of the shown layer, the model's own pass unchanged.
    ASSERT_TRUE(apply(s, action::SetCausal{true}));
    recompute(s);
    EXPECT_TRUE(s.settings.causal);
    EXPECT_EQ(s.forward.heads[0].weights(0, 7), 0.0f);
    EXPECT_GT(s.loaded.run->weights(0, 0)(0, 7), 0.0f);
    // Typing keeps the mask asked for.
    ASSERT_TRUE(apply(s, action::SetSentence{"the cat [MASK]"}));
    EXPECT_TRUE(s.settings.causal);
}

TEST_F(EncoderState, ASentencePairHasTypesABoundaryAndBlocks) {
    AppState s = open("the cat sat", std::string("a dog ran"));
    // [CLS] the cat sat [SEP] a dog ran [SEP]
    ASSERT_EQ(s.loaded.run->ids, (std::vector<int>{2, 5, 6, 7, 3, 11, 14, 15, 3}));
    EXPECT_EQ(s.loaded.run->types, (std::vector<int>{0, 0, 0, 0, 0, 1, 1, 1, 1}));
    const PairSegments p = pairSegments(s);
    ASSERT_TRUE(p.pair);
    EXPECT_EQ(p.aEnd, 5);
    EXPECT_EQ(p.bStart, 5);
    EXPECT_EQ(p.end, 9);
    const PairBlock ab = pairBlock(s, PairFilter::AtoB);
    EXPECT_EQ(std::vector<Eigen::Index>({ab.firstRow, ab.rows, ab.firstCol, ab.cols}), std::vector<Eigen::Index>({0, 5, 5, 4}));
    const PairBlock ba = pairBlock(s, PairFilter::BtoA);
    EXPECT_EQ(std::vector<Eigen::Index>({ba.firstRow, ba.rows, ba.firstCol, ba.cols}), std::vector<Eigen::Index>({5, 4, 0, 5}));
    const PairBlock all = pairBlock(s, PairFilter::All);
    EXPECT_EQ(std::vector<Eigen::Index>({all.firstRow, all.rows, all.firstCol, all.cols}), std::vector<Eigen::Index>({0, 9, 0, 9}));
    ASSERT_TRUE(apply(s, action::SetPairFilter{PairFilter::BtoB}));
    EXPECT_EQ(s.view.pairFilter, PairFilter::BtoB);
    EXPECT_STREQ(pairFilterName(s.view.pairFilter), "B → B");
    // The types reach the pass: the same tokens read as one text give other maps.
    const AppState one = open("the cat sat [SEP] a dog ran", std::nullopt, "again");
    EXPECT_EQ(one.loaded.run->ids, s.loaded.run->ids);
    EXPECT_NE(one.loaded.run->weights(1, 0), s.loaded.run->weights(1, 0));
    // Emptied, B is gone.
    ASSERT_TRUE(apply(s, action::SetPair{""}));
    EXPECT_FALSE(s.scenario.pair);
    EXPECT_FALSE(pairSegments(s).pair);
    EXPECT_EQ(s.loaded.run->ids.size(), 5u);
}

// The model view of a sentence pair under a filter: each tile the block's texels alone (at one
// weight a texel, exactly the block of each head's map), and the statistics after Clark et al.:
// the separator mass of a head is its weight on the two [SEP]s.
TEST_F(EncoderState, TheModelViewShowsTheFiltersBlock) {
    AppState s = open("the cat sat", std::string("a dog ran"));
    ASSERT_TRUE(summarizeHeads(s));
    const HeadSummary& summary = s.headSummary;
    ASSERT_EQ(summary.factor, 1);
    EXPECT_EQ(tileCrop(s), (TileCrop{0, 9, 0, 9}));
    ASSERT_TRUE(apply(s, action::SetPairFilter{PairFilter::AtoB}));
    const TileCrop crop = tileCrop(s);
    EXPECT_EQ(crop, (TileCrop{0, 5, 5, 9}));
    const std::vector<float> tiles = croppedThumbnails(summary, core::BlockPooling::Mean, crop);
    ASSERT_EQ(tiles.size(), static_cast<std::size_t>(tinybert::kLayers * tinybert::kHeads * 5 * 4));
    for (int l = 0; l < tinybert::kLayers; ++l)
        for (int h = 0; h < tinybert::kHeads; ++h) {
            const auto a = s.loaded.run->weights(l, h);
            const float* tile = tiles.data() + static_cast<std::size_t>((l * tinybert::kHeads + h) * 20);
            for (int r = 0; r < 5; ++r)
                for (int c = 0; c < 4; ++c) EXPECT_FLOAT_EQ(tile[r * 4 + c], a(r, 5 + c)) << l << "." << h;
            // [SEP] at 4 and 8: every row's weight on them, the mean over the 9 rows
            double separator = 0;
            for (int i = 0; i < 9; ++i) separator += a(i, 4) + a(i, 8);
            EXPECT_NEAR(summary.stats[static_cast<std::size_t>(l * tinybert::kHeads + h)].separator, separator / 9, 1e-6);
        }
    // The atlas of the window: layers × heads tiles of 5 × 4.
    const std::vector<int> order = modelViewLayout(s, s.view.modelView).order;
    EXPECT_EQ(thumbnailAtlas(summary, order, core::BlockPooling::Mean, crop).size(), tiles.size());
}

}  // namespace
