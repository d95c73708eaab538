// The app: owns the state and the panels, decides the layout, maps keys to actions, applies the
// actions after every frame and recomputes lazily. No window or GL code here (see gui.cpp).
#pragma once

#include "app/fonts/font_atlas.hpp"
#include "app/gfx/heatmap_renderer.hpp"
#include "app/gfx/texture_cache.hpp"
#include "app/panels/panel.hpp"

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace attnviz::app {

struct PanelRect {
    ImVec2 min, max;
};

// A pending image export the platform layer carries out after rendering the next frame.
struct CaptureRequest {
    std::string path;
    std::string panel;  // "" = whole window
    float pixelScale = 1.0f;
};

// The window's title: "attnviz — " and the scenario's name (clipped), whatever opened it (the
// command line, a preset from the menu, a file, a model); the frame loop keeps the window's in step.
std::string windowTitle(const AppState& state);

class App {
public:
    explicit App(AppState state);

    // Between ImGui::NewFrame() and ImGui::Render(): menus, panels, dialogs, keys; then the
    // frame's actions are applied and what they invalidated is recomputed.
    void frame();

    // Call before ImGui::NewFrame(): rebuilds the font atlas when the scale or the tokens need
    // it; returns true when the GPU font texture must be re-created.
    bool prepareFonts(float contentScale, float pixelScale);
    // The atlas: what it holds (tests).
    const FontSet& fontSet() const { return m_fontSet; }
    // Applies theme and UI scale to ImGui's style when they changed.
    void prepareStyle(float contentScale);

    AppState& state() { return m_state; }
    const AppState& state() const { return m_state; }
    const std::map<std::string, PanelRect>& panelRects() const { return m_rects; }
    // Whether this frame's layout offers the panel: drawn, or on a tab strip.
    bool offers(std::string_view id) const;
    std::vector<std::string> panelIds() const;
    // Brings a panel on a tab to the front in the next frame (an export of that panel).
    void revealPanel(std::string_view id);
    // The room, in ems, the full layout needs; a smaller window shows the panels as tabs.
    static constexpr float kRoomyWidthEms = 78.0f, kRoomyHeightEms = 42.0f;

    // Exports the app asked for this frame (Ctrl+S, the Export dialog).
    std::vector<CaptureRequest> takeCaptures() { return std::exchange(m_captures, {}); }
    bool takeFullscreenToggle() { return std::exchange(m_requests.toggleFullscreen, false); }
    bool quitRequested() const { return m_quit; }
    // No view drew its derived data out of date in the last frame: what is on screen is what the
    // state holds (a screenshot waits for it, and the loop draws again without waiting until it is).
    bool viewsSettled() const { return m_viewsSettled; }
    // The last recompute threw (its message is shown); nothing more is computed until a change.
    bool computeFailed() const { return m_computeFailed; }
    // A message shown for a few seconds ("Saved … ", or why a save failed).
    void notify(std::string message, bool error = false);
    // The figure of view `id` as the window shows it, written to `path` (its type by the extension):
    // the same file as the view's --export-… flag writes from the same state. The Export dialog's
    // "Save figure". Throws core::InputError (a view with no figure, one still being computed).
    void saveFigure(std::string_view id, const std::string& path);
    // Textures uploaded so far (tests count what a frame re-made).
    long long textureUploads() const { return m_textures.uploads(); }

private:
    void layout();
    static int tabRows(const std::vector<std::string_view>& panels, float width);
    float tabGroup(const std::vector<std::string_view>& panels, PanelRect rect, bool stripOnly);
    void menuBar();
    void dialogs();
    // The model being opened in the background, its progress and a Cancel button.
    void openingStatus();
    // A modal asking for a path; `accept` runs on the button or Enter and may throw InputError.
    // A modal dialog kept inside the window whatever its size (centred every frame, no larger than
    // the window), closed by Escape as by Cancel. When true, the caller draws it and calls EndPopup.
    bool beginDialog(const char* title);
    void pathDialog(const char* title, const char* prompt, const char* button, std::string& path, const std::function<void()>& accept);
    void keys();
    void applyActions();
    void syncDrafts();
    // The user's text the atlas bakes characters for: labels (clipped as a tooltip clips them) and
    // the lesson's lines (drawn whole).
    struct FontTexts {
        std::vector<std::string_view> labels, lines;
    };
    FontTexts fontTexts() const;
    std::string defaultExportPath(const char* extension) const;

    AppState m_state;
    Actions m_actions;
    Drafts m_drafts;
    AppRequests m_requests;
    FontSet m_fontSet;
    std::vector<std::string> m_fontLabels, m_fontLines;  // the text the atlas's characters were last found in
    std::set<ImWchar> m_fontNeeds;
    std::string m_lessonShown;  // the lesson step last laid out beside its tabs ("id#step")
    gfx::HeatmapRenderer m_heatmaps;
    gfx::TextureCache m_textures;
    std::vector<std::unique_ptr<Panel>> m_panels;
    std::map<std::string, PanelRect> m_rects;
    std::map<std::string, std::string> m_tabs;  // each group of tabs (named by its first panel): the panel chosen in it
    std::vector<std::string> m_tabbed;          // this frame's panels shown on a tab (none when the layout has no tabs)
    std::vector<std::string> m_onStrips;        // this frame's panels named on a tab strip, shown or not
    std::string m_reveal;                       // a panel to bring to the front (revealPanel)
    std::string m_weightsView = "heatmap";      // the heatmap, the head view or the neuron view: which the tabbed layout shows on the left
    std::vector<CaptureRequest> m_captures;
    std::string m_toast;
    bool m_toastError = false;
    double m_toastUntil = 0.0;
    int m_exportPanel = 0;  // Export dialog: 0 = whole window, else panel index + 1
    int m_exportScale = 1;
    int m_styleTheme = -1;
    float m_styleScale = 0.0f;
    float m_effectiveScale = 1.0f;
    bool m_quit = false;
    bool m_computeFailed = false;
    bool m_viewsSettled = false;
};

}  // namespace attnviz::app
