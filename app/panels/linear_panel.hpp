// Linear attention and its older readings, live on the visible head's q, k, v (seed 000 §39.4):
// the implied linear map beside the softmax map, the parallel and recurrent forms' agreement,
// the fast-weight matrix Sₜ growing token by token, and one Hopfield retrieval step. The maps
// are derived in the state (labs.hpp, LinearMaps); this panel only draws them.
#pragma once

#include "app/panels/panel.hpp"

namespace attnviz::app {

class LinearPanel : public Panel {
public:
    using Panel::Panel;
    void draw(PanelContext& ctx) override;

private:
    void drawMaps(PanelContext& ctx, const LinearMaps& maps);
    void drawFastWeights(PanelContext& ctx, const LinearMaps& maps);
    void drawHopfield(PanelContext& ctx, const LinearMaps& maps);
};

}  // namespace attnviz::app
