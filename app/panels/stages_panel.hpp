// The shape passport: X → Q, K, V → Q Kᵀ → scaled → masked → A → A·V, one stage at a time
// (← / → step like slides), each with its shape and, when small, its numbers.
#pragma once

#include "app/panels/panel.hpp"

namespace attnviz::app {

class StagesPanel : public Panel {
public:
    using Panel::Panel;
    void draw(PanelContext& ctx) override;
};

struct StageView {
    std::string name;                 // "Q Kᵀ"
    std::string formula;              // "scores = Q Kᵀ"
    std::string meaning;              // one sentence
    Eigen::Index rows = 0, cols = 0;  // 0 x 0 when the stage does not exist (X with explicit Q/K/V)
    core::Mat values;                 // the numbers, only when withValues and small enough to print
    std::vector<std::string> rowLabels, colLabels;
};

// A live check of a stage (seed 002's exercises): W_Q = W_K makes Q Kᵀ symmetric (before scaling
// and masking), "symmetric: max |S − Sᵀ| = 0"; V = K, "V = K: max |V − K| = 0". `holds` when it is
// exact; empty text when none applies (other stages, more than 1024 tokens).
struct StageCheck {
    std::string text;
    bool holds = false;
};
StageCheck stageCheck(const AppState& state, int index, int head);
inline constexpr Eigen::Index kPrintableStage = 128;  // larger stages show their shape only
// Stage `index` (0 … kStageCount-1) of head `head` (>= 0). Copies numbers only when asked and
// when the stage fits kPrintableStage x kPrintableStage, so large T costs nothing per frame.
StageView stageView(const AppState& state, int index, int head, bool withValues);

}  // namespace attnviz::app
