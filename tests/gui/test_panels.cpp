// Every panel drawn for a few frames without a window: ImGui only needs a display size and a
// built font atlas. Interactions go through the app's own action layer.
#include "app/app.hpp"
#include "app/panels/bars_panel.hpp"
#include "app/panels/controls_panel.hpp"
#include "app/panels/panel_table.hpp"
#include "app/panels/stages_panel.hpp"
#include "app/panels/swap_panel.hpp"
#include "app/state/rollout_view.hpp"
#include "app/widgets/text.hpp"
#include "core/io/lesson.hpp"
#include "core/models/loaded_model.hpp"
#include "core/scenario/presets.hpp"
#include "tests/gui/headless.hpp"
#include "tests/test_folder.hpp"
#include "tests/tiny_gpt2.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

using namespace attnviz;
using namespace attnviz::app;

namespace {

class Headless : public ::testing::Test {
protected:
    void SetUp() override { headless::createContext(ImVec2(1600, 1000)); }
    void TearDown() override { ImGui::DestroyContext(); }

    // Runs frames of the whole app, as the window loop does.
    static void frames(App& app, int n) {
        for (int i = 0; i < n; ++i) {
            headless::drawFrame(app);
            ASSERT_GT(ImGui::GetDrawData()->TotalVtxCount, 1000);
        }
    }
};

}  // namespace

TEST_F(Headless, EveryPresetDrawsEveryPanel) {
    for (const std::string& id : core::presetIds()) {
        SCOPED_TRACE(id);
        App app(makeState(core::loadPreset(id)));
        frames(app, 3);
        EXPECT_EQ(app.panelRects().size(), 7u);
        for (const auto& [panel, rect] : app.panelRects()) {
            EXPECT_GT(rect.max.x - rect.min.x, 100.0f) << panel;
            EXPECT_GT(rect.max.y - rect.min.y, 100.0f) << panel;
        }
    }
}

TEST_F(Headless, LabPanelsReplaceTheBottomRow) {
    for (const std::string& id : core::presetIds()) {
        SCOPED_TRACE(id);
        App app(makeState(core::loadPreset(id)));
        for (Lab lab : {Lab::Linear, Lab::Cost, Lab::Train}) {
            apply(app.state(), action::SetLab{lab});
            apply(app.state(), action::SetFastWeightSteps{2});
            frames(app, 3);
            const char* shown = lab == Lab::Linear ? "linear" : lab == Lab::Cost ? "cost" : "train";
            ASSERT_TRUE(app.panelRects().count(shown));
            EXPECT_FALSE(app.panelRects().count("swap"));
            EXPECT_EQ(app.panelRects().size(), 5u);
            EXPECT_GT(app.panelRects().at(shown).max.x - app.panelRects().at(shown).min.x, 800.0f);
        }
        apply(app.state(), action::SetLab{Lab::None});
        frames(app, 1);
        EXPECT_EQ(app.panelRects().size(), 7u);
    }
}

TEST_F(Headless, LessonStepsLayOutTheirPanelsAboveTheLessonStrip) {
    AppState state = makeState(core::loadPreset("default"));
    ASSERT_TRUE(apply(state, action::OpenLesson{core::loadLesson("attention")}));
    App app(std::move(state));
    const core::Lesson lesson = core::loadLesson("attention");
    for (int step = 0; step < static_cast<int>(lesson.steps.size()); ++step) {
        SCOPED_TRACE(step);
        apply(app.state(), action::GoToLessonStep{step});
        frames(app, 3);
        const auto& rects = app.panelRects();
        ASSERT_TRUE(rects.count("lesson"));
        const float stripTop = rects.at("lesson").min.y;
        for (const std::string& id : lesson.steps[static_cast<std::size_t>(step)].panels) {
            ASSERT_TRUE(rects.count(id)) << id;
            EXPECT_LE(rects.at(id).max.y, stripTop + 0.5f) << id;
            EXPECT_GT(rects.at(id).max.x - rects.at(id).min.x, 300.0f) << id;
        }
        if (lesson.steps[static_cast<std::size_t>(step)].panels.empty()) {
            EXPECT_TRUE(rects.count("controls"));
        }
    }
    apply(app.state(), action::CloseLesson{});
    frames(app, 1);
    EXPECT_FALSE(app.panelRects().count("lesson"));
}

