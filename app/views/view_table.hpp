// Every view the app has, one row each, in drawing order: its id (for --panel, lessons and the
// layout), its window title and tab name, and, for a view with a figure, the command line's
// export flag and the function that makes the figure's file from the state. The window builds its
// panels from this table (app/panels/panel_table.cpp adds how to draw each), the command line
// declares its figure exports from it, and the Export dialog offers the same figures.
#pragma once

#include "app/state/app_state.hpp"
#include "app/state/source.hpp"
#include "app/views/figures.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace attnviz::app {

// The ids the layout names. A lab's view is named after its lab (labName).
namespace panel_id {
inline constexpr std::string_view kControls = "controls";
inline constexpr std::string_view kHeatmap = "heatmap";
inline constexpr std::string_view kBars = "bars";
inline constexpr std::string_view kHeads = "heads";
inline constexpr std::string_view kSwap = "swap";
inline constexpr std::string_view kStages = "stages";
inline constexpr std::string_view kPositional = "positional";
inline constexpr std::string_view kLesson = "lesson";
inline constexpr std::string_view kModel = "model";  // every layer × head (the model view)
inline constexpr std::string_view kStats = "stats";  // every head's statistics
inline constexpr std::string_view kHeadView = "head-view";
inline constexpr std::string_view kNeuron = "neuron";
inline constexpr std::string_view kCompare = "compare";
inline constexpr std::string_view kQkMap = "qk-map";    // the selected head's queries and keys on one plane
inline constexpr std::string_view kWhatIf = "what-if";  // a model's heads ablated, tokens hidden
}  // namespace panel_id

// A view's figure as a file: its export flag and how the file is made.
struct FigureExport {
    const char* flag = nullptr;   // "--export-heatmap"; nullptr: the view has no figure
    const char* types = nullptr;  // the flag's value as --help shows it: "OUT.png|OUT.svg"
    const char* help = nullptr;   // the flag's help
    bool everyLayer = false;      // reads every layer's maps (an import's are all checked first)
    // The file's bytes for `path` (its type by the extension), from the state as it is: the view's
    // derived data is brought up to date first. Throws core::InputError.
    std::string (*write)(AppState& state, const std::string& path, const FigureRequest& request) = nullptr;
    // Refuses a path whose type the figure cannot be (before any work). Throws core::InputError.
    void (*checkPath)(const std::string& path) = nullptr;
    explicit operator bool() const { return flag != nullptr; }
};

// Where the layout puts a view that shares a place with others, on tabs.
enum class Place : std::uint8_t {
    Own,      // a place of its own (or the layout's own choice: controls, bars, the labs, the lesson)
    Weights,  // a tab beside the attention weights, in their place: what reads one head's map
    Layers,   // a tab among the views of every layer × head (the model view's place)
};

// What a view needs of the state's source to show anything but a line saying why not
// (Capabilities, app/state/source.hpp). The layout offers a view only where the source feeds it,
// unless asked for by name (View menu, --panel, a lesson).
enum class Need : std::uint8_t {
    Nothing,  // the maps alone: a scenario's, a checkpoint's or an import's
    Weights,  // X and the weights behind the maps (a scenario or a checkpoint, not an import)
    Rerun,    // a checkpoint's pass to run again
    // X and the weights, and the shown layer's heads computed whole (every head's T × T scores
    // and weights): a scenario, or a model's sentence short enough (Capabilities::wholeLayer)
    WholeLayer,
    // the shown layer's every head's map whole: any source but a model's sentence too long for
    // them (the heads strip draws every head's map in full)
    WholeMaps,
};
bool feeds(const Capabilities& can, Need need);
// Why a source that `need` is not met by shows nothing there, in a few words ("needs a model's
// weights"); "" when nothing is needed.
const char* needText(Need need);

struct ViewInfo {
    std::string_view id;
    const char* title;  // the window's title, and the View menu's item
    const char* tab;    // its short name, on a tab when views share a place (a small screen)
    Place place = Place::Own;
    Need needs = Need::Nothing;
    FigureExport figure;
    // Brings the view's derived data up to date after a frame that drew it out of date (the view
    // asked: PanelContext's requests); returns whether it is current. nullptr: nothing derived.
    bool (*refresh)(AppState& state) = nullptr;
};

const std::vector<ViewInfo>& viewTable();
// The table's row for `id`; nullptr when no view has it.
const ViewInfo* findView(std::string_view id);
// Whether the state's source feeds the view `id` (true for an id no row has).
bool feedsView(const AppState& state, std::string_view id);
// The ids of the views at `place`, in the table's order.
std::vector<std::string_view> viewsAt(Place place);

}  // namespace attnviz::app
