// The lesson strip: the step's title and text, its quick check (answered from the live
// numbers), and the way through the steps (PageUp / PageDown).
#pragma once

#include "app/panels/panel.hpp"

namespace attnviz::app {

// The height the lesson panel needs at `width` (window padding and title bar included) to show
// its step bar, the step's title and text, and its quick check without scrolling.
float lessonPanelHeight(const LessonState& lesson, float width, const Fonts& fonts, bool presenter);

class LessonPanel : public Panel {
public:
    using Panel::Panel;
    void draw(PanelContext& ctx) override;
};

}  // namespace attnviz::app