TEST_F(Headless, PresenterModeShowsHeatmapBarsAndHeads) {
    AppState state = makeState(core::loadPreset("default"));
    apply(state, action::SetPresenter{true});
    App app(std::move(state));
    frames(app, 2);
    EXPECT_EQ(app.panelRects().size(), 3u);
    EXPECT_TRUE(app.panelRects().count("heatmap"));
    EXPECT_FALSE(app.panelRects().count("controls"));
    EXPECT_GT(app.panelRects().at("heatmap").max.x, 1000.0f);  // the heatmap takes most of the width
}

TEST_F(Headless, RolloutViewIsMadeByTheAppOnceAndDrawnByHeatmapAndBars) {
    for (const std::string id : {"seed004-causal", "random-heads"}) {
        SCOPED_TRACE(id);
        AppState state = makeState(core::loadPreset(id));
        apply(state, action::SetRollout{true});
        apply(state, action::SetRolloutHeads{core::RolloutHeads::Max});
        App app(std::move(state));
        frames(app, 3 + app.state().model.heads);  // a head a frame, then the rollout
        EXPECT_TRUE(rolloutCurrent(app.state()));
        ASSERT_NE(shownRollout(app.state()), nullptr);
        EXPECT_EQ(app.state().work.rollouts, 1);
        frames(app, 3);
        EXPECT_EQ(app.state().work.rollouts, 1);  // not per frame
        EXPECT_TRUE(app.panelRects().count("heatmap"));
        EXPECT_TRUE(app.panelRects().count("bars"));
    }
}

TEST_F(Headless, ThemesScalesAndLargeMatrices) {
    core::Scenario s;
    s.tokens = std::vector<std::string>(300, "x");
    for (int i = 0; i < 300; ++i) (*s.tokens)[static_cast<std::size_t>(i)] = "t" + std::to_string(i);
    s.heads = 8;
    s.dModel = 64;
    AppState state = makeState(s);
    App app(std::move(state));
    for (Theme theme : {Theme::Light, Theme::HighContrast, Theme::Dark}) {
        apply(app.state(), action::SetTheme{theme});
        apply(app.state(), action::SetUiScale{theme == Theme::Light ? 1.5f : 1.0f});
        apply(app.state(), action::SetView{8.0f, 0.3f, 0.7f});
        frames(app, 2);
    }
    EXPECT_EQ(app.state().model.tq(), 300);
}

TEST_F(Headless, ActionsFromFramesAreAppliedAndRecomputedLazily) {
    App app(makeState(core::loadPreset("default")));
    // Before the first frame: the visible head's weights only. Then a head a frame: the visible
    // head's A·V, then the other three heads.
    EXPECT_EQ(app.state().work.scores, 1);
    EXPECT_EQ(app.state().work.outputs, 0);
    frames(app, 1);
    EXPECT_EQ(app.state().work.scores, 1);
    EXPECT_EQ(app.state().work.outputs, 1);
    frames(app, 3);
    EXPECT_EQ(app.state().work.scores, 4);
    EXPECT_TRUE(isFresh(app.state()));
    const WorkCounters before = app.state().work;
    apply(app.state(), action::SetTemperature{0.05f});
    frames(app, 1);
    // The frame of the change computes the visible head's new weights and nothing else.
    EXPECT_EQ(app.state().work.softmaxes, before.softmaxes + 1);
    EXPECT_EQ(app.state().work.outputs, before.outputs);
    EXPECT_TRUE(weightsFresh(app.state(), app.state().view.selectedHead));
    EXPECT_FALSE(isFresh(app.state()));
    frames(app, 1);  // its A·V
    EXPECT_EQ(app.state().work.softmaxes, before.softmaxes + 1);
    EXPECT_EQ(app.state().work.outputs, before.outputs + 1);
    frames(app, 3);                                     // the other heads, one a frame
    EXPECT_EQ(app.state().work.scores, before.scores);  // no new Q Kᵀ for a temperature change
    EXPECT_EQ(app.state().work.softmaxes, before.softmaxes + 4);
    EXPECT_EQ(app.state().work.outputs, before.outputs + 4);
    EXPECT_TRUE(isFresh(app.state()));
    frames(app, 1);  // draws the new weights: their textures are uploaded once
    const long long uploads = app.textureUploads();
    frames(app, 3);  // nothing changed since: nothing is re-uploaded
    EXPECT_EQ(app.textureUploads(), uploads);
    // The textures hold colours: another colormap re-colours every map on screen (the heatmap
    // and the four thumbnails at least), and so does another colour scale; once, computing nothing.
    for (const auto& [change, maps] : {std::pair{Action{action::SetColormap{core::ColormapKind::Magma}}, 5},
                                       std::pair{Action{action::SetColourScale{core::ColourScale::Log}}, 5}}) {
        const WorkCounters work = app.state().work;
        const long long at = app.textureUploads();
        apply(app.state(), change);
        frames(app, 1);
        EXPECT_GE(app.textureUploads(), at + maps);
        const long long recoloured = app.textureUploads();
        frames(app, 2);
        EXPECT_EQ(app.textureUploads(), recoloured);
        EXPECT_EQ(app.state().work.softmaxes, work.softmaxes);
        EXPECT_EQ(app.state().work.scores, work.scores);
    }
}

