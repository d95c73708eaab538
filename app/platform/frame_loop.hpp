// The window's frames: wait for input (or draw eagerly while something changes), build ImGui's
// frame from the app, then show it, or draw it offscreen and save it as a PNG (an export, or
// --screenshot). Runs until the window closes, the app quits, or the screenshot is saved.
#pragma once

#include "app/app.hpp"
#include "app/platform/imgui_instance.hpp"
#include "app/platform/window.hpp"

#include <chrono>
#include <optional>

namespace attnviz::platform {

// --screenshot: ImGui is laid out at `size` (whatever size the hidden window got), `capture` is
// saved once every head is computed (or the computation failed), and the loop ends.
struct Screenshot {
    app::CaptureRequest capture;
    Size size;
};

struct LoopOptions {
    std::chrono::steady_clock::time_point started;  // the start of main: the first frame's time is from it
    std::optional<Screenshot> screenshot;
};

// Returns the exit code: 0, or 2 when the screenshot could not be saved (its error line printed).
int runFrameLoop(Window& window, ImGuiInstance& imgui, app::App& app, const LoopOptions& options);

}  // namespace attnviz::platform
