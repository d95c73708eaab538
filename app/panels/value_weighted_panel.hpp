// Value-weighted attention (Kobayashi et al. 2020): the selected head's map of ‖α_ij v_j W_O^h‖,
// what key j writes into query i's residual stream through the head, on its own colour bar (rows
// do not sum to 1, and the panel says so); the selected query's row as bars below; hover a cell for
// its weight, its value's length and their product. Click a row to select that query.
#pragma once

#include "app/panels/panel.hpp"

namespace attnviz::app {

class ValueWeightedPanel : public Panel {
public:
    using Panel::Panel;
    void draw(PanelContext& ctx) override;
};

}  // namespace attnviz::app
