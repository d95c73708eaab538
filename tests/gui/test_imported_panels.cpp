// Every panel drawn for a few frames over attention imported from a file: the views that need no
// weights draw its maps, the rest say that no model is behind them; the rollout view, a layer
// step and the labs that read a head go through the same state.
#include "app/app.hpp"
#include "app/panels/panel_table.hpp"
#include "app/state/rollout_view.hpp"
#include "app/views/value_weighted.hpp"
#include "core/io/npy.hpp"
#include "core/scenario/presets.hpp"
#include "tests/gui/panel_test.hpp"

#include <gtest/gtest.h>

using namespace attnviz;
using namespace attnviz::app;

namespace {

class ImportedPanels : public headless::PanelTest {
protected:
    core::Scenario writeImport() const { return causalImport("a.npy", 3, 4, 40); }  // [3, 4, 40, 40]
};

TEST_F(ImportedPanels, EveryPanelDrawsAnImport) {
    App app(makeState(writeImport()));
    frames(app, 3);
    // it opens on what its maps feed: the model view, its statistics one tab away
    EXPECT_TRUE(app.panelRects().count(std::string(panel_id::kModel)));
    for (const std::string_view id : {panel_id::kModel, panel_id::kStats, panel_id::kHeadView, panel_id::kNeuron, panel_id::kStages,
                                      panel_id::kSwap, panel_id::kPositional, panel_id::kHeatmap}) {
        SCOPED_TRACE(std::string(id));
        app.revealPanel(id);
        frames(app, 2);
        EXPECT_TRUE(app.panelRects().count(std::string(id)));
    }
    for (Lab lab : {Lab::Linear, Lab::Flash, Lab::Cost}) {
        apply(app.state(), action::SetLab{lab});
        frames(app, 2);
    }
    apply(app.state(), action::SetLab{Lab::None});
    apply(app.state(), action::SetRollout{true});
    frames(app, 3);
    EXPECT_TRUE(shownRollout(app.state()));
    ASSERT_TRUE(apply(app.state(), action::StepLayer{1}));
    frames(app, 3);
    EXPECT_EQ(app.state().scenario.layer, 1);
    EXPECT_EQ(rolloutCaption(app.state()), "Rollout up to layer 2 · mean over heads");
}

// The layout offers what the source feeds: an import opens on its maps, the model view and the
// statistics, with no tab for a view that could only say it has no weights (the view's row's
// need); a scenario offers those too. Asked for by name, such a view still comes (and says why).
TEST_F(ImportedPanels, TheLayoutOffersWhatTheSourceFeeds) {
    // (On a small screen the views beside the weights come through the View menu, one at a time.)
    const std::vector<std::string_view> fedByMaps = {panel_id::kHeatmap,  panel_id::kBars,  panel_id::kHeads,
                                                     panel_id::kControls, panel_id::kModel, panel_id::kStats};
    const std::vector<std::string_view> needWeights = {panel_id::kSwap,   panel_id::kStages,        panel_id::kPositional,
                                                       panel_id::kNeuron, panel_id::kValueWeighted, panel_id::kCompare,
                                                       panel_id::kQkMap,  panel_id::kWhatIf};
    for (const ImVec2 screen : {ImVec2(1920, 1080), ImVec2(1280, 720), ImVec2(800, 600)}) {
        SCOPED_TRACE(std::to_string(static_cast<int>(screen.x)));
        ImGui::GetIO().DisplaySize = screen;
        App imported(makeState(writeImport()));
        frames(imported, 2);
        for (const std::string_view id : fedByMaps) EXPECT_TRUE(imported.offers(id)) << id;
        const bool roomy = screen.x >= 1280;
        EXPECT_EQ(imported.offers(panel_id::kHeadView), roomy);
        for (const std::string_view id : needWeights) EXPECT_FALSE(imported.offers(id)) << id;
        imported.revealPanel(panel_id::kStages);
        frames(imported, 2);
        EXPECT_TRUE(imported.panelRects().count(std::string(panel_id::kStages)));

        App scenario(makeState(core::loadPreset("default")));
        scenario.revealPanel(panel_id::kModel);  // a scenario's views of every layer, once asked for
        frames(scenario, 2);
        for (const std::string_view id : fedByMaps) EXPECT_TRUE(scenario.offers(id)) << id;
        for (const std::string_view id : {panel_id::kSwap, panel_id::kStages, panel_id::kPositional})
            EXPECT_TRUE(scenario.offers(id)) << id;
        EXPECT_EQ(scenario.offers(panel_id::kNeuron), roomy);
        EXPECT_FALSE(scenario.offers(panel_id::kWhatIf));  // a what-if needs a model to run again
    }
}

}  // namespace
