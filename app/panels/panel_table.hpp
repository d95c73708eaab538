// Every panel the app has, in drawing order: its id (for --panel, lessons, exports and the
// layout), its window title, and how to make it. The one list that the app builds its panels
// from, the layout places, --panel checks and the lesson format is tested against.
#pragma once

#include "app/panels/panel.hpp"

#include <memory>
#include <string_view>
#include <vector>

namespace attnviz::app {

// The ids the layout names. A lab's panel is named after its lab (labName).
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

struct PanelInfo {
    std::string_view id;
    const char* title;  // the window's title
    const char* tab;    // its short name, on a tab when panels share a place (a small screen)
    std::unique_ptr<Panel> (*make)(const PanelInfo&);
};

const std::vector<PanelInfo>& panelTable();
// The table's entry for `id`; nullptr when no panel has it.
const PanelInfo* findPanel(std::string_view id);

}  // namespace attnviz::app
