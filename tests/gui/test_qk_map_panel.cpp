// The query–key map panel drawn without a window: beside the heatmap, at T = 256 and 4,096 within
// ImGui's 16-bit indices (every point drawn), hovering a point outlines its token in the heatmap,
// the mean over heads says it has no map, and a checkpoint's selected layer.
#include "app/app.hpp"
#include "app/panels/panel_table.hpp"
#include "app/panels/qk_map_panel.hpp"
#include "app/state/query_key_view.hpp"
#include "core/models/loaded_model.hpp"
#include "core/scenario/presets.hpp"
#include "tests/gui/panel_test.hpp"
#include "tests/tiny_gpt2.hpp"

#include <gtest/gtest.h>
#include <imgui_internal.h>

using namespace attnviz;
using namespace attnviz::app;

namespace {

class QkMapPanel : public headless::PanelTest {
protected:
    static App longScenario(int length) {
        core::Scenario s = core::loadPreset("random-heads");
        s.tokens = std::vector<std::string>(static_cast<std::size_t>(length));
        for (int i = 0; i < length; ++i) (*s.tokens)[static_cast<std::size_t>(i)] = "t" + std::to_string(i);
        s.sentence.reset();
        s.causal = true;
        return App(makeState(s));
    }
};

TEST_F(QkMapPanel, BesideTheHeatmapAndHoverOutlinesTheToken) {
    App app = longScenario(256);
    app.revealPanel(panel_id::kQkMap);
    frames(app, 3);
    ASSERT_TRUE(app.panelRects().count(std::string(panel_id::kQkMap)));
    EXPECT_TRUE(app.panelRects().count(std::string(panel_id::kHeatmap)));  // both on screen: the hover shows in the heatmap
    ASSERT_NE(shownQueryKeyMap(app.state()), nullptr);
    EXPECT_EQ(app.state().work.queryKeyMaps, 1);
    const int before = frames(app, 1);
    // The mouse on a point: the state names its token, which the heatmap outlines.
    const core::QueryKeyMap& map = *shownQueryKeyMap(app.state());
    const PanelRect r = app.panelRects().at(std::string(panel_id::kQkMap));
    ASSERT_GT(r.max.x - r.min.x, 200.0f);
    // The points cluster about the plot's centre: vertical sweeps from the middle outwards until
    // the mouse is over one (an action is applied after the frame that emitted it).
    bool found = false;
    const float midX = (r.min.x + r.max.x) * 0.5f;
    for (int sweep = 0; sweep < 60 && !found; ++sweep) {
        const float x = midX + static_cast<float>((sweep + 1) / 2 * (sweep % 2 ? 7 : -7));
        for (float y = r.min.y; y < r.max.y && !found; y += 3.0f) {
            ImGui::GetIO().MousePos = ImVec2(x, y);
            headless::drawFrame(app);
            found = app.state().view.hoverToken >= 0;
        }
    }
    ASSERT_TRUE(found) << "no point under any mouse position";
    const int token = app.state().view.hoverToken;
    EXPECT_LT(token, app.state().view.hoverKey ? map.keys : map.queries);
    EXPECT_GT(frames(app, 1), before);  // the ring, the tooltip and the heatmap's outline
    ImGui::GetIO().MousePos = ImVec2(-1000, -1000);
    frames(app, 2);
    EXPECT_EQ(app.state().view.hoverToken, -1);
    EXPECT_EQ(app.state().work.queryKeyMaps, 1);  // never per frame
    // The mean over heads: no map, said plainly.
    apply(app.state(), action::SelectHead{-1});
    frames(app, 2);
    EXPECT_EQ(shownQueryKeyMap(app.state()), nullptr);
    EXPECT_NE(app.state().queryKey.why.find("one head"), std::string::npos);
}

TEST_F(QkMapPanel, FourThousandTokensAreDrawnWholeUnderTheVertexCap) {
    App app = longScenario(4096);
    app.revealPanel(panel_id::kQkMap);
    const int vertices = frames(app, 2);
    ASSERT_NE(shownQueryKeyMap(app.state()), nullptr);
    EXPECT_EQ(qkMapStride(8192), 1);
    EXPECT_EQ(qkMapStride(12001), 2);
    EXPECT_GT(vertices, 0);
    // The panel's own draw list: every point, 4 vertices each, and under 16-bit indices' reach.
    const ImGuiWindow* window = ImGui::FindWindowByName(findPanel(panel_id::kQkMap)->title);
    ASSERT_NE(window, nullptr);
    EXPECT_GE(window->DrawList->VtxBuffer.Size, 8192 * 4);
    EXPECT_LT(window->DrawList->VtxBuffer.Size, 65536);
    for (const float scale : {2.0f}) apply(app.state(), action::SetUiScale{scale}), frames(app, 2);
}

TEST_F(QkMapPanel, ACheckpointsSelectedLayer) {
    tinygpt2::writeCheckpoint(m_dir, tinygpt2::weights(7));
    core::Scenario s;
    s.model = core::modelFolder(m_dir.string());
    s.sentence = " the he the t";
    s.causal = true;
    App app(makeState(s));
    ASSERT_TRUE(app.state().loaded);
    apply(app.state(), action::SelectLayer{1});
    app.revealPanel(panel_id::kQkMap);
    frames(app, 3);
    ASSERT_NE(shownQueryKeyMap(app.state()), nullptr);
    EXPECT_NE(queryKeyCaption(app.state()).find("Layer 2"), std::string::npos);
}

}  // namespace
