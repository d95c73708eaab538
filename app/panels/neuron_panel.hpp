// The neuron view: one score taken apart. For the selected head, query i and key j (a heatmap cell
// click sets both): q_i and k_j as the score sees them, their element-wise product in a diverging
// colormap, its sum = the raw score, the scale that turns it into a logit, and query i's softmax
// row with key j marked (click a bar to pick another key).
#pragma once

#include "app/panels/panel.hpp"

namespace attnviz::app {

class NeuronPanel : public Panel {
public:
    using Panel::Panel;
    void draw(PanelContext& ctx) override;
};

// Cells a row of a vector's strip holds: d_k when it fits at `minCell` px a cell, else the largest
// of 64, 32, 16 or 8 that fits (d_k = 128 wraps into 2 rows of 64, or 4 of 32).
int neuronCellsPerRow(int dk, float width, float minCell);

}  // namespace attnviz::app