TEST_F(Headless, AModelOpeningInTheBackgroundIsShownThenAdopted) {
    const auto dir = std::filesystem::temp_directory_path() / ("attnviz-test-" + std::to_string(::getpid()) + "-opening");
    std::filesystem::create_directories(dir);
    tinygpt2::writeCheckpoint(dir, tinygpt2::weights(7));
    App app(makeState(core::loadPreset("default")));
    frames(app, 2);
    core::Scenario next;
    next.model = core::modelFolder(dir.string());
    next.sentence = " the he";
    next.causal = true;
    ASSERT_TRUE(apply(app.state(), action::LoadScenario{next, "", "", true}));
    app.state().opening->wait();
    ASSERT_TRUE(app.state().opening->active());
    ImGui::NewFrame();
    app.frame();  // draws the opening's status, then adopts the model
    ImGui::Render();
    ASSERT_TRUE(app.state().loaded);
    EXPECT_FALSE(app.state().opening->active());
    EXPECT_EQ(app.state().loaded.labels, app.state().queryLabels);
    frames(app, 3);
    std::filesystem::remove_all(dir);
}

TEST_F(Headless, TheVisibleHeadIsPooledForTheHeatmapWithItsSoftmax) {
    core::Scenario s;
    s.sentence = "the cat sat on the mat";
    s.length = 1600;  // more keys than the heatmap has pixels: its texels are pooled
    s.dModel = 64;
    s.heads = 2;
    App app(makeState(s));
    frames(app, 4);
    ASSERT_TRUE(isFresh(app.state()));
    for (int change = 0; change < 2; ++change) {
        if (change == 0) apply(app.state(), action::SetTemperature{0.5f});
        else apply(app.state(), action::ToggleCausal{});
        frames(app, 1);  // the change's frame: the visible head's softmax, pooled as the heatmap draws it
        const AppState& st = app.state();
        ASSERT_EQ(st.pooled.head, 0);
        EXPECT_EQ(st.pooled.version, st.headVersions[0]);
        EXPECT_GE(st.pooled.factor, 3);                       // 1600 cells on about 770 pixels
        EXPECT_EQ(st.view.heatmapPooling, st.pooled.factor);  // the heatmap said so through an action
        std::vector<float> expected;
        core::poolTexels(st.forward.heads[0].weights, st.settings, st.pooled.factor, expected);
        EXPECT_EQ(st.pooled.texels, expected);
        const long long uploads = app.textureUploads();
        frames(app, 1);  // drawn: the heatmap and the head's thumbnail are uploaded from those texels
        EXPECT_GE(app.textureUploads(), uploads + 2);
    }
}

TEST(Pooling, PooledTexelsPooledAgainEqualTheMatrixPooledOnce) {
    core::Mat w = core::Mat::Random(67, 95).cwiseAbs();
    for (int variant = 0; variant < 3; ++variant) {
        core::Settings settings;
        settings.causal = variant >= 1;
        if (variant == 2) settings.paddedKeys = {0, 1, 2, 50};
        for (int factor : {1, 2, 3})
            for (int more : {1, 2, 5, 40}) {
                const gfx::MatrixSource first = gfx::texelsOf(w, settings, factor);
                const gfx::MatrixSource again = gfx::repooled(first.view(), w.rows(), w.cols(), factor, more);
                const gfx::MatrixSource once = gfx::texelsOf(w, settings, factor * more);
                SCOPED_TRACE(std::to_string(variant) + " " + std::to_string(factor) + " " + std::to_string(more));
                EXPECT_EQ(again.rows, once.rows);
                EXPECT_EQ(again.cols, once.cols);
                EXPECT_EQ(again.uScale, once.uScale);
                EXPECT_EQ(again.vScale, once.vScale);
                EXPECT_EQ(again.texels, once.texels);
            }
    }
}

