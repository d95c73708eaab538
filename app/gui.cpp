// runGui: the platform's owners in the order they depend on each other (GLFW, window, ImGui, the
// app), so that each is destroyed before what it needs and an early return cleans up by itself.
#include "app/gui.hpp"

#include "app/app.hpp"
#include "app/platform/frame_loop.hpp"
#include "app/platform/glfw_library.hpp"
#include "app/platform/imgui_instance.hpp"
#include "app/platform/window.hpp"
#include "app/state/actions.hpp"
#include "app/state/session.hpp"
#include "app/views/view_table.hpp"
#include "app/widgets/text.hpp"
#include "core/base/error.hpp"
#include "core/base/format.hpp"

#include <algorithm>
#include <iostream>
#include <optional>

namespace attnviz::app {
namespace {

constexpr const char* kNoDisplayHint =
    "use --export / --export-npy / --export-csv to compute without a window, or run the app under a virtual display: "
    "xvfb-run -a attnviz … --screenshot OUT.png";

// What the window opens on: the state, a note for the app to show ("" for none), the window size.
struct Opening {
    AppState state;
    std::string notice;
    platform::Size size{1600, 1000};
};

// The saved view always, the saved scenario unless the command line named one, with the request's
// flags on top; a file that cannot be used is kept aside and named in a note (see restoreSession).
// An error in the request is printed and gives nullopt.
std::optional<Opening> opening(const GuiRequest& request, const platform::GlfwLibrary& glfw, const std::string& sessionFile) {
    const RestoredSession restored = request.fresh || !request.screenshot.empty() ? RestoredSession{} : restoreSession(sessionFile);
    if (!restored.notice.empty()) std::cerr << "attnviz: note: " << restored.notice << "\n";
    Opening o;
    if (restored.session) {
        // a saved size larger than this monitor (another monitor's, or a broken file's) would
        // cost its framebuffer's memory for nothing
        o.size = glfw.fitToMonitor({restored.session->windowWidth, restored.session->windowHeight});
    }
    if (request.width > 0) o.size = {request.width, request.height};
    const auto note = [&] {
        if (!o.notice.empty() && o.notice != restored.notice) std::cerr << "attnviz: note: " << o.notice << "\n";
    };
    try {
        o.state = launchState(request, restored, sessionFile, o.notice);
    } catch (const core::InputError& e) {
        note();  // the saved session set aside, say, before the request failed
        std::cerr << errorLine(e.message()) << "\n";
        return std::nullopt;
    }
    note();
    return o;
}

// --panel names a panel the app has (whether this layout shows it is known only after a frame),
// asked before a model or a file is opened.
bool knowsPanel(const std::string& panel) {
    if (findView(panel)) return true;  // the panels are the view table's rows
    std::vector<std::string> ids;
    for (const ViewInfo& view : viewTable()) ids.emplace_back(view.id);
    std::cerr << errorLine("--panel: unknown panel '" + panel + "' (known: " + core::joinStrings(ids, ", ") + ")") << "\n";
    return false;
}

// Closing never aborts on the session: a save that fails is one line, and the file saved before stays.
void saveSessionOf(const AppState& state, platform::Size windowed, const std::string& sessionFile) {
    if (sessionFile.empty()) return;
    std::string why;
    try {
        why = trySaveSession(sessionFile, {state.scenario, state.presetId, state.view, windowed.width, windowed.height});
    } catch (const std::exception& e) {  // copying the state for the file (out of memory)
        why = e.what();
    }
    if (!why.empty()) std::cerr << "attnviz: note: the session was not saved: " << why << "\n";
}

}  // namespace

int runGui(const GuiRequest& request) {
    const bool screenshot = !request.screenshot.empty();
    try {
        const platform::GlfwLibrary glfw;  // checks for a display first
        if (screenshot && !request.panel.empty() && !knowsPanel(request.panel)) return 2;
        const std::string sessionFile = sessionPath();
        std::optional<Opening> start = opening(request, glfw, sessionFile);
        if (!start) return 2;
        platform::Window window(glfw, {start->size, windowTitle(start->state), !screenshot, screenshot ? 0 : 1});
        platform::ImGuiInstance imgui(window);
        App app(std::move(start->state));  // after imgui: its GL textures go while GL is still there
        if (!start->notice.empty()) app.notify(start->notice, true);

        platform::LoopOptions loop{request.started, std::nullopt};
        if (screenshot) loop.screenshot = platform::Screenshot{{request.screenshot, request.panel, request.scale}, start->size};
        const int exitCode = platform::runFrameLoop(window, imgui, app, loop);
        if (!screenshot) saveSessionOf(app.state(), window.windowedSize(), sessionFile);
        return exitCode;
    } catch (const platform::NoWindow& e) {
        std::cerr << "attnviz: " << e.what() << ": " << kNoDisplayHint << "\n";
        return 1;
    }
}

}  // namespace attnviz::app
