// The shape passport: X → Q, K, V → Q Kᵀ → scaled → masked → A → A·V, one stage at a time
// (← / → step like slides), each with its shape and, when small, its numbers.
#pragma once

#include "app/panels/panel.hpp"

namespace attnviz::app {

class StagesPanel : public Panel {
public:
    const char* id() const override { return "stages"; }
    const char* title() const override { return "Stages"; }
    void draw(PanelContext& ctx) override;
};

struct StageView {
    std::string name;      // "Q Kᵀ"
    std::string formula;   // "scores = Q Kᵀ"
    std::string meaning;   // one sentence
    core::Mat values;      // empty when the stage does not exist (X in explicit Q/K/V mode)
    bool masked = false;   // -inf cells are shown as "−∞"
    std::vector<std::string> rowLabels, colLabels;
};
// Stage `index` (0 … kStageCount-1) of head `head` (>= 0).
StageView stageView(const AppState& state, int index, int head);

}  // namespace attnviz::app
