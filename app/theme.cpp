#include "app/theme.hpp"

#include <imgui.h>

namespace attnviz::app {

void applyTheme(Theme theme, float scale) {
    ImGuiStyle style;
    switch (theme) {
        case Theme::Dark: ImGui::StyleColorsDark(&style); break;
        case Theme::Light: ImGui::StyleColorsLight(&style); break;
        case Theme::HighContrast: {
            ImGui::StyleColorsDark(&style);
            ImVec4* c = style.Colors;
            c[ImGuiCol_WindowBg] = c[ImGuiCol_ChildBg] = c[ImGuiCol_PopupBg] = ImVec4(0, 0, 0, 1);
            c[ImGuiCol_Text] = ImVec4(1, 1, 1, 1);
            c[ImGuiCol_TextDisabled] = ImVec4(0.85f, 0.85f, 0.85f, 1);
            c[ImGuiCol_Border] = ImVec4(1, 1, 1, 1);
            c[ImGuiCol_FrameBg] = ImVec4(0.12f, 0.12f, 0.12f, 1);
            c[ImGuiCol_Button] = ImVec4(0.10f, 0.10f, 0.55f, 1);
            c[ImGuiCol_ButtonHovered] = ImVec4(0.20f, 0.20f, 0.80f, 1);
            c[ImGuiCol_ButtonActive] = ImVec4(1.0f, 0.85f, 0.0f, 1);
            c[ImGuiCol_CheckMark] = c[ImGuiCol_SliderGrab] = ImVec4(1.0f, 0.85f, 0.0f, 1);
            c[ImGuiCol_TitleBg] = c[ImGuiCol_TitleBgActive] = ImVec4(0.0f, 0.0f, 0.35f, 1);
            c[ImGuiCol_MenuBarBg] = ImVec4(0.0f, 0.0f, 0.25f, 1);
            c[ImGuiCol_Header] = ImVec4(0.10f, 0.10f, 0.55f, 1);
            style.WindowBorderSize = style.FrameBorderSize = 1.0f;
            break;
        }
    }
    style.WindowRounding = 4.0f;
    style.FrameRounding = 3.0f;
    style.GrabRounding = 3.0f;
    style.WindowPadding = ImVec2(10, 8);
    style.ItemSpacing = ImVec2(8, 6);
    style.ScaleAllSizes(scale);
    ImGui::GetStyle() = style;
}

}  // namespace attnviz::app
