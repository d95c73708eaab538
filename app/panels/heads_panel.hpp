// Every head as a thumbnail (and their mean): click to select, hover to preview.
#pragma once

#include "app/panels/panel.hpp"

namespace attnviz::app {

class HeadsPanel : public Panel {
public:
    using Panel::Panel;
    void draw(PanelContext& ctx) override;

private:
    bool m_previewing = false;  // this panel set the preview shown now
};

}  // namespace attnviz::app
