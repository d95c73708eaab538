// Comparing two inputs: the shown head over the state's sentence (A) and another (B) side by side,
// and B − A on a two-sided scale where their tokens line up (hatched where they do not); how far
// the head moved, and a button that tints the model view by how far every head moved.
#pragma once

#include "app/panels/panel.hpp"

namespace attnviz::app {

class ComparePanel : public Panel {
public:
    using Panel::Panel;
    void draw(PanelContext& ctx) override;
};

}  // namespace attnviz::app
