// What every panel gets to draw one frame: the state to read, the queue to emit actions into,
// and the front end's shared drawing resources.
#pragma once

#include "app/fonts/font_atlas.hpp"
#include "app/state/actions.hpp"

#include <imgui.h>

#include <set>
#include <string>
#include <string_view>

namespace attnviz::gfx {
class HeatmapRenderer;
class HeatmapTexture;
struct Colouring;
class TextureCache;
}  // namespace attnviz::gfx

namespace attnviz::app {

// Text being edited: the front end's own transient state, never the model's.
struct Drafts {
    std::string sentence;
    std::string sentenceSource;  // the sentence the draft was last synced from
    std::string pair;            // an encoder's second sentence being typed
    std::string pairSource;      // the second sentence the draft was last synced from
    std::string openPath;
    std::string modelPath;
    std::string savePath;
    std::string exportPath;
    std::string compare;        // the compare view's other sentence being typed
    std::string compareSource;  // the other sentence the draft was last synced from
    std::string checkAnswer;    // the lesson's quick-check answer being typed
    int checkStep = -1;         // the lesson step it was typed for (a new step starts empty)
};

// Requests a panel makes of the app itself (files, window), not of the model.
struct AppRequests {
    bool openDialog = false;
    bool modelDialog = false;  // File → Open model folder
    bool saveDialog = false;
    bool exportDialog = false;
    bool screenshot = false;  // Ctrl+S: whole window at 1x to the default path
    bool toggleFullscreen = false;
    // Views that drew their derived data out of date (their ids): the app brings it up to date after
    // the frame, by the view table's refresh (the summary of every head once the pass is ready, the
    // query–key map once the head is, the shift check).
    std::set<std::string, std::less<>> stale;
};

struct PanelContext {
    const AppState& state;
    Actions& actions;
    gfx::HeatmapRenderer& heatmaps;
    gfx::TextureCache& textures;
    Drafts& drafts;
    const Fonts& fonts;
    AppRequests& requests;
    float scale;      // UI scale in effect (content scale x user scale)
    int windowFlags;  // ImGuiWindowFlags the app wants on every panel window
};

struct PanelInfo;  // panel_table.hpp

class Panel {
public:
    explicit Panel(const PanelInfo& info) : m_info(info) {}
    Panel(const Panel&) = delete;
    Panel& operator=(const Panel&) = delete;
    virtual ~Panel() = default;
    std::string_view id() const;  // "heatmap": for --panel, lessons and exports (panel_table.cpp)
    const char* title() const;    // the window's title
    // Opens and closes its own ImGui window; position and size are set by the app beforehand.
    virtual void draw(PanelContext& ctx) = 0;

private:
    const PanelInfo& m_info;
};

// ImGui::Begin with the app's window flags; false (and the window already ended) when there is
// nothing to draw. The panel calls ImGui::End() itself when this returns true.
bool beginPanel(PanelContext& ctx, const char* title);
// The same, for a panel that shows `head` (-1 = the mean): while that head (its weights, for a
// panel that shows only those) is still being computed it shows "computing…" and returns false.
bool beginPanelFor(PanelContext& ctx, const char* title, int head, bool weightsOnly);
// For a panel that needs a model behind the maps (X, the weights, the queries and keys): when the
// maps were imported (computed elsewhere), says so in one wrapped line, "Imported attention has no
// model behind it: <what> (open a checkpoint with --model).", ends the window and returns true;
// likewise when a model's sentence is too long for the shown layer's heads whole (read from the
// pass: Capabilities::wholeLayer; unless wholeLayer is false: a view that reads the pass), "This view needs the shown layer's heads computed whole; at T
// tokens …".
// Call it right after beginPanel / beginPanelFor: `if (noModelNote(ctx, "…")) return;`. `what`
// is a short fixed clause: "the stages need X and the weights W_Q, W_K and W_V".
bool noModelNote(PanelContext& ctx, const char* what, bool wholeLayer = true);
// While an import's maps are checked in the background (the views of every layer wait for it):
// "checking every map: 37 %", or the bad map's line once the check failed.
void importCheckNote(const AppState& state);
// While every map made on demand is swept on a worker thread for the views of every layer
// (pendingHeadSweep): how far it is with Stop, Resume once stopped, or why it failed. Returns
// whether there is such a sweep; while it runs, view `viewId` is marked stale, so that its
// refresh takes the summary in the frame it is ready (a stopped or failed sweep leaves the
// window idle).
bool headSweepNote(PanelContext& ctx, std::string_view viewId);

// The weights of `head` (-1 = the mean of all heads) as the texture cached under `key`, for a
// map whose cells are `pixelsPerCell` logical pixels wide. Smaller than a pixel per cell, each
// texel is the largest weight of its block of cells: no more texels than pixels to upload and
// draw, and no sharp weight lost. Re-made only when the head, its numbers, the pooling or the
// colouring (the view's colormap and colour scale: weightColouring) change.
const gfx::HeatmapTexture& headWeightsTexture(PanelContext& ctx, const std::string& key, int head, float pixelsPerCell);
// How every map of attention weights is coloured: the view's colormap and colour scale.
gfx::Colouring weightColouring(const AppState& state);
// The pooling factor headWeightsTexture uses for a map `pixelsPerCell` logical pixels a cell.
int headPooling(float pixelsPerCell);

// "Head 2 of 4" / "Mean of 4 heads"
std::string headLabel(const AppState& state, int head);
// Tooltip on the previous item (bounded: it may quote a user's description).
void tooltip(const char* text);

}  // namespace attnviz::app
