// Every layer × head of the pass as a thumbnail (rows = layers, columns = heads), in one colour
// scale: hover a tile to preview its head in the heatmap, click to select its layer and head.
// Tiles can be sorted and tinted by a head statistic.
#pragma once

#include "app/panels/panel.hpp"

namespace attnviz::app {

class ModelViewPanel : public Panel {
public:
    using Panel::Panel;
    void draw(PanelContext& ctx) override;

private:
    bool m_previewing = false;  // this panel set the preview shown now (and clears it when the mouse leaves)
};

}  // namespace attnviz::app
