// Sinusoidal positional encoding: a few dimensions over positions (fast and slow waves) and
// the whole PE matrix (seed 003 §6).
#pragma once

#include "app/panels/panel.hpp"

namespace attnviz::app {

class PositionalPanel : public Panel {
public:
    using Panel::Panel;
    void draw(PanelContext& ctx) override;
};

}  // namespace attnviz::app
