// Every panel drawn for a few frames over attention imported from a file: the views that need no
// weights draw its maps, the rest say that no model is behind them; the rollout view, a layer
// step and the labs that read a head go through the same state.
#include "app/app.hpp"
#include "app/panels/panel_table.hpp"
#include "app/state/rollout_view.hpp"
#include "core/io/npy.hpp"
#include "tests/gui/panel_test.hpp"

#include <gtest/gtest.h>

using namespace attnviz;
using namespace attnviz::app;

namespace {

class ImportedPanels : public headless::PanelTest {};

TEST_F(ImportedPanels, EveryPanelDrawsAnImport) {
    // [3, 4, 40, 40]: causal rows spread evenly over the keys each may read
    const int layers = 3, heads = 4, t = 40;
    std::string f = core::npyHeader({layers, heads, t, t});
    for (int m = 0; m < layers * heads; ++m)
        for (int i = 0; i < t; ++i)
            for (int j = 0; j < t; ++j) {
                const float v = j <= i ? 1.0f / static_cast<float>(i + 1) : 0.0f;
                f.append(reinterpret_cast<const char*>(&v), 4);
            }
    testfs::writeFile(path("a.npy"), f);
    core::Scenario s;
    s.name = "a.npy";
    s.attention = path("a.npy").string();
    App app(makeState(s));
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

}  // namespace
