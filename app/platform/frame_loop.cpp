#include "app/platform/frame_loop.hpp"

#include "app/gfx/capture.hpp"
#include "app/render/png.hpp"
#include "app/state/head_summary.hpp"
#include "app/state/launch.hpp"
#include "app/state/shown_map.hpp"
#include "app/state/source.hpp"
#include "app/views/logit_lens.hpp"
#include "core/base/error.hpp"
#include "core/base/files.hpp"

#include <glad/gl.h>
#include <GLFW/glfw3.h>
#include <imgui.h>

#include <algorithm>
#include <deque>
#include <iostream>

namespace attnviz::platform {
namespace {

using app::CaptureRequest;

class FrameLoop {
public:
    FrameLoop(Window& window, ImGuiInstance& imgui, app::App& app, const LoopOptions& options)
        : m_window(window), m_imgui(imgui), m_app(app), m_options(options) {}
    int run();

private:
    void waitForEvents();
    void buildFrame(const CaptureRequest* capture);
    void present();
    int save(const CaptureRequest& capture);  // the exit code
    // A save that failed: `what` as the error line on stderr for a screenshot (exit code 2), else `note` in the window.
    int failed(const std::string& what, const std::string& note);
    bool screenshot() const { return m_options.screenshot.has_value(); }
    // A lab's run or a test of the model's heads, which a screenshot waits for.
    bool runningAtStart() const {
        return app::labsRunning(m_app.state()) || m_app.state().induction->running() || m_app.state().retrieval->running();
    }

