// What random use of the window once showed a lecturer, drawn without a window: a zoomed heatmap's
// numbers and outlines stay inside its matrix, a dialog stays inside a window made smaller and
// Escape closes it, and the window's title follows a preset chosen from the menu.
#include "app/app.hpp"
#include "app/panels/panel_table.hpp"
#include "app/state/actions.hpp"
#include "core/scenario/presets.hpp"
#include "tests/gui/panel_test.hpp"

#include <GLFW/glfw3.h>
#include <gtest/gtest.h>
#include <imgui_internal.h>

#include <algorithm>

using namespace attnviz;
using namespace attnviz::app;

namespace {

class WindowFaults : public headless::PanelTest {};

struct Box {
    float x0, y0, x1, y1;
    bool empty() const { return x1 <= x0 + 0.5f || y1 <= y0 + 0.5f; }
};

Box intersect(const Box& a, const Box& b) {
    return {std::max(a.x0, b.x0), std::max(a.y0, b.y0), std::min(a.x1, b.x1), std::min(a.y1, b.y1)};
}

// Zoomed 3.4× and panned so that the edge cells are cut: every triangle drawn that shows over
// the matrix (what is visible of it: its box within its command's clip) lies inside the matrix.
// A number or an outline of an edge cell drawn past it fails; the labels beside it never reach in.
TEST_F(WindowFaults, AZoomedHeatmapDrawsNothingOfItsCellsOutsideTheMatrix) {
    App app(makeState(core::loadPreset("default")));
    ImGui::GetIO().DisplaySize = ImVec2(1600, 1000);
    frames(app, 2);
    apply(app.state(), action::SetView{3.4f, 0.37f, 0.41f});
    const int last = static_cast<int>(app.state().model.tq()) - 1;
    for (const int query : {0, last / 2 + 1, last}) {  // the selected row's outline at either edge and inside
        apply(app.state(), action::SelectQuery{query});
        frames(app, 2);
        const ImGuiWindow* window = ImGui::FindWindowByName(findPanel(panel_id::kHeatmap)->title);
        ASSERT_NE(window, nullptr);
        const ImDrawList& list = *window->DrawList;
        // the matrix: the flat stand-in the renderer draws without GL; what is drawn after it
        // (the window's own background and frame come before) is what the panel puts on it
        Box matrix{1e9f, 1e9f, -1e9f, -1e9f};
        int first = list.VtxBuffer.Size;
        for (int n = 0; n < list.VtxBuffer.Size; ++n) {
            const ImDrawVert& v = list.VtxBuffer[n];
            if (v.col != IM_COL32(90, 90, 100, 255)) continue;
            first = std::min(first, n);
            matrix = {std::min(matrix.x0, v.pos.x), std::min(matrix.y0, v.pos.y), std::max(matrix.x1, v.pos.x),
                      std::max(matrix.y1, v.pos.y)};
        }
        ASSERT_LT(matrix.x0, matrix.x1);
        int insideTriangles = 0;
        for (const ImDrawCmd& cmd : list.CmdBuffer) {
            if (cmd.UserCallback) continue;
            const Box clip{cmd.ClipRect.x, cmd.ClipRect.y, cmd.ClipRect.z, cmd.ClipRect.w};
            for (unsigned k = 0; k + 2 < cmd.ElemCount; k += 3) {
                Box box{1e9f, 1e9f, -1e9f, -1e9f};
                bool before = false;
                for (unsigned m = 0; m < 3; ++m) {
                    const int at = static_cast<int>(cmd.VtxOffset + list.IdxBuffer[static_cast<int>(cmd.IdxOffset + k + m)]);
                    before = before || at < first + 4;  // the stand-in's own four corners too
                    const ImDrawVert& v = list.VtxBuffer[at];
                    box = {std::min(box.x0, v.pos.x), std::min(box.y0, v.pos.y), std::max(box.x1, v.pos.x), std::max(box.y1, v.pos.y)};
                }
                if (before) continue;
                const Box shown = intersect(box, clip);
                if (shown.empty() || intersect(shown, matrix).empty()) continue;
                ++insideTriangles;
                EXPECT_GE(shown.x0, matrix.x0 - 0.5f) << "query " << query;
                EXPECT_GE(shown.y0, matrix.y0 - 0.5f) << "query " << query;
                EXPECT_LE(shown.x1, matrix.x1 + 0.5f) << "query " << query;
                EXPECT_LE(shown.y1, matrix.y1 + 0.5f) << "query " << query;
            }
        }
        EXPECT_GT(insideTriangles, 8);  // the numbers of the cells are drawn (two triangles a glyph)
    }
}

// File → Open scenario, then the window made smaller than the dialog was placed for: the dialog
// is inside the window, whole; Escape closes it.
TEST_F(WindowFaults, ADialogStaysInsideAWindowMadeSmallerAndEscapeClosesIt) {
    App app(makeState(core::loadPreset("default")));
    frames(app, 1);
    ImGuiIO& io = ImGui::GetIO();
    io.KeyCtrl = true;
    io.KeysDown[GLFW_KEY_O] = true;
    headless::drawFrame(app);
    io.KeyCtrl = false;
    io.KeysDown[GLFW_KEY_O] = false;
    headless::drawFrame(app);
    for (const ImVec2 size : {ImVec2(600, 500), ImVec2(320, 240)}) {
        io.DisplaySize = size;
        for (int f = 0; f < 3; ++f) headless::drawFrame(app);
        const ImGuiWindow* dialog = ImGui::FindWindowByName("Open scenario");
        ASSERT_NE(dialog, nullptr);
        ASSERT_TRUE(dialog->Active) << "the dialog closed by itself";
        EXPECT_GE(dialog->Pos.x, 0.0f) << size.x;
        EXPECT_GE(dialog->Pos.y, 0.0f) << size.x;
        EXPECT_LE(dialog->Pos.x + dialog->Size.x, size.x) << size.x;
        EXPECT_LE(dialog->Pos.y + dialog->Size.y, size.y) << size.x;
    }
    io.KeysDown[GLFW_KEY_ESCAPE] = true;
    headless::drawFrame(app);
    io.KeysDown[GLFW_KEY_ESCAPE] = false;
    headless::drawFrame(app);
    headless::drawFrame(app);
    EXPECT_FALSE(ImGui::FindWindowByName("Open scenario")->Active);
}

// The Presets menu loads a preset as an action; the window's title is the scenario's name after it.
TEST_F(WindowFaults, TheTitleFollowsAPresetChosenFromTheMenu) {
    App app(makeState(core::loadPreset("default")));
    frames(app, 1);
    const std::string before = windowTitle(app.state());
    const core::Preset& other = core::presets().back();
    ASSERT_NE("attnviz — " + other.scenario.name, before);
    apply(app.state(), action::LoadScenario{other.scenario, other.id, ""});
    frames(app, 1);
    EXPECT_EQ(windowTitle(app.state()), "attnviz — " + other.scenario.name);
}

}  // namespace
