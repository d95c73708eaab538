#include "app/gui.hpp"

#include "app/app.hpp"
#include "app/gfx/capture.hpp"
#include "app/render/png.hpp"
#include "app/state/session.hpp"
#include "app/widgets/text.hpp"
#include "core/base/error.hpp"
#include "core/base/files.hpp"
#include "core/base/format.hpp"

#include <glad/gl.h>
#include <GLFW/glfw3.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <imgui.h>

#include <chrono>
#include <algorithm>
#include <cstdlib>
#include <deque>
#include <iostream>

#include <unistd.h>

namespace attnviz::app {
namespace {

std::string g_glfwError;

void onGlfwError(int, const char* description) { g_glfwError = description ? description : "unknown error"; }

constexpr const char* kNoDisplayHint =
    "use --export / --export-npy / --export-csv to compute without a window, or run the app under a virtual display: "
    "xvfb-run -a attnviz … --screenshot OUT.png";

}  // namespace

int runGui(const GuiRequest& request) {
    const char* display = std::getenv("DISPLAY");
    const char* wayland = std::getenv("WAYLAND_DISPLAY");
    if ((!display || !*display) && (!wayland || !*wayland)) {
        std::cerr << "attnviz: no display (DISPLAY and WAYLAND_DISPLAY are unset): " << kNoDisplayHint << "\n";
        return 1;
    }
    glfwSetErrorCallback(onGlfwError);
    if (!glfwInit()) {
        std::cerr << "attnviz: cannot open a window (" << g_glfwError << "): " << kNoDisplayHint << "\n";
        return 1;
    }

    // The saved view always, the saved scenario unless the command line named one; a file that
    // cannot be used is kept aside and named in a note (see restoreSession).
    const std::string sessionFile = sessionPath();
    const RestoredSession restored =
        request.fresh || !request.screenshot.empty() ? RestoredSession{} : restoreSession(sessionFile);
    if (!restored.notice.empty()) std::cerr << "attnviz: note: " << restored.notice << "\n";
    ViewState view;
    int width = 1600, height = 1000;
    if (restored.session) {
        view = restored.session->view;
        // a saved size larger than this monitor (another monitor's, or a broken file's) would
        // cost its framebuffer's memory for nothing
        width = restored.session->windowWidth, height = restored.session->windowHeight;
        GLFWmonitor* monitor = glfwGetPrimaryMonitor();
        if (const GLFWvidmode* mode = monitor ? glfwGetVideoMode(monitor) : nullptr) {
            width = std::min(width, mode->width);
            height = std::min(height, mode->height);
        }
    }
    if (request.width > 0) width = request.width, height = request.height;
    view = requestedView(request, view);

    AppState state;
    std::string notice;
    try {
        state = startingState(request.scenario, request.presetId, restored, request.explicitScenario, request.limits, sessionFile, notice);
    } catch (const core::InputError& e) {
        std::cerr << errorLine(e.message()) << "\n";
        glfwTerminate();
        return 2;
    }
    if (notice != restored.notice) std::cerr << "attnviz: note: " << notice << "\n";
    state.sourcePath = request.scenarioPath;
    state.view = view;
    apply(state, action::SelectHead{view.selectedHead});  // clamps the restored selection
    if (request.lesson && !apply(state, action::OpenLesson{*request.lesson})) {
        std::cerr << errorLine(state.error) << "\n";
        glfwTerminate();
        return 2;
    }
    apply(state, action::SelectQuery{view.selectedQuery});

    const bool screenshot = !request.screenshot.empty();
    glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
    glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
    glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
    glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
    if (screenshot) glfwWindowHint(GLFW_VISIBLE, GLFW_FALSE);
    const std::string title = "attnviz — " + (state.scenario.name.empty() ? std::string("self-attention") : widgets::clipLabel(state.scenario.name, widgets::kTitleGlyphs));
    GLFWwindow* window = glfwCreateWindow(width, height, title.c_str(), nullptr, nullptr);
    if (!window) {
        std::cerr << "attnviz: cannot open an OpenGL 3.3 window (" << g_glfwError << "): " << kNoDisplayHint << "\n";
        glfwTerminate();
        return 1;
    }
    glfwMakeContextCurrent(window);
    if (!gladLoadGL(glfwGetProcAddress)) {
        std::cerr << "attnviz: OpenGL 3.3 is not available: " << kNoDisplayHint << "\n";
        glfwDestroyWindow(window);
        glfwTerminate();
        return 1;
    }
    glfwSwapInterval(screenshot ? 0 : 1);

    IMGUI_CHECKVERSION();
    ImGui::CreateContext();
    ImGui::GetIO().IniFilename = nullptr;  // the layout is the app's; the session is saved separately
    ImGui_ImplGlfw_InitForOpenGL(window, true);
    ImGui_ImplOpenGL3_Init("#version 330 core");
    gfx::setGlReady(true);

    int exitCode = 0;
    {
        App app(std::move(state));
        if (!notice.empty()) app.notify(notice, true);
        if (screenshot && !request.panel.empty()) {
            const auto ids = app.panelIds();
            if (std::find(ids.begin(), ids.end(), request.panel) == ids.end()) {
                std::cerr << errorLine("--panel: unknown panel '" + request.panel + "' (known: " + core::joinStrings(ids, ", ") + ")") << "\n";
                exitCode = 2;
            }
        }
        std::deque<CaptureRequest> captures;
        int frame = 0;
        double firstFrameMs = 0.0;  // from the start of main to the first finished frame
        bool fullscreen = false;
        int savedX = 0, savedY = 0, savedW = width, savedH = height;
        int eagerFrames = 3;  // frames to draw without waiting (ImGui settles hover and clicks over a few)
        while (exitCode == 0 && !glfwWindowShouldClose(window) && !app.quitRequested()) {
            // Idle, the app sleeps until input arrives (or half a second passes): no busy loop.
            const bool busy = screenshot || !captures.empty() || !isFresh(app.state()) || eagerFrames > 0;
            if (busy) {
                glfwPollEvents();
                eagerFrames = std::max(0, eagerFrames - 1);
            } else {
                const auto waitStart = std::chrono::steady_clock::now();
                glfwWaitEventsTimeout(0.5);
                if (std::chrono::steady_clock::now() - waitStart < std::chrono::milliseconds(450)) eagerFrames = 3;
            }
            // A screenshot shows the finished state: every head computed (or the error that stopped it).
            if (screenshot && frame >= 3 && captures.empty() && (isFresh(app.state()) || app.computeFailed()))
                captures.push_back({request.screenshot, request.panel, request.scale});
            const CaptureRequest* capture = captures.empty() ? nullptr : &captures.front();
            const float pixelScale = capture ? capture->pixelScale : 1.0f;
            float contentScale = 1.0f, unused = 1.0f;
            glfwGetWindowContentScale(window, &contentScale, &unused);
            if (app.prepareFonts(contentScale, pixelScale)) {
                ImGui_ImplOpenGL3_DestroyFontsTexture();
                ImGui_ImplOpenGL3_CreateFontsTexture();
            }
            app.prepareStyle(contentScale);
            ImGui_ImplOpenGL3_NewFrame();  // uploads the font atlas when it was (re)built
            ImGui_ImplGlfw_NewFrame();
            ImGuiIO& io = ImGui::GetIO();
            // The atlas's pixels live on the GPU now: the CPU copy (megabytes) is not needed again
            // until the fonts are rebuilt, which makes new pixels.
            if (io.Fonts->TexPixelsAlpha8 || io.Fonts->TexPixelsRGBA32) io.Fonts->ClearTexData();
            if (screenshot) io.DisplaySize = ImVec2(static_cast<float>(width), static_cast<float>(height));
            if (capture) io.DisplayFramebufferScale = ImVec2(pixelScale, pixelScale);
            ImGui::NewFrame();
            app.frame();
            ImGui::Render();
            if (capture) {
                try {
                    const int fw = static_cast<int>(io.DisplaySize.x * pixelScale), fh = static_cast<int>(io.DisplaySize.y * pixelScale);
                    gfx::OffscreenTarget target(fw, fh);
                    target.bind();
                    const ImVec4 bg = ImGui::GetStyleColorVec4(ImGuiCol_WindowBg);
                    glClearColor(bg.x, bg.y, bg.z, 1.0f);
                    glClear(GL_COLOR_BUFFER_BIT);
                    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
                    int x = 0, y = 0, w = fw, h = fh;
                    if (!capture->panel.empty()) {
                        const auto it = app.panelRects().find(capture->panel);
                        if (it == app.panelRects().end()) throw core::InputError("--panel", "panel '" + capture->panel + "' is not shown in this layout");
                        x = static_cast<int>(it->second.min.x * pixelScale), y = static_cast<int>(it->second.min.y * pixelScale);
                        w = static_cast<int>((it->second.max.x - it->second.min.x) * pixelScale);
                        h = static_cast<int>((it->second.max.y - it->second.min.y) * pixelScale);
                    }
                    const std::vector<unsigned char> pixels = target.read(x, y, w, h);
                    gfx::OffscreenTarget::unbind();
                    core::writeFileAtomic(capture->path, render::encodeRgbaPng(pixels.data(), w, h));
                    if (screenshot)
                        std::cout << "attnviz: wrote " << capture->path << " (" << w << "x" << h << "); first frame "
                                  << static_cast<int>(firstFrameMs) << " ms after start\n";
                    else app.notify("Saved " + capture->path);
                } catch (const core::InputError& e) {
                    if (screenshot) std::cerr << errorLine(e.message()) << "\n", exitCode = 2;
                    else app.notify(e.message(), true);
                } catch (const std::exception& e) {
                    if (screenshot) std::cerr << errorLine(std::string("screenshot: ") + e.what()) << "\n", exitCode = 2;
                    else app.notify(e.what(), true);
                }
                gfx::OffscreenTarget::unbind();
                captures.pop_front();
                if (screenshot) break;
            } else {
                int fbw = 0, fbh = 0;
                glfwGetFramebufferSize(window, &fbw, &fbh);
                glViewport(0, 0, fbw, fbh);
                const ImVec4 bg = ImGui::GetStyleColorVec4(ImGuiCol_WindowBg);
                glClearColor(bg.x, bg.y, bg.z, 1.0f);
                glClear(GL_COLOR_BUFFER_BIT);
                ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
                glfwSwapBuffers(window);
            }
            if (frame == 0) {
                glFinish();
                firstFrameMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - request.started).count();
            }
            for (CaptureRequest& c : app.takeCaptures()) captures.push_back(std::move(c));
            if (app.takeFullscreenToggle()) {
                if (!fullscreen) {
                    glfwGetWindowPos(window, &savedX, &savedY);
                    glfwGetWindowSize(window, &savedW, &savedH);
                    GLFWmonitor* monitor = glfwGetPrimaryMonitor();
                    const GLFWvidmode* mode = monitor ? glfwGetVideoMode(monitor) : nullptr;
                    if (mode) glfwSetWindowMonitor(window, monitor, 0, 0, mode->width, mode->height, mode->refreshRate);
                    fullscreen = mode != nullptr;
                } else {
                    glfwSetWindowMonitor(window, nullptr, savedX, savedY, savedW, savedH, 0);
                    fullscreen = false;
                }
            }
            ++frame;
        }
        if (!screenshot) {
            Session session{app.state().scenario, app.state().presetId, app.state().view, savedW, savedH};
            if (!fullscreen) glfwGetWindowSize(window, &session.windowWidth, &session.windowHeight);
            try {
                if (const std::string path = sessionPath(); !path.empty()) saveSession(path, session);
            } catch (const core::InputError& e) {
                std::cerr << "attnviz: note: the session was not saved: " << e.message() << "\n";
            }
        }
    }
    gfx::setGlReady(false);
    ImGui_ImplOpenGL3_Shutdown();
    ImGui_ImplGlfw_Shutdown();
    ImGui::DestroyContext();
    glfwDestroyWindow(window);
    glfwTerminate();
    return exitCode;
}

void preferSleepingWorkers(char** argv) {
#if defined(_OPENMP) && defined(__linux__)
    if (std::getenv("OMP_WAIT_POLICY") != nullptr) return;
    char self[4096];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0 || setenv("OMP_WAIT_POLICY", "passive", 1) != 0) return;
    self[n] = '\0';
    execv(self, argv);  // by its own path, so that the process keeps its name
#else
    (void)argv;
#endif
}

}  // namespace attnviz::app
