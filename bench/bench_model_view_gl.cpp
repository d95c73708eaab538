// Google Benchmark of the model view's redraw once its summary is made, in a hidden OpenGL 3.3
// window (needs a display: xvfb-run -a ./build/attnviz_model_view_bench): a GPT-2-small-shaped
// checkpoint (12 layers × 12 heads, a narrow width: the view's work depends on the grid and T,
// not on d_model) read at T = 256, the model view panel alone in a 1600 × 1000 window (the app's
// default), at the size the layout gives it there (the bottom row, 1260 × 420) or filling the
// window; ImGui's frame built and rendered (the atlas's one quad, the labels, gaps and frames)
// into an offscreen target, cleared first as a frame is, and waited for. Times are wall clock;
// "CPU" is the whole process's (every thread, the software rasterizer's included).
#include "app/gfx/capture.hpp"
#include "app/gfx/heatmap_renderer.hpp"
#include "app/gfx/texture_cache.hpp"
#include "app/panels/panel_table.hpp"
#include "app/platform/imgui_instance.hpp"
#include "app/platform/process.hpp"
#include "app/state/head_summary.hpp"
#include "tests/sized_gpt2.hpp"

#include <benchmark/benchmark.h>
#include <glad/gl.h>
#include <GLFW/glfw3.h>

#include <cstdio>
#include <filesystem>
#include <memory>

using namespace attnviz;

namespace {

constexpr int kWidth = 1600, kHeight = 1000;
std::unique_ptr<app::AppState> g_state;

// The tiny tokenizer reads each letter as a token: T letters, T tokens.
std::string letters(int tokens) {
    std::string s;
    for (int i = 0; i < tokens; ++i) s += static_cast<char>('a' + (i * 7) % 26);
    return s;
}

platform::ImGuiInstance* g_imgui = nullptr;

void BM_ModelViewRedraw(benchmark::State& state) {
    const auto panelW = static_cast<float>(state.range(0)), panelH = static_cast<float>(state.range(1));
    app::Actions actions;
    app::Drafts drafts;
    app::AppRequests requests;
    gfx::HeatmapRenderer heatmaps;
    gfx::TextureCache textures;
    const app::Fonts fonts{};
    const app::PanelInfo& info = *app::findPanel(app::panel_id::kModel);
    const std::unique_ptr<app::Panel> panel = info.make(info);
    gfx::OffscreenTarget target(kWidth, kHeight);
    const auto frame = [&] {
        ImGuiIO& io = ImGui::GetIO();
        io.DisplaySize = ImVec2(kWidth, kHeight);
        io.DeltaTime = 1.0f / 60.0f;
        ImGui::NewFrame();
        heatmaps.beginFrame();
        app::PanelContext ctx{*g_state, actions, heatmaps, textures, drafts, fonts, requests, 1.0f, ImGuiWindowFlags_NoSavedSettings};
        ImGui::SetNextWindowPos(ImVec2(kWidth - panelW, kHeight - panelH));
        ImGui::SetNextWindowSize(ImVec2(panelW, panelH));
        panel->draw(ctx);
        ImGui::Render();
        target.bind();
        glViewport(0, 0, kWidth, kHeight);
        glClear(GL_COLOR_BUFFER_BIT);
        g_imgui->renderDrawData();
        glFinish();  // the time until the pixels exist
        actions.take();
    };
    frame();  // the atlas is uploaded once, here
    const long long uploads = textures.uploads();
    for (auto _ : state) frame();
    state.counters["uploads"] = static_cast<double>(textures.uploads() - uploads);  // 0: a redraw uploads nothing
    state.counters["vertices"] = ImGui::GetDrawData()->TotalVtxCount;
}
BENCHMARK(BM_ModelViewRedraw)
    ->Args({1260, 420})
    ->Args({kWidth, kHeight})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MeasureProcessCPUTime();

}  // namespace

int main(int argc, char** argv) {
    platform::preferSleepingWorkers(argv);
    try {
        const std::filesystem::path dir = std::filesystem::temp_directory_path() / "attnviz_model_view_bench";
        std::filesystem::create_directories(dir);
        sizedgpt2::writeCheckpoint(dir, {.layers = 12, .heads = 12, .embd = 96, .positions = 256});
        core::Scenario s;
        s.model = dir.string();
        s.sentence = letters(256);
        s.causal = true;
        g_state = std::make_unique<app::AppState>(app::makeState(s));
        app::recompute(*g_state);
        app::summarizeHeads(*g_state);
        std::fprintf(stderr, "model view: %d layers × %d heads, T = %lld\n", g_state->headSummary.layers, g_state->headSummary.heads,
                     static_cast<long long>(g_state->headSummary.queries));
        platform::GlfwLibrary glfw;
        platform::Window window(glfw, {{kWidth, kHeight}, "attnviz_model_view_bench", false, 0});
        platform::ImGuiInstance imgui(window);
        g_imgui = &imgui;
        ImGui::GetIO().Fonts->AddFontDefault();
        imgui.newFrame();  // the font texture
        ImGui::GetIO().DisplaySize = ImVec2(kWidth, kHeight);
        std::fprintf(stderr, "renderer: %s\n", reinterpret_cast<const char*>(glGetString(GL_RENDERER)));
        benchmark::Initialize(&argc, argv);
        benchmark::RunSpecifiedBenchmarks();
        benchmark::Shutdown();
        g_state.reset();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "attnviz_model_view_bench: %s\n", e.what());
        return 1;
    }
    return 0;
}