TEST(SwapVerdict, WordsAndNumbers) {
    AppState s = makeState(core::loadPreset("seed004-swap"));
    recompute(s);
    // equal up to float rounding: the residue is shown as such, never as a bare 1e-7
    const std::string match = verdictText(s);
    EXPECT_TRUE(match == "outputs match the permutation: ‖Y′ − P·Y‖ = 0 exactly" ||
                match.starts_with("outputs match the permutation: ‖Y′ − P·Y‖ = 0 up to float rounding ("))
        << match;
    EXPECT_EQ(verdictReason(s), "");
    apply(s, action::SetPositional{core::Positional::Sinusoidal});
    recompute(s);
    EXPECT_EQ(verdictText(s).rfind("outputs do not match the permutation: ‖Y′ − P·Y‖ = ", 0), 0u) << verdictText(s);
    EXPECT_TRUE(verdictReason(s).starts_with("Positional encodings are added to X by position")) << verdictReason(s);
    apply(s, action::SetPositional{core::Positional::None});
    apply(s, action::SetCausal{true});
    recompute(s);
    EXPECT_EQ(verdictText(s).rfind("outputs do not match the permutation: ", 0), 0u) << verdictText(s);
    EXPECT_TRUE(verdictReason(s).starts_with("The causal mask depends on position")) << verdictReason(s);
    apply(s, action::SetCausal{false});
    // Relative positions break the permutation too, and so does a window.
    apply(s, action::SetPositional{core::Positional::Rope});
    recompute(s);
    EXPECT_TRUE(verdictReason(s).starts_with("RoPE turns q and k by their positions")) << verdictReason(s);
    apply(s, action::SetPositional{core::Positional::Alibi});
    recompute(s);
    EXPECT_TRUE(verdictReason(s).starts_with("ALiBi penalises each score")) << verdictReason(s);
    apply(s, action::SetPositional{core::Positional::None});
    apply(s, action::SetWindow{2});  // (a window of 1 is the diagonal alone, which any order keeps)
    recompute(s);
    EXPECT_TRUE(verdictReason(s).starts_with("The sliding window depends on position")) << verdictReason(s);
    apply(s, action::SetWindow{0});
    apply(s, action::ResetSwaps{});
    recompute(s);
    EXPECT_EQ(verdictText(s), "identity order: swap two chips to test");
}

TEST(SwapChips, TwoClicksSwap) {
    AppState s = makeState(core::loadPreset("seed004-swap"));
    apply(s, action::ResetSwaps{});
    apply(s, action::PickSwapChip{1});
    EXPECT_EQ(s.view.pendingSwap, 1);
    EXPECT_FALSE(s.swapped());
    apply(s, action::PickSwapChip{3});
    EXPECT_EQ(s.view.pendingSwap, -1);
    EXPECT_EQ(s.model.queryTokens, (std::vector<std::string>{"a", "d", "c", "b"}));
    apply(s, action::PickSwapChip{2});
    apply(s, action::PickSwapChip{2});  // the same chip twice: deselect, no swap
    EXPECT_EQ(s.view.pendingSwap, -1);
    EXPECT_EQ(s.scenario.swaps.size(), 1u);
}

TEST(TemperatureSlider, LogScaleWithDetentAtOne) {
    EXPECT_FLOAT_EQ(temperatureToSlider(1.0f), 0.5f);
    EXPECT_FLOAT_EQ(temperatureToSlider(0.01f), 0.0f);
    EXPECT_FLOAT_EQ(temperatureToSlider(100.0f), 1.0f);
    EXPECT_FLOAT_EQ(sliderToTemperature(0.5f), 1.0f);
    EXPECT_FLOAT_EQ(sliderToTemperature(0.505f), 1.0f);  // inside the detent
    EXPECT_NEAR(sliderToTemperature(0.75f), 10.0f, 1e-4f);
    EXPECT_NEAR(sliderToTemperature(0.25f), 0.1f, 1e-6f);
    for (float t : {0.02f, 0.3f, 3.0f, 50.0f}) EXPECT_NEAR(sliderToTemperature(temperatureToSlider(t)), t, t * 1e-5f);
}

