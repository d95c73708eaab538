// Token swap: permutation equivariance as a verdict in words and numbers (seed 004), with the
// positional-encoding switch right there, and the weights before and after (A′ = P A Pᵀ).
#pragma once

#include "app/panels/panel.hpp"

namespace attnviz::app {

class SwapPanel : public Panel {
public:
    using Panel::Panel;
    void draw(PanelContext& ctx) override;

private:
    static void drawOutputs(PanelContext& ctx);
};

// "outputs match the permutation: ‖Y′ − P·Y‖ = 0 up to float rounding (2.1e-07)" (or "= 0 exactly")
// / "outputs do not match the permutation: ‖Y′ − P·Y‖ = 0.83"
std::string verdictText(const AppState& state);
// Why they do not match, in words (the causal mask, positional encodings); "" when they match.
std::string verdictReason(const AppState& state);

}  // namespace attnviz::app
