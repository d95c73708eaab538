#include "app/panels/panel.hpp"

namespace attnviz::app {

void helpMarker(const char* text) {
    ImGui::SameLine();
    ImGui::TextDisabled("(?)");
    tooltip(text);
}

void tooltip(const char* text) {
    if (!ImGui::IsItemHovered()) return;
    ImGui::BeginTooltip();
    ImGui::PushTextWrapPos(ImGui::GetFontSize() * 28.0f);
    ImGui::TextUnformatted(text);
    ImGui::PopTextWrapPos();
    ImGui::EndTooltip();
}

bool beginPanel(PanelContext& ctx, const char* title) {
    if (ImGui::Begin(title, nullptr, ctx.windowFlags)) return true;
    ImGui::End();
    return false;
}

bool beginPanelFor(PanelContext& ctx, const char* title, int head) {
    if (!beginPanel(ctx, title)) return false;
    if (headFresh(ctx.state, head)) return true;
    ImGui::TextDisabled("computing…");  // a frame or two after a change, for heads not on screen
    ImGui::End();
    return false;
}

}  // namespace attnviz::app
