// The flash-attention walk (Dao et al. 2022) on the selected head: the map filled a tile of
// queries and keys at a time with the online softmax, the running row maximum m and sum l of the
// tile being walked and the factor exp(m_old − m_new) that rescales what came before, and at the
// end the output against the materialised softmax's A·V and the memory the walk never held.
// The walk is made in the state (labs.hpp, FlashMaps); this panel only draws it.
#pragma once

#include "app/panels/panel.hpp"

namespace attnviz::app {

class FlashPanel : public Panel {
public:
    using Panel::Panel;
    void draw(PanelContext& ctx) override;
};

}  // namespace attnviz::app
