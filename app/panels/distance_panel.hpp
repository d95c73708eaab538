// Distances and sinks: the selected layer's heads' profiles (app/views/head_profile_view.hpp),
// attention by distance on log–log axes beside uniform attention, and the mass on the first k
// tokens across query positions; the selected head drawn over the layer's other heads. Hover a plot
// for the selected head's value there. A panel too small for both shows one, with a choice.
#pragma once

#include "app/panels/panel.hpp"

namespace attnviz::app {

class DistancePanel : public Panel {
public:
    using Panel::Panel;
    void draw(PanelContext& ctx) override;

private:
    bool m_firstK = false;  // too small for both plots: the one shown
};

}  // namespace attnviz::app
