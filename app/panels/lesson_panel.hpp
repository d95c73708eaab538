// The lesson strip: the step's title and text, its quick check (answered from the live
// numbers), and the way through the steps (PageUp / PageDown).
#pragma once

#include "app/panels/panel.hpp"

namespace attnviz::app {

class LessonPanel : public Panel {
public:
    using Panel::Panel;
    void draw(PanelContext& ctx) override;
};

}  // namespace attnviz::app