TEST(SmallMultiples, SpreadAndIncludeTheSelectedQuery) {
    EXPECT_EQ(smallMultiplePositions(22, 0, 5), (std::vector<int>{0, 5, 11, 16, 21}));
    EXPECT_EQ(smallMultiplePositions(22, 7, 5), (std::vector<int>{0, 5, 7, 11, 16, 21}));
    EXPECT_EQ(smallMultiplePositions(3, 1, 5), (std::vector<int>{0, 1, 2}));
}

// ---- User text of any length: 16-bit draw indices (Debian's Dear ImGui 1.86) ----

namespace {

std::string times(std::string_view unit, int n) {
    std::string out;
    for (int i = 0; i < n; ++i) out += unit;
    return out;
}

// Tokens no label can show whole, right-to-left scripts, an emoji sequence, a lone combining
// mark and invisible characters.
core::Scenario hostileScenario() {
    core::Scenario s;
    s.tokens = std::vector<std::string>{std::string(40000, 'a'),
                                        times("שלום ", 8000),
                                        times("مرحبا", 8000),
                                        times("e\u0301", 20000),
                                        "שלום",
                                        "مرحبا",
                                        "👩‍👩‍👧",
                                        "\u0301",
                                        "\x01",
                                        "\t",
                                        "\x7f",
                                        "\u200b",
                                        "a\x01"
                                        "b\tc\x7f"
                                        "d\u200b",
                                        "b"};
    s.name = std::string(40000, 'n');
    s.description = std::string(40000, 'd');
    return s;
}

core::Lesson hostileLesson() {
    core::LessonStep step;
    step.title = std::string(40000, 'T');
    step.text = {std::string(20000, 'x'), times("word ", 4000)};
    step.scenario = hostileScenario();
    step.check = core::QuickCheck{std::string(40000, 'q')};
    core::LessonStep panels = step;
    panels.panels = {"heatmap", "bars", "swap", "stages"};
    return core::Lesson{"hostile", std::string(40000, 't'), {step, panels}};
}

}  // namespace

TEST_F(Headless, TextOfAnyLengthIsClippedBeforeImGui) {
    App app(makeState(hostileScenario()));
    app.state().error = std::string(40000, 'e');
    const auto draw = [&](const std::string& what) {
        // The mouse sweeps the window, so every panel's hover tooltips are drawn too.
        const ImVec2 size = ImGui::GetIO().DisplaySize;
        for (int f = 0; f < 48; ++f) {
            ImGui::GetIO().MousePos =
                ImVec2(size.x * (static_cast<float>(f % 8) + 0.5f) / 8.0f, size.y * (static_cast<float>(f / 8) + 0.5f) / 6.0f);
            app.state().view.stage = f % kStageCount;
            app.prepareFonts(1.0f, 1.0f);
            app.prepareStyle(1.0f);
            ImGui::NewFrame();
            app.frame();
            ImGui::Render();
            const ImDrawData* data = ImGui::GetDrawData();
            for (int i = 0; i < data->CmdListsCount; ++i)
                ASSERT_LT(data->CmdLists[i]->VtxBuffer.Size, 65536) << what << ", " << data->CmdLists[i]->_OwnerName;
        }
    };
    for (const ImVec2 display : {ImVec2(1280, 720), ImVec2(1920, 1080)})
        for (const float scale : {1.0f, 2.0f}) {
            const std::string config = std::to_string(static_cast<int>(display.x)) + " at " + std::to_string(static_cast<int>(scale));
            ImGui::GetIO().DisplaySize = display;
            apply(app.state(), action::SetUiScale{scale});
            app.notify(std::string(40000, 'm'), true);
            for (Lab lab : {Lab::None, Lab::Linear, Lab::Cost, Lab::Train}) {
                apply(app.state(), action::SetLab{lab});
                draw(config + ", lab " + std::to_string(static_cast<int>(lab)));
            }
            apply(app.state(), action::SetLab{Lab::None});
            apply(app.state(), action::SetSmallMultiples{true});
            apply(app.state(), action::SelectHead{-1});
            draw(config + ", small multiples, mean");
            apply(app.state(), action::SetPresenter{true});
            draw(config + ", presenter");
            ASSERT_TRUE(apply(app.state(), action::OpenLesson{hostileLesson()}));
            draw(config + ", lesson");
            ASSERT_TRUE(apply(app.state(), action::StepLesson{+1}));
            draw(config + ", lesson step with panels");
            apply(app.state(), action::SetPresenter{false});
            apply(app.state(), action::CloseLesson{});
            apply(app.state(), action::SetSmallMultiples{false});
        }
}

