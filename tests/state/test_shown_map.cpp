// A model's layer read from its pass (its heads whole past --max-memory) gives the heatmap its map
// pooled on a worker thread (refreshShownMap): started by the view's refresh, taken in the frame it
// is ready, equal to the whole layer's weights pooled as the window pools them; the rows the views
// of one query read (shownRows) are the whole layer's; a new head or pooling makes a new map; a
// zoomed region is made finer after the whole map.
#include "app/state/actions.hpp"
#include "app/state/shown_map.hpp"
#include "app/state/source.hpp"
#include "core/models/loaded_model.hpp"
#include "tests/test_folder.hpp"
#include "tests/tiny_llama.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

using namespace attnviz;
using namespace attnviz::app;

namespace {

class ShownMapState : public testfs::TestFolder {
protected:
    void SetUp() override {
        TestFolder::SetUp();
        const nlohmann::json c = tinyllama::config("mistral", {{"sliding_window", 30}, {"max_position_embeddings", 1024}});
        tinyllama::writeCheckpoint(m_dir, c, tinyllama::weights(c, 4));
        m_scenario.model = core::modelFolder(m_dir.string());
        std::string s;
        while (s.size() < 600) s += "the cat sat on the mat and the dog ran off. ";
        m_scenario.sentence = s.substr(0, 600);
        m_scenario.causal = true;
        m_scenario.layer = 1;
        const auto model = core::openCheckpoint(m_dir.string());
        const auto t = static_cast<long long>(model->tokenizer().encode(*m_scenario.sentence).size());
        m_between = ((core::modelMemoryBytes(model->config(), t, core::decoder::PassMaps::OnDemand, false) >> 20) + 1) << 20;
        EXPECT_LT(m_between, core::modelMemoryBytes(model->config(), t, core::decoder::PassMaps::OnDemand, true));
    }
    AppState state(std::uint64_t maxBytes) {
        AppState s = makeState(m_scenario, core::Limits{.maxBytes = maxBytes, .keptMapsBytes = 0});
        recompute(s);
        return s;
    }
    // Refreshes as the window does after each frame until the map is current (or 20 s pass).
    static int framesUntilCurrent(AppState& s) {
        for (int frame = 1; frame < 2000; ++frame) {
            if (refreshShownMap(s)) return frame;
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        return -1;
    }
    core::Scenario m_scenario;
    std::uint64_t m_between = 0;
};

TEST_F(ShownMapState, ALayerReadFromThePassIsPooledOnAWorkerAsTheWholeLayerIs) {
    AppState whole = state(12ULL << 30), read = state(m_between);
    ASSERT_TRUE(capabilities(whole).wholeLayer);
    ASSERT_FALSE(capabilities(read).wholeLayer);
    EXPECT_TRUE(refreshShownMap(whole));  // a whole layer has its weights: nothing to make
    for (const int head : {3, -1})
        for (const int pooling : {1, 4}) {
            SCOPED_TRACE("head " + std::to_string(head) + ", pooling " + std::to_string(pooling));
            read.view.selectedHead = whole.view.selectedHead = head;
            read.view.skipFirstKey = whole.view.skipFirstKey = head < 0;
            read.view.heatmapPooling = pooling;
            EXPECT_FALSE(refreshShownMap(read));  // started, not waited for
            EXPECT_GT(framesUntilCurrent(read), 0);
            const ShownMap* shown = shownMapOf(read, head);
            ASSERT_NE(shown, nullptr);
            EXPECT_EQ(shown->map.factor, pooling);
            EXPECT_EQ(pendingShownMap(read), nullptr);
            // the window's heatmap of the whole layer: its weights pooled by their block maxima
            const core::Mat weights = visibleWeights(whole);
            std::vector<float> want;
            core::poolBlocks(weights, whole.settings, pooling, core::BlockPooling::Max, want);
            ASSERT_EQ(shown->map.maxima.size(), want.size());
            for (std::size_t k = 0; k < want.size(); ++k) {
                ASSERT_EQ(core::isMaskedTexel(shown->map.maxima[k]), core::isMaskedTexel(want[k])) << k;
                if (!core::isMaskedTexel(want[k])) {
                    ASSERT_NEAR(shown->map.maxima[k], want[k], 2e-6f) << k;
                }
            }
            // the rows of one query, and a band of them
            EXPECT_LT((shownRows(read, head, 200, 7) - weights.middleRows(200, 7)).cwiseAbs().maxCoeff(), 2e-6f);
            EXPECT_LT((visibleWeights(read) - weights).cwiseAbs().maxCoeff(), 2e-6f);
        }
    // Another head makes another map; the last one is not drawn for it.
    read.view.selectedHead = 0;
    EXPECT_EQ(shownMapOf(read, 0), nullptr);
    EXPECT_FALSE(refreshShownMap(read));
    EXPECT_GT(framesUntilCurrent(read), 0);
    EXPECT_NE(shownMapOf(read, 0), nullptr);
}

TEST_F(ShownMapState, AZoomedRegionIsMadeFinerAfterTheWholeMapAndIsTheLayersCellsThere) {
    AppState whole = state(12ULL << 30), read = state(m_between);
    ASSERT_FALSE(capabilities(read).wholeLayer);
    read.view.selectedHead = whole.view.selectedHead = 2;
    read.view.heatmapPooling = 4;
    const ZoomRegion region{.firstRow = 101, .rows = 60, .firstCol = 90, .cols = 50, .factor = 1};
    ASSERT_TRUE(apply(read, action::SetZoomRegion{region}));
    EXPECT_EQ(read.view.zoomRegion, region);
    const std::optional<ShownMapKey> key = shownRegionKey(read, 2);
    ASSERT_TRUE(key.has_value());
    EXPECT_EQ(key->factor, 1);
    EXPECT_EQ(shownRegionOf(read, 2), nullptr);
    EXPECT_GT(framesUntilCurrent(read), 0);  // the whole map first, then the region
    ASSERT_NE(shownMapOf(read, 2), nullptr);
    EXPECT_EQ(shownMapOf(read, 2)->map.factor, 4);
    const ShownRegion* made = shownRegionOf(read, 2);
    ASSERT_NE(made, nullptr);
    ASSERT_TRUE(made->current(*key));
    const core::PooledMap& r = made->map;
    EXPECT_EQ(r.firstRow, 101);
    EXPECT_EQ(r.firstCol, 90);
    ASSERT_EQ(r.rows, 60);
    ASSERT_EQ(r.cols, 50);
    // at one cell a texel: the whole layer's weights there, masked where the window or the causal mask is
    const core::Mat weights = visibleWeights(whole);
    std::vector<char> blocked;
    for (Eigen::Index i = 0; i < r.rows; ++i) {
        core::blockedRow(whole.settings, 101 + i, weights.cols(), blocked);
        for (Eigen::Index j = 0; j < r.cols; ++j) {
            const float got = r.maxima[static_cast<std::size_t>(i * r.cols + j)];
            ASSERT_EQ(core::isMaskedTexel(got), blocked[static_cast<std::size_t>(90 + j)] != 0) << i << " " << j;
            if (!core::isMaskedTexel(got)) {
                ASSERT_NEAR(got, weights(101 + i, 90 + j), 2e-6f) << i << " " << j;
            }
        }
    }
    // no finer than the whole map: no region; past the map: cut to it; none: cleared
    ASSERT_TRUE(apply(read, action::SetZoomRegion{{.firstRow = 0, .rows = 8, .firstCol = 0, .cols = 8, .factor = 4}}));
    EXPECT_FALSE(shownRegionKey(read, 2).has_value());
    const Eigen::Index tq = read.model.tq();
    ASSERT_TRUE(apply(read, action::SetZoomRegion{{.firstRow = tq - 10, .rows = 60, .firstCol = 0, .cols = 8, .factor = 1}}));
    EXPECT_EQ(read.view.zoomRegion.firstRow, tq - 10);
    EXPECT_EQ(read.view.zoomRegion.rows, 10);
    ASSERT_TRUE(apply(read, action::SetZoomRegion{{}}));
    EXPECT_EQ(read.view.zoomRegion.rows, 0);
    EXPECT_FALSE(shownRegionKey(read, 2).has_value());
    EXPECT_FALSE(shownRegionKey(whole, 2).has_value());  // a layer computed whole has its weights
}

TEST_F(ShownMapState, AnotherLayerPreviewedFromAPassWithoutMapsIsPooledOnTheWorker) {
    // The shown layer whole, the pass's maps on demand: the model view's tile under the mouse
    // (another layer's head) is pooled on the worker, never made whole on the window's thread.
    AppState s = state(12ULL << 30);
    ASSERT_TRUE(capabilities(s).wholeLayer);
    ASSERT_FALSE(s.loaded.run->keepsWeights());
    EXPECT_FALSE(shownMapFromWorker(s));
    s.view.previewLayer = 0;
    s.view.previewHead = 2;
    s.view.heatmapPooling = 3;
    ASSERT_TRUE(previewingLayer(s));
    ASSERT_TRUE(shownMapFromWorker(s));
    EXPECT_FALSE(refreshShownMap(s));
    EXPECT_GT(framesUntilCurrent(s), 0);
    const ShownMap* shown = shownMapOf(s, s.view.selectedHead);
    ASSERT_NE(shown, nullptr);
    EXPECT_EQ(shown->key->layer, 0);
    EXPECT_EQ(shown->key->head, 2);
    core::Mat scratch;
    const core::AttentionMaps maps = attentionMaps(s);
    std::vector<float> want;
    core::poolBlocks(maps.map(0, 2, scratch), maps.layerSettings(0), 3, core::BlockPooling::Max, want);
    // made a tile at a time on the worker, row by row here: the same weights to float rounding
    ASSERT_EQ(shown->map.maxima.size(), want.size());
    for (std::size_t k = 0; k < want.size(); ++k) {
        EXPECT_EQ(core::isMaskedTexel(shown->map.maxima[k]), core::isMaskedTexel(want[k])) << k;
        EXPECT_NEAR(shown->map.maxima[k], want[k], 1e-6f) << k;
    }
    // A pass that keeps its maps previews them in place.
    AppState kept = makeState(m_scenario, core::Limits{});
    kept.view.previewLayer = 0;
    kept.view.previewHead = 2;
    EXPECT_FALSE(shownMapFromWorker(kept));
    EXPECT_TRUE(refreshShownMap(kept));
}

}  // namespace
