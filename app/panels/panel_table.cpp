#include "app/panels/panel_table.hpp"

#include "app/panels/bars_panel.hpp"
#include "app/panels/compare_panel.hpp"
#include "app/panels/controls_panel.hpp"
#include "app/panels/cost_panel.hpp"
#include "app/panels/flash_panel.hpp"
#include "app/panels/head_view_panel.hpp"
#include "app/panels/heads_panel.hpp"
#include "app/panels/heatmap_panel.hpp"
#include "app/panels/lesson_panel.hpp"
#include "app/panels/linear_panel.hpp"
#include "app/panels/model_view_panel.hpp"
#include "app/panels/neuron_panel.hpp"
#include "app/panels/positional_panel.hpp"
#include "app/panels/qk_map_panel.hpp"
#include "app/panels/stages_panel.hpp"
#include "app/panels/stats_panel.hpp"
#include "app/panels/swap_panel.hpp"
#include "app/panels/train_panel.hpp"
#include "app/panels/what_if_panel.hpp"

#include <algorithm>

namespace attnviz::app {
namespace {

template <class P>
std::unique_ptr<Panel> make(const PanelInfo& info) {
    return std::make_unique<P>(info);
}

}  // namespace

const std::vector<PanelInfo>& panelTable() {
    static const std::vector<PanelInfo> table = {
        {panel_id::kControls, "Controls", "Controls", make<ControlsPanel>},
        {panel_id::kHeatmap, "Attention weights", "Weights", make<HeatmapPanel>},
        {panel_id::kBars, "Per-query attention", "Per query", make<BarsPanel>},
        {panel_id::kHeads, "Heads", "Heads", make<HeadsPanel>},
        {panel_id::kSwap, "Token swap", "Swap", make<SwapPanel>},
        {panel_id::kStages, "Stages", "Stages", make<StagesPanel>},
        {panel_id::kPositional, "Positional encoding", "Positions", make<PositionalPanel>},
        {panel_id::kModel, "Model view: every layer × head", "Model", make<ModelViewPanel>},
        {panel_id::kStats, "Head statistics", "Statistics", make<StatsPanel>},
        {panel_id::kHeadView, "Head view", "Head view", make<HeadViewPanel>},
        {panel_id::kNeuron, "Neuron view: one score, term by term", "Neuron", make<NeuronPanel>},
        {panel_id::kCompare, "Compare two sentences", "Compare", make<ComparePanel>},
        {panel_id::kQkMap, "Query–key map", "Q–K map", make<QkMapPanel>},
        {panel_id::kWhatIf, "What-if: ablate heads, hide tokens", "What-if", make<WhatIfPanel>},
        {labName(Lab::Linear), "Linear attention · fast weights · Hopfield", "Linear", make<LinearPanel>},
        {labName(Lab::Cost), "Cost of attention", "Cost", make<CostPanel>},
        {labName(Lab::Train), "Heads that learn", "Training", make<TrainPanel>},
        {labName(Lab::Flash), "Flash-attention walk", "Flash", make<FlashPanel>},
        {panel_id::kLesson, "Lesson", "Lesson", make<LessonPanel>},
    };
    return table;
}

const PanelInfo* findPanel(std::string_view id) {
    const auto& table = panelTable();
    const auto it = std::find_if(table.begin(), table.end(), [&](const PanelInfo& p) { return p.id == id; });
    return it == table.end() ? nullptr : &*it;
}

}  // namespace attnviz::app
