// The desktop app's entry point (GLFW window, OpenGL 3.3 core, Dear ImGui).
#pragma once

#include "app/cli.hpp"

namespace attnviz::app {

// Opens the window on the request's scenario; with request.screenshot, renders, saves and exits.
int runGui(const GuiRequest& request);

}  // namespace attnviz::app