TEST_F(Headless, LabelsFitAWidthInTheFont) {
    ImGui::GetIO().Fonts->AddFontDefault();
    ImGui::GetIO().Fonts->Build();
    ImGui::NewFrame();
    const std::string token(40000, 'a');
    for (float width : {1.0f, 30.0f, 100.0f, 400.0f}) {
        const std::string shown = widgets::fitLabel(token, width);
        EXPECT_TRUE(shown.ends_with("…"));
        EXPECT_FALSE(shown.empty());
        if (shown != "…") {
            EXPECT_LE(ImGui::CalcTextSize(shown.c_str()).x, width);
        }
    }
    EXPECT_EQ(widgets::fitLabel("abc", 1000.0f), "abc");
    EXPECT_EQ(widgets::fitLabel("abc", 1.0f), "…");
    EXPECT_EQ(widgets::fitLabel("e\u0301e\u0301e\u0301e\u0301", ImGui::CalcTextSize("e\u0301e\u0301…").x + 0.5f), "e\u0301e\u0301…");
    ImGui::EndFrame();
}

// One panel table: the app builds its panels from it, and the lesson format's panel ids and lab
// names are exactly the table's (but for the controls and the lesson strip) and the lab table's.
TEST_F(Headless, PanelTableIsTheOneListOfPanels) {
    std::set<std::string> ids;
    for (const PanelInfo& p : panelTable()) {
        EXPECT_TRUE(ids.insert(std::string(p.id)).second) << p.id << " twice";
        EXPECT_EQ(findPanel(p.id), &p);
        EXPECT_GT(std::string(p.title).size(), 3u);
    }
    EXPECT_EQ(findPanel("fourier"), nullptr);
    App app(makeState(core::loadPreset("default")));
    const std::vector<std::string> built = app.panelIds();
    EXPECT_EQ(std::set<std::string>(built.begin(), built.end()), ids);
    EXPECT_EQ(built.size(), panelTable().size());

    std::set<std::string> inLessons = ids;
    inLessons.erase(std::string(panel_id::kControls));
    inLessons.erase(std::string(panel_id::kLesson));
    const auto& lessonIds = core::lessonPanelIds();
    EXPECT_EQ(std::set<std::string>(lessonIds.begin(), lessonIds.end()), inLessons);

    std::vector<std::string> labs;
    for (const LabInfo& l : kLabs) {
        labs.emplace_back(l.name);
        EXPECT_NE(findPanel(l.name), nullptr) << "no panel for the lab " << l.name;
    }
    EXPECT_EQ(core::lessonLabNames(), labs);
}

// Seed 002's exercises 3 and 5, checked live in the Stages panel.
TEST(Panels, StagesSayWhetherScoresAreSymmetricAndWhetherVIsK) {
    const auto stateOf = [](const char* preset) {
        AppState s = makeState(core::loadPreset(preset));
        recompute(s);
        return s;
    };
    const AppState tied = stateOf("seed002-wq-equals-wk");
    const StageCheck symmetric = stageCheck(tied, 4, 0);
    EXPECT_TRUE(symmetric.holds);
    EXPECT_EQ(symmetric.text.rfind("symmetric: max |S − Sᵀ| = 0", 0), 0u) << symmetric.text;
    EXPECT_TRUE(stageCheck(tied, 3, 0).text.empty());  // V is not K there
    const AppState plain = stateOf("default");
    const StageCheck not_ = stageCheck(plain, 4, 0);
    EXPECT_FALSE(not_.holds);
    EXPECT_EQ(not_.text.rfind("not symmetric: max |S − Sᵀ| = ", 0), 0u) << not_.text;
    const AppState values = stateOf("seed002-v-equals-k");
    EXPECT_TRUE(stageCheck(values, 3, 0).holds);
    EXPECT_EQ(stageCheck(values, 3, 0).text.rfind("V = K: max |V − K| = 0", 0), 0u);
    EXPECT_TRUE(stageCheck(values, 5, 0).text.empty());
}

