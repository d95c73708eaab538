// The fixture the panel tests share: a fresh folder and a 1600 × 1000 ImGui context for each test,
// and frames drawn until the state is fresh, each checked against ImGui's 16-bit indices.
#pragma once

#include "app/app.hpp"
#include "core/io/npy.hpp"
#include "core/models/loaded_model.hpp"
#include "tests/gui/headless.hpp"
#include "tests/test_folder.hpp"
#include "tests/tiny_gpt2.hpp"

#include <gtest/gtest.h>
#include <imgui.h>

#include <algorithm>
#include <string>
#include <string_view>

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

    // Reveals panel `id`, draws `more` frames (as frames() does) and checks that it is on screen.
    static void reveal(App& app, std::string_view id, int more = 3) {
        app.revealPanel(id);
        frames(app, more);
        ASSERT_TRUE(app.panelRects().count(std::string(id))) << id;
    }

    // A tiny GPT-2 checkpoint written into the test's folder (tests/tiny_gpt2.hpp, seed 7), and a
    // scenario reading " the he the t" with it.
    core::Scenario tinyGpt2Scenario() const {
        tinygpt2::writeCheckpoint(m_dir, tinygpt2::weights(7));
        core::Scenario s;
        s.model = core::modelFolder(m_dir.string());
        s.sentence = " the he the t";
        s.causal = true;
        return s;
    }

    // Attention computed elsewhere, written as `name` ([layers, heads, t, t] float32): every map
    // causal, each row spread evenly over the keys it may read; a scenario importing it.
    core::Scenario causalImport(const std::string& name, int layers, int heads, int t) const {
        std::string f = core::npyHeader({layers, heads, t, t});
        for (int m = 0; m < layers * heads; ++m)
            for (int i = 0; i < t; ++i)
                for (int j = 0; j < t; ++j) {
                    const float v = j <= i ? 1.0f / static_cast<float>(i + 1) : 0.0f;
                    f.append(reinterpret_cast<const char*>(&v), 4);
                }
        testfs::writeFile(path(name), f);
        core::Scenario s;
        s.name = name;
        s.attention = path(name).string();
        return s;
    }
};

}  // namespace attnviz::app::headless
