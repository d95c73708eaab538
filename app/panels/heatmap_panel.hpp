// The attention matrix of the selected head (or the mean over heads): rows = queries,
// columns = keys, as the seeds draw it.
#pragma once

#include "app/panels/panel.hpp"

namespace attnviz::app {

class HeatmapPanel : public Panel {
public:
    using Panel::Panel;
    void draw(PanelContext& ctx) override;
};

}  // namespace attnviz::app