// The model view and the head statistics, for a scenario (asked for, as the View menu does) and
// a tiny model (always on tabs): drawn, their summary made once for the pass and never per frame,
// their tiles' atlas uploaded once.
TEST_F(Headless, ModelViewAndStatisticsDrawAScenarioAndAModelFromOneSummary) {
    App scenario(makeState(core::loadPreset("random-heads")));
    for (const std::string_view id : {panel_id::kModel, panel_id::kStats}) {
        SCOPED_TRACE(id);
        scenario.revealPanel(id);
        frames(scenario, 24);  // a head a frame, then the summary
        ASSERT_TRUE(scenario.panelRects().count(std::string(id)));
        EXPECT_TRUE(isFresh(scenario.state()));
        ASSERT_TRUE(scenario.state().headSummary.key.has_value());
        EXPECT_EQ(scenario.state().headSummary.heads, scenario.state().model.heads);
    }
    const core::HeadStats* made = scenario.state().headSummary.stats.data();
    scenario.revealPanel(panel_id::kModel);
    frames(scenario, 2);
    const long long uploads = scenario.textureUploads();
    frames(scenario, 5);
    EXPECT_EQ(scenario.state().headSummary.stats.data(), made) << "the summary was made again";
    EXPECT_EQ(scenario.textureUploads(), uploads) << "a redraw uploaded a texture";

    const auto dir = std::filesystem::temp_directory_path() / ("attnviz-test-" + std::to_string(::getpid()) + "-model-view");
    std::filesystem::create_directories(dir);
    tinygpt2::writeCheckpoint(dir, tinygpt2::weights(7));
    core::Scenario sc;
    sc.model = core::modelFolder(dir.string());
    sc.sentence = " the the he then";
    sc.causal = true;
    App model(makeState(sc));
    frames(model, 3);
    ASSERT_TRUE(model.panelRects().count(std::string(panel_id::kModel)));
    EXPECT_EQ(model.state().headSummary.layers, tinygpt2::kLayers);
    for (const std::string_view id : {panel_id::kStats, panel_id::kModel}) {
        model.revealPanel(id);
        frames(model, 3);
        EXPECT_TRUE(model.panelRects().count(std::string(id))) << id;
    }
    // A head of another layer previewed (the model view's hover): the heatmap draws it from the
    // model's pass, one texture for it, while the rest stays on the selection.
    ASSERT_TRUE(apply(model.state(), action::SetPreviewHead{1, 1}));
    const long long beforePreview = model.textureUploads();
    frames(model, 3);
    EXPECT_EQ(model.state().view.previewLayer, 1);
    EXPECT_EQ(model.textureUploads(), beforePreview + 1);
    ASSERT_TRUE(apply(model.state(), action::SetPreviewHead{-2}));
    frames(model, 2);
    // Presenter mode and a small window keep both within reach, on tabs.
    ASSERT_TRUE(apply(model.state(), action::SetPresenter{true}));
    frames(model, 2);
    EXPECT_TRUE(model.panelRects().count(std::string(panel_id::kModel)));
    ImGui::GetIO().DisplaySize = ImVec2(800, 600);
    ASSERT_TRUE(apply(model.state(), action::SetPresenter{false}));
    model.revealPanel(panel_id::kStats);
    frames(model, 2);
    EXPECT_TRUE(model.panelRects().count(std::string(panel_id::kStats)));
    std::filesystem::remove_all(dir);
}

TEST_F(Headless, TheComparePanelRunsTheOtherSentenceOnceAndDrawsThreeMaps) {
    for (const std::string id : {"default", "random-heads"}) {
        SCOPED_TRACE(id);
        AppState state = makeState(core::loadPreset(id));
        ASSERT_TRUE(apply(state, action::SetCompare{"the dog sat on the red mat"}));
        App app(std::move(state));
        frames(app, 3 + app.state().model.heads);                              // a head a frame, then the other sentence
        ASSERT_TRUE(app.panelRects().count(std::string(panel_id::kCompare)));  // --compare reveals it
        ASSERT_TRUE(app.state().compare.ready()) << app.state().compare.why;
        EXPECT_EQ(app.state().work.compares, 1);
        const long long uploads = app.textureUploads();
        frames(app, 4);
        EXPECT_EQ(app.state().work.compares, 1);  // not per frame
        EXPECT_EQ(app.textureUploads(), uploads) << "a redraw uploaded a texture";
        ASSERT_TRUE(apply(app.state(), action::SetUiScale{2.0f}));
        frames(app, 2);
        EXPECT_TRUE(app.panelRects().count(std::string(panel_id::kCompare)));
    }
}
