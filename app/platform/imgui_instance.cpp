#include "app/platform/imgui_instance.hpp"

#include "app/gfx/gl_objects.hpp"

#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <imgui.h>

namespace attnviz::platform {

ImGuiInstance::ImGuiInstance(Window& window) {
    IMGUI_CHECKVERSION();
    ImGui::CreateContext();
    ImGui::GetIO().IniFilename = nullptr;  // the layout is the app's; the session is saved separately
    ImGui_ImplGlfw_InitForOpenGL(window.handle(), true);
    ImGui_ImplOpenGL3_Init("#version 330 core");
    gfx::setGlReady(true);
}

ImGuiInstance::~ImGuiInstance() {
    gfx::setGlReady(false);
    ImGui_ImplOpenGL3_Shutdown();
    ImGui_ImplGlfw_Shutdown();
    ImGui::DestroyContext();
}

void ImGuiInstance::recreateFontTexture() {
    ImGui_ImplOpenGL3_DestroyFontsTexture();
    ImGui_ImplOpenGL3_CreateFontsTexture();
}

void ImGuiInstance::newFrame() {
    ImGui_ImplOpenGL3_NewFrame();  // uploads the font atlas when it was (re)built
    ImGui_ImplGlfw_NewFrame();
    // The atlas's pixels live on the GPU now: the CPU copy (megabytes) is not needed again
    // until the fonts are rebuilt, which makes new pixels.
    ImFontAtlas* fonts = ImGui::GetIO().Fonts;
    if (fonts->TexPixelsAlpha8 || fonts->TexPixelsRGBA32) fonts->ClearTexData();
}

void ImGuiInstance::renderDrawData() { ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData()); }

}  // namespace attnviz::platform
