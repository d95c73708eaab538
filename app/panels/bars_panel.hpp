// The selected query's distribution over the keys, its own key in red (seed 000 §39.6);
// or small multiples of several query positions at once.
#pragma once

#include "app/panels/panel.hpp"

namespace attnviz::app {

class BarsPanel : public Panel {
public:
    using Panel::Panel;
    void draw(PanelContext& ctx) override;
};

// Query positions shown as small multiples: up to `count` spread evenly, the selected one included.
std::vector<int> smallMultiplePositions(int queries, int selected, int count);

}  // namespace attnviz::app
