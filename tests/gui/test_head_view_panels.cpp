// The head view and the neuron view drawn without a window: on their tabs, on a scenario, a long
// scenario that scrolls and a checkpoint's layer, within ImGui's 16-bit indices, in every theme and
// presenter mode.
#include "app/app.hpp"
#include "app/panels/head_view_panel.hpp"
#include "app/panels/neuron_panel.hpp"
#include "app/panels/panel_table.hpp"
#include "core/models/loaded_model.hpp"
#include "core/scenario/presets.hpp"
#include "tests/gui/panel_test.hpp"
#include "tests/tiny_gpt2.hpp"

#include <gtest/gtest.h>

using namespace attnviz;
using namespace attnviz::app;

namespace {

class HeadViewPanels : public headless::PanelTest {
protected:
    static void showTab(App& app, std::string_view id) {
        app.revealPanel(id);
        frames(app, 2);
        ASSERT_TRUE(app.panelRects().count(std::string(id))) << id;
        if (app.state().view.uiScale == 1.0f) {  // the full layout: they share the heatmap's place
            EXPECT_FALSE(app.panelRects().count(std::string(panel_id::kHeatmap)));
        }
        EXPECT_GT(app.panelRects().at(std::string(id)).max.y - app.panelRects().at(std::string(id)).min.y, 300.0f);
    }
};

TEST_F(HeadViewPanels, BothViewsAreTabsInTheHeatmapsPlace) {
    App app(makeState(core::loadPreset("default")));
    frames(app, 2);
    EXPECT_TRUE(app.panelRects().count(std::string(panel_id::kHeatmap)));
    ASSERT_NE(findPanel(panel_id::kHeadView), nullptr);
    ASSERT_NE(findPanel(panel_id::kNeuron), nullptr);
    showTab(app, panel_id::kHeadView);
    apply(app.state(), action::SetViewHeads{{0, 1, 2, 3}});
    apply(app.state(), action::PickViewToken{2, true});
    apply(app.state(), action::PickViewToken{4, true});  // two picked: their sums on the keys
    frames(app, 2);
    showTab(app, panel_id::kNeuron);
    apply(app.state(), action::SelectCell{4, 1});
    frames(app, 2);
    for (const Theme theme : {Theme::Light, Theme::HighContrast}) {
        apply(app.state(), action::SetTheme{theme});
        apply(app.state(), action::SetUiScale{2.0f});
        showTab(app, panel_id::kHeadView);
        showTab(app, panel_id::kNeuron);
    }
    apply(app.state(), action::SetPresenter{true});
    apply(app.state(), action::SetUiScale{1.0f});
    showTab(app, panel_id::kHeadView);
    showTab(app, panel_id::kNeuron);
}

TEST_F(HeadViewPanels, ALongScenarioScrollsWithinTheLineCap) {
    core::Scenario s = core::loadPreset("random-heads");
    s.tokens = std::vector<std::string>(256);
    for (int i = 0; i < 256; ++i) (*s.tokens)[static_cast<std::size_t>(i)] = "t" + std::to_string(i);
    s.sentence.reset();
    s.causal = true;
    App app(makeState(s));
    apply(app.state(), action::SelectHead{-1});  // every head of the layer
    showTab(app, panel_id::kHeadView);
    ASSERT_EQ(app.state().model.tq(), 256);
    apply(app.state(), action::SetDk{128});  // a wide head: the neuron view wraps d_k = 128
    showTab(app, panel_id::kNeuron);
    EXPECT_EQ(neuronCellsPerRow(128, 700.0f, 10.0f), 64);
    EXPECT_EQ(neuronCellsPerRow(128, 400.0f, 10.0f), 32);
    EXPECT_EQ(neuronCellsPerRow(4, 400.0f, 10.0f), 4);
}

TEST_F(HeadViewPanels, ACheckpointsSelectedLayer) {
    tinygpt2::writeCheckpoint(m_dir, tinygpt2::weights(7));
    core::Scenario s;
    s.model = core::modelFolder(m_dir.string());
    s.sentence = " the he the t";
    s.causal = true;
    App app(makeState(s));
    ASSERT_TRUE(app.state().loaded);
    apply(app.state(), action::SelectLayer{1});
    showTab(app, panel_id::kHeadView);
    showTab(app, panel_id::kNeuron);
}

}  // namespace
