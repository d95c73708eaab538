// Google Benchmark of what a heatmap update costs on the GPU side, in a hidden OpenGL 3.3
// window (needs a display: xvfb-run -a ./build/attnviz_gl_bench):
//   upload + draw of a T x T weight map through the colormap shader (pooled to the screen as the
//   app does, and every cell for comparison), a redraw alone (pan, hover), and the visible-head
//   update after a temperature change or a causal toggle. Times are wall clock; "CPU" is the
//   whole process's CPU time (every thread, the software rasterizer's included).
#include "app/gfx/capture.hpp"
#include "app/gfx/heatmap_renderer.hpp"
#include "app/platform/process.hpp"
#include "core/scenario/model.hpp"

#include <benchmark/benchmark.h>
#include <glad/gl.h>
#include <GLFW/glfw3.h>

#include <cstdio>
#include <memory>
#include <vector>

using namespace attnviz;

namespace {

constexpr int kWidth = 1600, kHeight = 1000;  // the app's default window
constexpr float kSide = 770.0f;               // the heatmap's side in that window, pixels
constexpr float kThumbSide = 80.0f;           // a head's thumbnail in the head grid, pixels
std::unique_ptr<gfx::HeatmapRenderer> g_renderer;
std::unique_ptr<gfx::OffscreenTarget> g_target;

void drawHeatmap(const gfx::HeatmapTexture& tex) {
    g_target->bind();
    g_renderer->drawNow(tex, ImVec2(330, 60), ImVec2(330 + kSide, 60 + kSide), ImVec2(kWidth, kHeight));
    glFinish();  // the time until the pixels exist
}

core::Mat randomWeights(int T) {
    core::Mat w = core::Mat::Random(T, T).cwiseAbs();
    for (int i = 0; i < T; ++i) w.row(i) /= w.row(i).sum();
    return w;
}

// What the app uploads for a T x T map drawn kSide pixels wide: at most a texel per pixel.
int appFactor(int T) { return gfx::poolFactor(kSide / static_cast<float>(T)); }

// A heatmap update as the app makes it: texels (pooled to the screen), upload, draw.
void BM_UploadAndDraw(benchmark::State& state) {
    const int T = static_cast<int>(state.range(0));
    const int factor = state.range(1) ? appFactor(T) : 1;
    const core::Mat w = randomWeights(T);
    const core::Settings settings;
    gfx::HeatmapTexture tex;
    tex.upload(gfx::texelsOf(w, settings, factor), {});
    for (auto _ : state) {
        tex.upload(gfx::texelsOf(w, settings, factor), {});
        drawHeatmap(tex);
    }
    state.counters["texels"] = static_cast<double>(tex.rows()) * tex.cols();
}
// Second argument 1: pooled to the screen (the app); 0: every cell uploaded (for comparison).
BENCHMARK(BM_UploadAndDraw)
    ->Args({512, 1})
    ->Args({1024, 1})
    ->Args({2048, 1})
    ->Args({2048, 0})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MeasureProcessCPUTime();

// Panning and hovering: the texture stays, only the quad is drawn again.
void BM_RedrawOnly(benchmark::State& state) {
    const int T = static_cast<int>(state.range(0));
    gfx::HeatmapTexture tex;
    tex.upload(gfx::texelsOf(randomWeights(T), core::Settings{}, appFactor(T)), {});
    for (auto _ : state) drawHeatmap(tex);
}
BENCHMARK(BM_RedrawOnly)->Arg(2048)->Unit(benchmark::kMillisecond)->UseRealTime()->MeasureProcessCPUTime();

// A temperature change (second argument 0) or a causal toggle (1) at T = 2048, h = 8, as the app
// handles it: the visible head's softmax (its row maxima kept with the scores) with its texels
// pooled in the same pass, their upload, and the head's thumbnail in the head grid pooled from
// those texels; the other heads follow in later frames. With the third argument 1 the heatmap is
// drawn too.
void BM_VisibleHeadUpdate(benchmark::State& state) {
    const int T = static_cast<int>(state.range(0));
    const bool toggleCausal = state.range(1) != 0, draw = state.range(2) != 0;
    core::Scenario s;
    s.sentence = "the cat sat on the mat";
    s.length = T;
    s.dModel = 512;
    s.heads = 8;
    const core::Model model = core::buildModel(s);
    core::Settings settings;
    core::Forward forward = core::runForward(model, settings);
    const int factor = appFactor(T);
    const int thumbFactor = gfx::poolFactor(kThumbSide / static_cast<float>(T));
    std::vector<float> texels;
    gfx::HeatmapTexture tex, thumb;
    float tau = 1.0f;
    for (auto _ : state) {
        if (toggleCausal) settings.causal = !settings.causal;
        else settings.temperature = tau = tau > 1.5f ? 0.5f : tau * 1.1f;
        core::weighHead(model, settings, forward.heads[0], factor, texels);
        const gfx::TexelsView pooled = gfx::pooledView(texels, T, T, factor);
        tex.upload(pooled, {});
        thumb.upload(gfx::repooled(pooled, T, T, factor, (thumbFactor + factor - 1) / factor), {});
        if (draw) drawHeatmap(tex);
        else glFinish();  // the uploads have landed
    }
}
BENCHMARK(BM_VisibleHeadUpdate)
    ->Args({2048, 0, 0})
    ->Args({2048, 1, 0})
    ->Args({2048, 0, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MeasureProcessCPUTime();

}  // namespace

int main(int argc, char** argv) {
    platform::preferSleepingWorkers(argv);  // as the app does
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
