#include "app/panels/panel_table.hpp"

#include "app/panels/attribution_panel.hpp"
#include "app/panels/bars_panel.hpp"
#include "app/panels/compare_panel.hpp"
#include "app/panels/controls_panel.hpp"
#include "app/panels/cost_panel.hpp"
#include "app/panels/distance_panel.hpp"
#include "app/panels/flash_panel.hpp"
#include "app/panels/head_view_panel.hpp"
#include "app/panels/heads_panel.hpp"
#include "app/panels/heatmap_panel.hpp"
#include "app/panels/lesson_panel.hpp"
#include "app/panels/linear_panel.hpp"
#include "app/panels/logit_lens_panel.hpp"
#include "app/panels/model_view_panel.hpp"
#include "app/panels/neuron_panel.hpp"
#include "app/panels/positional_panel.hpp"
#include "app/panels/qk_map_panel.hpp"
#include "app/panels/stages_panel.hpp"
#include "app/panels/stats_panel.hpp"
#include "app/panels/swap_panel.hpp"
#include "app/panels/train_panel.hpp"
#include "app/panels/value_weighted_panel.hpp"
#include "app/panels/what_if_panel.hpp"
#include "app/views/attribution.hpp"
#include "app/views/head_profile_view.hpp"
#include "app/views/logit_lens.hpp"
#include "app/views/value_weighted.hpp"

#include <algorithm>
#include <map>

namespace attnviz::app {
namespace {

template <class P>
std::unique_ptr<Panel> make(const PanelInfo& info) {
    return std::make_unique<P>(info);
}

}  // namespace

const std::vector<PanelInfo>& panelTable() {
    static const std::vector<PanelInfo> table = [] {
        using Make = std::unique_ptr<Panel> (*)(const PanelInfo&);
        const std::map<std::string_view, Make> makers = {
            {panel_id::kControls, make<ControlsPanel>},
            {panel_id::kHeatmap, make<HeatmapPanel>},
            {panel_id::kValueWeighted, make<ValueWeightedPanel>},
            {panel_id::kBars, make<BarsPanel>},
            {panel_id::kHeads, make<HeadsPanel>},
            {panel_id::kSwap, make<SwapPanel>},
            {panel_id::kStages, make<StagesPanel>},
            {panel_id::kPositional, make<PositionalPanel>},
            {panel_id::kModel, make<ModelViewPanel>},
            {panel_id::kStats, make<StatsPanel>},
            {panel_id::kDistance, make<DistancePanel>},
            {panel_id::kHeadView, make<HeadViewPanel>},
            {panel_id::kNeuron, make<NeuronPanel>},
            {panel_id::kCompare, make<ComparePanel>},
            {panel_id::kQkMap, make<QkMapPanel>},
            {panel_id::kWhatIf, make<WhatIfPanel>},
            {panel_id::kLogitLens, make<LogitLensPanel>},
            {panel_id::kAttribution, make<AttributionPanel>},
            {labName(Lab::Linear), make<LinearPanel>},
            {labName(Lab::Cost), make<CostPanel>},
            {labName(Lab::Train), make<TrainPanel>},
            {labName(Lab::Flash), make<FlashPanel>},
            {panel_id::kLesson, make<LessonPanel>},
        };
        std::vector<PanelInfo> panels;
        for (const ViewInfo& view : viewTable()) panels.push_back({view.id, view.title, view.tab, makers.at(view.id)});
        return panels;
    }();
    return table;
}

const PanelInfo* findPanel(std::string_view id) {
    const auto& table = panelTable();
    const auto it = std::find_if(table.begin(), table.end(), [&](const PanelInfo& p) { return p.id == id; });
    return it == table.end() ? nullptr : &*it;
}

}  // namespace attnviz::app
