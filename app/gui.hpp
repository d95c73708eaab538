// The desktop app's entry point (GLFW window, OpenGL 3.3 core, Dear ImGui; see app/platform/).
#pragma once

#include "app/state/launch.hpp"

namespace attnviz::app {

// Opens the window on the request's scenario; with request.screenshot, renders, saves and exits.
// Exit codes: 0; 1 when no window can be opened; 2 for an error in the request or the screenshot.
int runGui(const GuiRequest& request);

}  // namespace attnviz::app
