// Google Benchmark of what a heatmap update costs on the GPU side, in a hidden OpenGL 3.3
// window (needs a display: xvfb-run -a ./build/attnviz_gl_bench):
//   upload + draw of a T x T weight texture through the colormap shader, a redraw alone (pan,
//   hover), and the whole visible-head update after a temperature change.
#include "app/gfx/capture.hpp"
#include "app/gfx/heatmap_renderer.hpp"
#include "core/model.hpp"

#include <glad/gl.h>
#include <GLFW/glfw3.h>
#include <benchmark/benchmark.h>

#include <cstdio>
#include <memory>

using namespace attnviz;

namespace {

constexpr int kWidth = 1600, kHeight = 1000;  // the app's default window
std::unique_ptr<gfx::HeatmapRenderer> g_renderer;
std::unique_ptr<gfx::OffscreenTarget> g_target;

void drawHeatmap(const gfx::HeatmapTexture& tex, bool causal) {
    g_target->bind();
    g_renderer->drawNow(tex, ImVec2(330, 60), ImVec2(1100, 830), ImVec2(kWidth, kHeight), core::ColormapKind::Viridis, causal);
    glFinish();  // the time until the pixels exist
}

core::Mat randomWeights(int T) {
    core::Mat w = core::Mat::Random(T, T).cwiseAbs();
    for (int i = 0; i < T; ++i) w.row(i) /= w.row(i).sum();
    return w;
}

void BM_UploadAndDraw(benchmark::State& state) {
    const int T = static_cast<int>(state.range(0));
    const core::Mat w = randomWeights(T);
    gfx::HeatmapTexture tex;
    tex.upload(w);
    for (auto _ : state) {
        tex.upload(w);
        drawHeatmap(tex, false);
    }
}
BENCHMARK(BM_UploadAndDraw)->Arg(512)->Arg(1024)->Arg(2048)->Unit(benchmark::kMillisecond)->UseRealTime();

// Panning and hovering: the texture stays, only the quad is drawn again.
void BM_RedrawOnly(benchmark::State& state) {
    const int T = static_cast<int>(state.range(0));
    const core::Mat w = randomWeights(T);
    gfx::HeatmapTexture tex;
    tex.upload(w);
    for (auto _ : state) drawHeatmap(tex, false);
}
BENCHMARK(BM_RedrawOnly)->Arg(2048)->Unit(benchmark::kMillisecond)->UseRealTime();

// A temperature change (or causal toggle) at T = 2048, h = 8, as the app handles it: the
// visible head's softmax, its upload and the draw; the other heads follow in later frames.
void BM_VisibleHeadUpdate(benchmark::State& state) {
    const int T = static_cast<int>(state.range(0));
    const bool causal = state.range(1) != 0;
    core::Scenario s;
    s.sentence = "the cat sat on the mat";
    s.length = T;
    s.dModel = 512;
    s.heads = 8;
    const core::Model model = core::buildModel(s);
    core::Settings settings;
    core::Forward forward = core::runForward(model, settings);
    gfx::HeatmapTexture tex;
    tex.upload(forward.heads[0].weights);
    settings.causal = causal;
    float tau = 1.0f;
    for (auto _ : state) {
        settings.temperature = tau = tau > 1.5f ? 0.5f : tau * 1.1f;
        core::weighHead(model, settings, forward.heads[0]);
        tex.upload(forward.heads[0].weights);
        drawHeatmap(tex, causal);
    }
}
BENCHMARK(BM_VisibleHeadUpdate)->Args({2048, 0})->Args({2048, 1})->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
    if (!glfwInit()) {
        std::fprintf(stderr, "attnviz_gl_bench: no display; run it under xvfb-run -a\n");
        return 1;
    }
    glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
    glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
    glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
    glfwWindowHint(GLFW_VISIBLE, GLFW_FALSE);
    GLFWwindow* window = glfwCreateWindow(kWidth, kHeight, "attnviz_gl_bench", nullptr, nullptr);
    if (!window) {
        std::fprintf(stderr, "attnviz_gl_bench: cannot create an OpenGL 3.3 context\n");
        return 1;
    }
    glfwMakeContextCurrent(window);
    gladLoadGL(glfwGetProcAddress);
    gfx::setGlReady(true);
    std::fprintf(stderr, "renderer: %s\n", reinterpret_cast<const char*>(glGetString(GL_RENDERER)));
    g_renderer = std::make_unique<gfx::HeatmapRenderer>();
    g_target = std::make_unique<gfx::OffscreenTarget>(kWidth, kHeight);
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    g_target.reset();
    g_renderer.reset();
    glfwDestroyWindow(window);
    glfwTerminate();
    return 0;
}
