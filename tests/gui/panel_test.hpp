// The fixture the panel tests share: a fresh folder and a 1600 × 1000 ImGui context for each test,
// and frames drawn until the state is fresh, each checked against ImGui's 16-bit indices.
#pragma once

#include "app/app.hpp"
#include "tests/gui/headless.hpp"
#include "tests/test_folder.hpp"

#include <gtest/gtest.h>
#include <imgui.h>

#include <algorithm>

namespace attnviz::app::headless {

class PanelTest : public testfs::TestFolder {
protected:
    void SetUp() override {
        testfs::TestFolder::SetUp();
        createContext(ImVec2(1600, 1000));
    }
    void TearDown() override {
        ImGui::DestroyContext();
        testfs::TestFolder::TearDown();
    }

    // Frames until the state is fresh (a frame finishes part of the work; 128 at most), then
    // `more`. Each of those draws something, and every draw list stays under 65,536 vertices, what
    // 16-bit indices address. Returns the largest of those frames' vertex counts.
    static int frames(App& app, int more) {
        for (int i = 0; i < 128 && !isFresh(app.state()); ++i) drawFrame(app);
        int largest = 0;
        for (int i = 0; i < more; ++i) {
            drawFrame(app);
            const ImDrawData* data = ImGui::GetDrawData();
            EXPECT_GT(data->TotalVtxCount, 500);
            largest = std::max(largest, data->TotalVtxCount);
            for (int n = 0; n < data->CmdListsCount; ++n) EXPECT_LT(data->CmdLists[n]->VtxBuffer.Size, 65536);
        }
        return largest;
    }
};

}  // namespace attnviz::app::headless
