// The panels fit their windows: presets and presenter mode drawn without a window at 1280 × 720
// and 1920 × 1080, UI scale 1 to 2.5, each panel brought to the front in turn where they share a
// place as tabs. A panel's content that runs past its window (or one of its children's)
// shows in ImGui's ScrollMax, the content's extent beyond the window's inner size, whether or not
// a scrollbar is drawn.
#include "app/app.hpp"
#include "core/io/lesson.hpp"
#include "core/scenario/presets.hpp"
#include "tests/gui/headless.hpp"

#include <gtest/gtest.h>
#include <imgui_internal.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

using namespace attnviz;
using namespace attnviz::app;

namespace {

struct Screen {
    float width, height, scale;
};

std::vector<Screen> screens() {
    std::vector<Screen> out;
    for (const auto& [w, h] : std::vector<std::pair<float, float>>{{1280, 720}, {1920, 1080}})
        for (const float scale : {1.0f, 1.5f, 2.0f, 2.5f}) out.push_back({w, h, scale});
    return out;
}

// The windows of the last frame whose content runs past their inner size, as "name (dx, dy)".
std::vector<std::string> overflowing() {
    std::vector<std::string> out;
    for (ImGuiWindow* win : GImGui->Windows) {
        if (!win->WasActive || win->Hidden) continue;
        const std::string name = win->Name;
        // The menu bar's own layout, and transient windows: tooltips, popups, the toast.
        if (name.starts_with("##MainMenuBar") || name.starts_with("##Tooltip") || name.starts_with("##Popup") ||
            name.starts_with("##toast") || name.starts_with("##Menu"))
            continue;
        // The head statistics' table lists every head (1,200 for GPT-2 XL): its rows scroll by design.
        const bool scrollsRows = name.find("##head stats") != std::string::npos;
        if (win->ScrollMax.x > 0.5f || (!scrollsRows && win->ScrollMax.y > 0.5f)) {
            char buf[64];
            std::snprintf(buf, sizeof buf, " (%.0f, %.0f)", win->ScrollMax.x, win->ScrollMax.y);
            out.push_back(name + buf);
        }
    }
    return out;
}

// Draws `state` at `screen` as it opens (and with `everyPanel` each panel brought to the front in
// turn), and adds what overflowed.
void check(AppState state, const Screen& screen, const std::string& what, bool everyPanel, std::vector<std::string>& failures) {
    headless::createContext(ImVec2(screen.width, screen.height));
    {
        state.view.uiScale = screen.scale;
        App app(std::move(state));
        const auto frames = [&](int n) {
            for (int i = 0; i < n; ++i) headless::drawFrame(app);
        };
        std::vector<std::string> panels = {""};
        if (everyPanel)
            for (const std::string& id : app.panelIds()) panels.push_back(id);
        for (const std::string& panel : panels) {
            if (!panel.empty()) app.revealPanel(panel);
            frames(3);  // ImGui measures a window's content in the frame after it is drawn
            char where[96];
            std::snprintf(where, sizeof where, "%.0fx%.0f at %.1f, %s", screen.width, screen.height, screen.scale,
                          panel.empty() ? "as it opens" : ("showing " + panel).c_str());
            for (const std::string& w : overflowing()) failures.push_back(what + " (" + where + "): " + w);
        }
    }
    ImGui::DestroyContext();
}

std::string report(const std::vector<std::string>& failures) {
    std::string out;
    for (std::size_t i = 0; i < failures.size() && i < 40; ++i) out += "\n  " + failures[i];
    if (failures.size() > 40) out += "\n  … and " + std::to_string(failures.size() - 40) + " more";
    return out;
}

}  // namespace

TEST(Fit, EveryPresetsPanelsFitAtEverySizeAndScale) {
    std::vector<std::string> failures;
    for (const Screen& screen : screens())
        for (const std::string& id : core::presetIds()) check(makeState(core::loadPreset(id)), screen, id, true, failures);
    EXPECT_TRUE(failures.empty()) << failures.size() << " overflowing windows:" << report(failures);
}

TEST(Fit, PresenterModeFitsWithEachPanelInFront) {
    std::vector<std::string> failures;
    for (const Screen& screen : screens())
        for (const char* id : {"default", "random-heads", "seed004-causal"}) {
            AppState s = makeState(core::loadPreset(id));
            s.view.presenter = true;
            check(std::move(s), screen, std::string("presenter ") + id, true, failures);
        }
    EXPECT_TRUE(failures.empty()) << failures.size() << " overflowing windows:" << report(failures);
}

