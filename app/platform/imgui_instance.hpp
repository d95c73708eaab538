// Dear ImGui for the life of the object: its context, bound to the window through the GLFW and
// OpenGL3 backends, with gfx's GL objects allowed (gfx::glReady) until the destructor.
// Anything that owns GL objects (the App's textures) must be destroyed first: declare it after.
#pragma once

#include "app/platform/window.hpp"

namespace attnviz::platform {

class ImGuiInstance {
public:
    explicit ImGuiInstance(Window& window);
    ~ImGuiInstance();
    ImGuiInstance(const ImGuiInstance&) = delete;
    ImGuiInstance& operator=(const ImGuiInstance&) = delete;

    // The font atlas was rebuilt: its GPU texture is made again at the next newFrame().
    void recreateFontTexture();
    // The backends' part of a frame (window size, input, the font upload), before ImGui::NewFrame().
    void newFrame();
    // Draws ImGui's finished frame (after ImGui::Render()) into the bound framebuffer.
    void renderDrawData();
};

}  // namespace attnviz::platform
