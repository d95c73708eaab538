// The cost of attention (seed 000 §39.3): the memory wall of stored T × T matrices, with what
// fits in this machine's memory, and a live timing of self-attention against an RNN cell of the
// same width, on log–log axes. The timing sweep runs in the state (labs.hpp), off the UI
// thread: this panel starts and stops it through actions and draws its snapshot.
#pragma once

#include "app/panels/panel.hpp"

namespace attnviz::app {

class CostPanel : public Panel {
public:
    using Panel::Panel;
    void draw(PanelContext& ctx) override;

private:
    void drawMemoryWall(PanelContext& ctx);
    void drawTiming(PanelContext& ctx);
};

}  // namespace attnviz::app