// Each lab, before its button is pressed and with its results, in the place of the bottom row or
// as a tab. The cost sweep's times here are made up (the layout is what is tested).
TEST(Fit, EveryLabFitsBeforeAndAfterItRuns) {
    std::vector<std::string> failures;
    for (const LabInfo& info : kLabs)
        for (const bool ran : {false, true}) {
            if (!ran && info.lab == Lab::Linear) continue;  // nothing to run
            const auto state = [&] {
                AppState s = makeState(core::loadPreset("default"));
                s.view.lab = info.lab;
                s.labs.jobs = std::make_unique<LabJobs>([](long long tokens, int width, const std::atomic<bool>&) {
                    core::CostPoint p;
                    p.tokens = tokens, p.width = width;
                    p.rnnMs = 0.01 * static_cast<double>(tokens), p.attentionMs = 1e-5 * static_cast<double>(tokens * tokens);
                    return p;
                });
                if (ran && info.lab == Lab::Cost) {
                    EXPECT_TRUE(apply(s, action::StartCostSweep{}));
                    while (costSnapshot(s).running) std::this_thread::yield();
                }
                if (ran && info.lab == Lab::Train) {
                    TrainSettings settings;
                    settings.steps = 20;
                    EXPECT_TRUE(apply(s, action::StartTraining{settings}));
                    while (trainSnapshot(s).running) std::this_thread::yield();
                }
                return s;
            };
            for (const Screen& screen : screens())
                check(state(), screen, std::string(info.name) + (ran ? " lab, run" : " lab"), true, failures);
        }
    EXPECT_TRUE(failures.empty()) << failures.size() << " overflowing windows:" << report(failures);
}

// Every step of every shipped lesson, with its strip, panels and lab.
TEST(Fit, EveryLessonStepFits) {
    std::vector<std::string> failures;
    for (const core::Lesson& lesson : core::lessons())
        for (std::size_t step = 0; step < lesson.steps.size(); ++step)
            for (const Screen& screen : screens()) {
                AppState s = makeState(core::loadPreset("default"));
                EXPECT_TRUE(apply(s, action::OpenLesson{lesson}));
                EXPECT_TRUE(apply(s, action::GoToLessonStep{static_cast<int>(step)}));
                check(std::move(s), screen, lesson.id + " step " + std::to_string(step + 1), false, failures);
            }
    EXPECT_TRUE(failures.empty()) << failures.size() << " overflowing windows:" << report(failures);
}

// Small multiples: as many charts as stay legible, at every size.
TEST(Fit, SmallMultiplesFit) {
    std::vector<std::string> failures;
    for (const Screen& screen : screens())
        for (const char* id : {"default", "seed004-causal"}) {
            AppState s = makeState(core::loadPreset(id));
            s.view.smallMultiples = true;
            check(std::move(s), screen, std::string("small multiples ") + id, true, failures);
        }
    EXPECT_TRUE(failures.empty()) << failures.size() << " overflowing windows:" << report(failures);
}

// A long sentence (T = 511, the swap panel's chips and the labels thinned), each panel in front.
TEST(Fit, LongSentenceFits) {
    std::vector<std::string> failures;
    for (const Screen& screen : screens()) {
        core::Scenario scenario = core::loadPreset("default");
        scenario.length = 511;
        check(makeState(scenario), screen, "default at T = 511", true, failures);
    }
    EXPECT_TRUE(failures.empty()) << failures.size() << " overflowing windows:" << report(failures);
}

// The positional panel for each way of positions, with grouped heads and a window.
TEST(Fit, EveryPositionalKindFits) {
    std::vector<std::string> failures;
    for (const core::Positional kind : {core::Positional::Sinusoidal, core::Positional::Rope, core::Positional::Alibi})
        for (const Screen& screen : screens()) {
            core::Scenario scenario = core::loadPreset("default");
            scenario.positional = kind;
            scenario.kvHeads = 2;
            scenario.window = 3;
            scenario.causal = true;
            check(makeState(scenario), screen, std::string("positional ") + core::positionalName(kind), true, failures);
        }
    EXPECT_TRUE(failures.empty()) << failures.size() << " overflowing windows:" << report(failures);
}
