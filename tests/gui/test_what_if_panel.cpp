// The what-if panel drawn without a window: on a scenario (it says it needs a model), on a model
// with no edits, with heads ablated and a token hidden (the next-token table, the moved grid and the
// difference map), with token 0 hidden (query 0 reads nothing), in presenter mode, at UI scale 2
// and in a small window; within ImGui's 16-bit indices, and the difference map uploaded once.
#include "app/app.hpp"
#include "app/panels/panel_table.hpp"
#include "core/models/loaded_model.hpp"
#include "core/scenario/presets.hpp"
#include "tests/gui/panel_test.hpp"
#include "tests/tiny_gpt2.hpp"

#include <gtest/gtest.h>

using namespace attnviz;
using namespace attnviz::app;

namespace {

class WhatIfPanel : public headless::PanelTest {
protected:
    static void show(App& app) { reveal(app, panel_id::kWhatIf); }
};

TEST_F(WhatIfPanel, DrawsAScenarioAModelAndItsEditsInEveryLayout) {
    App scenario(makeState(core::loadPreset("default")));
    show(scenario);

    tinygpt2::writeCheckpoint(m_dir, tinygpt2::weights(7));
    core::Scenario sc;
    sc.model = core::modelFolder(m_dir.string());
    sc.sentence = " the cat sat on";
    sc.causal = true;
    App app(makeState(sc));
    show(app);
    ASSERT_TRUE(apply(app.state(), action::SelectLayer{1}));
    ASSERT_TRUE(apply(app.state(), action::AblateHead{1, 0, true}));
    ASSERT_TRUE(apply(app.state(), action::HideToken{3}));
    ASSERT_TRUE(apply(app.state(), action::SelectHead{1}));
    frames(app, 3);
    // The difference map is made once for the pass and head, not every frame.
    const long long uploads = app.textureUploads();
    frames(app, 4);
    EXPECT_EQ(app.textureUploads(), uploads);
    ASSERT_TRUE(apply(app.state(), action::HideToken{0}));
    frames(app, 3);
    ASSERT_TRUE(apply(app.state(), action::SelectHead{-1}));  // the mean: no head to ablate or diff
    frames(app, 2);
    ASSERT_TRUE(apply(app.state(), action::SetPresenter{true}));
    show(app);
    ASSERT_TRUE(apply(app.state(), action::SetPresenter{false}));
    ASSERT_TRUE(apply(app.state(), action::SetUiScale{2.0f}));
    show(app);
    ImGui::GetIO().DisplaySize = ImVec2(800, 600);
    show(app);
    ASSERT_TRUE(apply(app.state(), action::ClearWhatIf{}));
    frames(app, 2);
}

}  // namespace
