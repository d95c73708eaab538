// The query–key map (AttentionViz, Yeh et al. 2023): the selected head's queries (diamonds, warm)
// and keys (squares, cool) on the first two principal components of both together, after the keys
// are translated onto the queries' centroid and both scaled to equal mean norms (which changes no
// softmax). Lighter is earlier in the sentence. Hover a point to name its token and outline its row
// (a query) or column (a key) in the heatmap; click a query to select it; the selected query is
// joined to its strongest keys.
#pragma once

#include "app/panels/panel.hpp"

namespace attnviz::app {

class QkMapPanel : public Panel {
public:
    using Panel::Panel;
    void draw(PanelContext& ctx) override;
};

// The most points one frame draws, 4 vertices each (ImGui's 16-bit indices address 65,536 a draw
// list): beyond it every s-th query and every s-th key is drawn, s = ⌈(T_q + T_k) / kQkMapMaxPoints⌉,
// and the panel says so. T = 4,096 (8,192 points) is drawn whole.
inline constexpr int kQkMapMaxPoints = 12000;
int qkMapStride(long long points);

}  // namespace attnviz::app
