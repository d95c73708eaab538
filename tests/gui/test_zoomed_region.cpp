// A model's layer read from its pass, zoomed in on the heatmap past its pooled texels: the window
// asks for the cells on screen at the pooling the screen needs, the worker makes them after the
// whole map, and they are drawn over it; zooming out again lets the region go.
#include "app/app.hpp"
#include "app/state/actions.hpp"
#include "app/state/shown_map.hpp"
#include "app/state/source.hpp"
#include "core/models/loaded_model.hpp"
#include "tests/gui/panel_test.hpp"
#include "tests/tiny_llama.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace attnviz::app {
namespace {

class ZoomedRegion : public headless::PanelTest {};

TEST_F(ZoomedRegion, ZoomingInOnAMapReadFromThePassMakesTheCellsOnScreenFiner) {
    const nlohmann::json c = tinyllama::config("mistral", {{"sliding_window", 30}, {"max_position_embeddings", 8192}});
    tinyllama::writeCheckpoint(m_dir, c, tinyllama::weights(c, 4));
    core::Scenario scenario;
    scenario.model = core::modelFolder(m_dir.string());
    std::string sentence;
    while (sentence.size() < 5000) sentence += "the cat sat on the mat and the dog ran off. ";
    scenario.sentence = sentence.substr(0, 5000);
    scenario.causal = true;
    scenario.layer = 1;
    const auto model = core::openCheckpoint(m_dir.string());
    const auto t = static_cast<long long>(model->tokenizer().encode(*scenario.sentence).size());
    const std::uint64_t between = ((core::modelMemoryBytes(model->config(), t, core::decoder::PassMaps::OnDemand, false) >> 20) + 1) << 20;
    App app(makeState(scenario, core::Limits{.maxBytes = between, .keptMapsBytes = 0}));
    ASSERT_FALSE(capabilities(app.state()).wholeLayer);
    const int head = shownHead(app.state());
    // the whole map, pooled on the worker
    const auto until = [&](const auto& done) {
        for (int i = 0; i < 1500 && !done(); ++i) {
            frames(app, 1);
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        return done();
    };
    // the zoomed region asked for, made
    const auto regionReady = [&] {
        const ShownRegion* region = shownRegionOf(app.state(), head);
        const std::optional<ShownMapKey> key = shownRegionKey(app.state(), head);
        return region && key && region->current(*key);
    };
    ASSERT_TRUE(until([&] {  // at the pooling the heatmap asked for once it drew the first
        const ShownMap* shown = shownMapOf(app.state(), head);
        return app.state().view.heatmapPooling > 0 && shown && shown->current(shownMapKey(app.state(), head));
    }));
    const int wholeFactor = shownMapOf(app.state(), head)->map.factor;
    ASSERT_GT(wholeFactor, 1) << "a map of " << t << " tokens on a 1600-px window is pooled; pooling " << app.state().view.heatmapPooling;
    EXPECT_EQ(app.state().view.zoomRegion.rows, 0);

    // zoomed in 64 times about the middle of the map: a region of the cells on screen, finer
    apply(app.state(), action::SetView{64.0f, 0.5f, 0.5f});
    ASSERT_TRUE(until(regionReady));
    const ZoomRegion& asked = app.state().view.zoomRegion;
    EXPECT_LT(asked.factor, wholeFactor);
    const Eigen::Index mid = t / 2;  // on screen: the middle of the map, inside the region asked for
    EXPECT_LE(asked.firstRow, mid);
    EXPECT_GT(asked.firstRow + asked.rows, mid);
    EXPECT_LE(asked.firstCol, mid);
    EXPECT_GT(asked.firstCol + asked.cols, mid);
    EXPECT_LT(asked.rows, t / 8);  // only around what is on screen, not the map
    const core::PooledMap& r = shownRegionOf(app.state(), head)->map;
    EXPECT_EQ(r.factor, asked.factor);
    EXPECT_EQ(r.firstRow, asked.firstRow / asked.factor * asked.factor);
    frames(app, 2);  // drawn over the whole map, every draw list bounded

    // zoomed out: no region is asked for
    apply(app.state(), action::SetView{1.0f, 0.5f, 0.5f});
    frames(app, 2);
    EXPECT_EQ(app.state().view.zoomRegion.rows, 0);
    EXPECT_FALSE(shownRegionKey(app.state(), head).has_value());
    // and in again elsewhere: the last region (of the same map) is kept while the next one is asked for
    apply(app.state(), action::SetView{32.0f, 0.2f, 0.8f});
    ASSERT_TRUE(until(regionReady));
    const ZoomRegion& again = app.state().view.zoomRegion;
    EXPECT_LE(again.firstRow, static_cast<Eigen::Index>(0.8 * static_cast<double>(t)));
    EXPECT_GT(again.firstRow + again.rows, static_cast<Eigen::Index>(0.8 * static_cast<double>(t)));
    EXPECT_LE(again.firstCol, static_cast<Eigen::Index>(0.2 * static_cast<double>(t)));
}

}  // namespace
}  // namespace attnviz::app
