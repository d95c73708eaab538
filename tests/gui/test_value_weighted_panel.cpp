// Value-weighted attention, drawn without a window: a tab beside the weights; its map is α_ij ·
// ‖v_j W_O^h‖ worked out here from the forward pass's own weights, values and W_O (a scenario with
// W_O and one without); made once per pass and head, not per frame; drawn at T = 2,048 within
// ImGui's 16-bit indices; a checkpoint's layer; an import says it has no values; the figure's rows
// are the map's.
#include "app/app.hpp"
#include "app/panels/panel_table.hpp"
#include "app/state/head_summary.hpp"
#include "app/views/value_weighted.hpp"
#include "core/base/error.hpp"
#include "core/io/npy.hpp"
#include "core/scenario/presets.hpp"
#include "tests/gui/panel_test.hpp"
#include "tests/tiny_gpt2.hpp"

#include <gtest/gtest.h>
#include <imgui_internal.h>

using namespace attnviz;
using namespace attnviz::app;

namespace {

class ValueWeightedPanel : public headless::PanelTest {
protected:
    // The map worked out here: each key's value through the head's rows of W_O (or alone), its
    // length in double, times the weight.
    static core::Mat byHand(const AppState& s, int head) {
        const core::HeadTensors& t = s.forward.heads[static_cast<std::size_t>(head)];
        const core::Model& m = s.model;
        const Eigen::Index dv = m.dv, at = static_cast<Eigen::Index>(m.kvHeadOf(head)) * dv;
        // The values: the forward pass's own, or (a checkpoint's layer keeps them packed) x W_V + b_V again, in double.
        Eigen::MatrixXd v = t.v.cast<double>();
        if (t.v.size() == 0) {
            v = m.x.cast<double>() * m.wv.middleCols(at, dv).cast<double>();
            if (m.bv.size() != 0) v.rowwise() += m.bv.segment(at, dv).cast<double>();
        }
        core::Mat map = t.weights;
        for (Eigen::Index j = 0; j < v.rows(); ++j) {
            Eigen::RowVectorXd written = v.row(j);
            if (m.wo.size() != 0) written = v.row(j) * m.wo.middleRows(static_cast<Eigen::Index>(head) * dv, dv).cast<double>();
            map.col(j) *= static_cast<float>(written.norm());
        }
        return map;
    }
};

TEST_F(ValueWeightedPanel, TheMapIsEachWeightTimesItsValuesLengthWithAndWithoutWo) {
    for (const char* preset : {"seed000-four-heads", "default"}) {
        SCOPED_TRACE(preset);
        App app(makeState(core::loadPreset(preset)));
        app.revealPanel(panel_id::kValueWeighted);
        frames(app, 2);
        ASSERT_TRUE(app.panelRects().count(std::string(panel_id::kValueWeighted)));
        const ValueWeightedView* view = shownValueWeighted(app.state());
        ASSERT_NE(view, nullptr);
        ASSERT_TRUE(view->why.empty()) << view->why;
        EXPECT_EQ(std::string(preset) == "default", app.state().model.wo.size() == 0);
        const core::Mat want = byHand(app.state(), app.state().view.selectedHead);
        ASSERT_EQ(view->value.map.rows(), want.rows());
        EXPECT_LT((view->value.map - want).cwiseAbs().maxCoeff(), 1e-5f * want.maxCoeff());
        EXPECT_NEAR(view->value.largest, want.maxCoeff(), 1e-5f * want.maxCoeff());
        // rows do not sum to 1
        EXPECT_GT((view->value.map.rowwise().sum().array() - 1.0f).abs().maxCoeff(), 0.05f);
        // made once for the pass and head: more frames make nothing; another head remakes it
        const std::uint64_t version = view->version;
        frames(app, 3);
        EXPECT_EQ(shownValueWeighted(app.state())->version, version);
        ASSERT_TRUE(apply(app.state(), action::SelectHead{1}));
        frames(app, 2);
        ASSERT_NE(shownValueWeighted(app.state()), nullptr);
        EXPECT_NE(shownValueWeighted(app.state())->version, version);
        const core::Mat other = byHand(app.state(), 1);
        EXPECT_LT((shownValueWeighted(app.state())->value.map - other).cwiseAbs().maxCoeff(), 1e-5f * other.maxCoeff());
        // the figure draws the same map
        const render::ValueWeightedFigure figure = valueWeightedFigure(app.state(), {.where = "test"});
        EXPECT_EQ(figure.map, shownValueWeighted(app.state())->value.map);
        EXPECT_NE(figure.subtitle.find("rows do not sum to 1"), std::string::npos);
    }
}

TEST_F(ValueWeightedPanel, TwoThousandTokensDrawUnderTheVertexCap) {
    core::Scenario s = core::loadPreset("random-heads");
    s.tokens = std::vector<std::string>(2048);
    for (int i = 0; i < 2048; ++i) (*s.tokens)[static_cast<std::size_t>(i)] = "t" + std::to_string(i % 97);
    s.sentence.reset();
    s.causal = true;
    App app(makeState(s));
    app.revealPanel(panel_id::kValueWeighted);
    frames(app, 2);
    ASSERT_NE(shownValueWeighted(app.state()), nullptr);
    const ImGuiWindow* window = ImGui::FindWindowByName(findPanel(panel_id::kValueWeighted)->title);
    ASSERT_NE(window, nullptr);
    EXPECT_LT(window->DrawList->VtxBuffer.Size, 65536);
    for (const float scale : {2.0f}) apply(app.state(), action::SetUiScale{scale}), frames(app, 2);
}

TEST_F(ValueWeightedPanel, ACheckpointsLayerAndAnImportWithoutValues) {
    App app(makeState(tinyGpt2Scenario()));
    apply(app.state(), action::SelectLayer{1});
    ASSERT_TRUE(apply(app.state(), action::SelectHead{1}));
    app.revealPanel(panel_id::kValueWeighted);
    frames(app, 3);
    const ValueWeightedView* view = shownValueWeighted(app.state());
    ASSERT_NE(view, nullptr);
    ASSERT_TRUE(view->why.empty()) << view->why;
    EXPECT_EQ(view->key->layer, 1);
    // the shown layer of the pass (τ = 1): the layer's scenario model holds its values and W_O
    const core::Mat want = byHand(app.state(), 1);
    EXPECT_LT((view->value.map - want).cwiseAbs().maxCoeff(), 1e-4f * want.maxCoeff());

    App other(makeState(causalImport("a.npy", 2, 2, 4)));
    other.revealPanel(panel_id::kValueWeighted);
    frames(other, 2);
    EXPECT_THROW(valueWeightedFigure(other.state(), {.where = "test"}), core::InputError);
}

}  // namespace
