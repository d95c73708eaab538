// The head statistics panel with the retrieval test drawn without a window: its button on a model
// (none on a scenario), the test running and finished (the retrieval column, the selected head's
// depth × length grid and the layer's mean when no head is selected), at UI scale 2, in presenter
// mode and in a small window.
#include "app/app.hpp"
#include "app/panels/panel_table.hpp"
#include "core/scenario/presets.hpp"
#include "tests/gui/panel_test.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

using namespace attnviz;
using namespace attnviz::app;

namespace {

class RetrievalPanel : public headless::PanelTest {
protected:
    static void show(App& app) { reveal(app, panel_id::kStats); }
};

TEST_F(RetrievalPanel, DrawsTheTestAndItsGridInEveryLayout) {
    App scenario(makeState(core::loadPreset("default")));
    show(scenario);
    EXPECT_FALSE(apply(scenario.state(), action::StartRetrievalTest{}));

    App app(makeState(tinyGpt2Scenario()));
    show(app);
    ASSERT_TRUE(apply(app.state(), action::StartRetrievalTest{{.lengths = {8, 12, 16}, .depths = {0, 0.5, 1}, .segment = 3, .seed = 1}}));
    frames(app, 2);  // running, or already done
    for (int i = 0; i < 2000 && app.state().retrieval->running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ASSERT_TRUE(app.state().retrieval->snapshot().scores.has_value());
    show(app);
    ASSERT_TRUE(apply(app.state(), action::SelectLayerHead{1, 1}));
    frames(app, 2);
    ASSERT_TRUE(apply(app.state(), action::SelectHead{-1}));  // the mean of the layer's heads
    frames(app, 2);
    ASSERT_TRUE(apply(app.state(),
                      action::SetModelView{{core::BlockPooling::Mean, core::TileOrder::Ranked, core::HeadScore::RetrievalTest, true}}));
    reveal(app, panel_id::kModel);
    ASSERT_TRUE(apply(app.state(), action::SetPresenter{true}));
    show(app);
    ASSERT_TRUE(apply(app.state(), action::SetPresenter{false}));
    ASSERT_TRUE(apply(app.state(), action::SetUiScale{2.0f}));
    show(app);
    ImGui::GetIO().DisplaySize = ImVec2(800, 600);
    show(app);
}

}  // namespace
