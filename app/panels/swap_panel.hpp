// Token swap: permutation equivariance as a verdict in words and numbers (seed 004), with the
// positional-encoding switch right there, and the weights before and after (A′ = P A Pᵀ).
#pragma once

#include "app/panels/panel.hpp"

namespace attnviz::app {

class SwapPanel : public Panel {
public:
    using Panel::Panel;
    void draw(PanelContext& ctx) override;
};

// "outputs match permutation: ‖Y′ − P·Y‖ = 2.1e-07" / "outputs do not match permutation: ‖Y′ − P·Y‖ = 0.83"
std::string verdictText(const AppState& state);

}  // namespace attnviz::app