    Window& m_window;
    ImGuiInstance& m_imgui;
    app::App& m_app;
    const LoopOptions& m_options;
    std::deque<CaptureRequest> m_captures;  // front: drawn offscreen and saved this frame
    int m_frame = 0;
    double m_firstFrameMs = 0.0;  // from the start of main to the first finished frame
    std::string m_title;          // the window's, as last set: it follows the scenario's name
    int m_eagerFrames = 3;        // frames to draw without waiting (ImGui settles hover and clicks over a few)
};

int FrameLoop::run() {
    if (screenshot() && !m_options.screenshot->capture.panel.empty()) m_app.revealPanel(m_options.screenshot->capture.panel);
    while (!m_window.shouldClose() && !m_app.quitRequested()) {
        waitForEvents();
        // A screenshot of a lab's run or a test of the heads draws nothing until the run ends: a
        // frame drawn in software (a virtual display) would take the cores the run is timed or
        // trained on.
        if (screenshot() && runningAtStart()) continue;
        // A screenshot shows the finished state: every head computed (or the error that stopped it),
        // every view's derived data made, and a lab's run (--train-steps, --measure) or a test
        // (--induction-test, --retrieval-test) at its end.
        if (screenshot() && m_frame >= 3 && m_captures.empty() &&
            ((app::isFresh(m_app.state()) && m_app.viewsSettled()) || m_app.computeFailed()) && !runningAtStart())
            m_captures.push_back(m_options.screenshot->capture);
        const CaptureRequest* capture = m_captures.empty() ? nullptr : &m_captures.front();
        buildFrame(capture);
        if (capture) {
            const int exitCode = save(*capture);
            m_captures.pop_front();
            if (screenshot()) return exitCode;
        } else {
            present();
        }
        if (m_frame == 0) {
            glFinish();
            m_firstFrameMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - m_options.started).count();
        }
        for (CaptureRequest& c : m_app.takeCaptures()) m_captures.push_back(std::move(c));
        if (m_app.takeFullscreenToggle()) m_window.toggleFullscreen();
        if (std::string title = app::windowTitle(m_app.state()); title != m_title) m_window.setTitle(m_title = std::move(title));
        ++m_frame;
    }
    return 0;
}

// Idle, the app sleeps until input arrives (or half a second passes): no busy loop. A wait that
// ends early was input, and the next few frames are drawn without waiting.
void FrameLoop::waitForEvents() {
    const bool labs = app::labsRunning(m_app.state());
    const bool tests = m_app.state().induction->running() || m_app.state().retrieval->running();
    const bool busy = screenshot() || !m_captures.empty() || !app::isFresh(m_app.state()) || !m_app.viewsSettled() || m_eagerFrames > 0 ||
                      m_app.state().generation.left > 0;
    const bool sweeping = (m_app.state().headSweep && m_app.state().headSweep->running()) || app::shownMapRunning(m_app.state()) ||
                          app::lensRunning(m_app.state());
    if (busy && screenshot() && (labs || tests || sweeping)) {
        glfwWaitEventsTimeout(0.05);  // the worker has the cores; the view is drawn at its end
    } else if (sweeping && m_captures.empty()) {
        glfwWaitEventsTimeout(0.1);  // maps made again on a worker: its progress, and the frame it is ready in
    } else if (busy) {
        glfwPollEvents();
        m_eagerFrames = std::max(0, m_eagerFrames - 1);
    } else if (m_app.state().opening->active() || tests || mapsBeingChecked(m_app.state())) {
        glfwWaitEventsTimeout(0.1);  // a model opening or a test of its heads: its progress, and the frame it is ready in
    } else if (labs) {
        // a lab's curve growing as its worker publishes; the cost sweep's points come slowly, and
        // a frame drawn less often disturbs its timing less
        glfwWaitEventsTimeout(m_app.state().labs.jobs->cost.running() ? 0.25 : 1.0 / 30.0);
    } else {
        const auto waitStart = std::chrono::steady_clock::now();
        glfwWaitEventsTimeout(0.5);
        if (std::chrono::steady_clock::now() - waitStart < std::chrono::milliseconds(450)) m_eagerFrames = 3;
    }
}

// From ImGui::NewFrame to ImGui::Render, with the fonts and style for this frame's scale (an
// export's pixel scale while one is drawn).
void FrameLoop::buildFrame(const CaptureRequest* capture) {
    const float pixelScale = capture ? capture->pixelScale : 1.0f;
    const float contentScale = m_window.contentScale();
    if (m_app.prepareFonts(contentScale, pixelScale)) m_imgui.recreateFontTexture();
    m_app.prepareStyle(contentScale);
    m_imgui.newFrame();
    ImGuiIO& io = ImGui::GetIO();
    if (screenshot())
        io.DisplaySize =
            ImVec2(static_cast<float>(m_options.screenshot->size.width), static_cast<float>(m_options.screenshot->size.height));
    if (capture) io.DisplayFramebufferScale = ImVec2(pixelScale, pixelScale);
    ImGui::NewFrame();
    m_app.frame();
    ImGui::Render();
}

void FrameLoop::present() {
    const Size fb = m_window.framebufferSize();
    glViewport(0, 0, fb.width, fb.height);
    const ImVec4 bg = ImGui::GetStyleColorVec4(ImGuiCol_WindowBg);
    glClearColor(bg.x, bg.y, bg.z, 1.0f);
    glClear(GL_COLOR_BUFFER_BIT);
    m_imgui.renderDrawData();
    m_window.swapBuffers();
}

// A screenshot reports on stdout (or its error line on stderr, exit code 2); an export from the
// app is a message in the window.
int FrameLoop::save(const CaptureRequest& capture) {
    try {
        std::optional<gfx::FrameRect> rect;
        if (!capture.panel.empty()) {
            const auto it = m_app.panelRects().find(capture.panel);
            if (it == m_app.panelRects().end())
                throw core::InputError("--panel", "panel '" + capture.panel + "' is not shown in this layout");
            rect = gfx::FrameRect{it->second.min, it->second.max};
        }
        const gfx::Image image =
            gfx::captureFrame(ImGui::GetDrawData(), capture.pixelScale, ImGui::GetStyleColorVec4(ImGuiCol_WindowBg), rect);
        app::writeExport(m_app.state(), capture.path, render::encodeRgbaPng(image.rgba.data(), image.width, image.height));
        if (screenshot())
            std::cout << "attnviz: wrote " << capture.path << " (" << image.width << "x" << image.height << "); first frame "
                      << static_cast<int>(m_firstFrameMs) << " ms after start\n";
        else m_app.notify("Saved " + capture.path);
    } catch (const core::InputError& e) {
        return failed(e.message(), e.message());
    } catch (const std::exception& e) {
        return failed(std::string("screenshot: ") + e.what(), e.what());
    }
    return 0;
}

int FrameLoop::failed(const std::string& what, const std::string& note) {
    if (!screenshot()) {
        m_app.notify(note, true);
        return 0;
    }
    std::cerr << app::errorLine(what) << "\n";
    return 2;
}

}  // namespace

int runFrameLoop(Window& window, ImGuiInstance& imgui, app::App& app, const LoopOptions& options) {
    return FrameLoop(window, imgui, app, options).run();
}

}  // namespace attnviz::platform
