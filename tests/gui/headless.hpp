// The app without a window, as the GUI tests draw it: ImGui needs only a display size and a
// built font atlas, and a frame is what the window loop does.
#pragma once

#include "app/app.hpp"

#include <imgui.h>

namespace attnviz::app::headless {

// A new ImGui context of `display` pixels, no ini file, 60 frames a second.
inline void createContext(ImVec2 display) {
    ImGui::CreateContext();
    ImGuiIO& io = ImGui::GetIO();
    io.IniFilename = nullptr;
    io.DisplaySize = display;
    io.DeltaTime = 1.0f / 60.0f;
}

// One frame of the whole app at content and pixel scale 1: fonts, style, draw, render.
inline void drawFrame(App& app) {
    app.prepareFonts(1.0f, 1.0f);
    app.prepareStyle(1.0f);
    ImGui::NewFrame();
    app.frame();
    ImGui::Render();
}

}  // namespace attnviz::app::headless
