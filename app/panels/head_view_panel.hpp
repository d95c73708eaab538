// The head view (BertViz's): the tokens twice, queries left and keys right, a line from each query
// to each key it reads with opacity = weight, one colour per head, several heads overlaid. Click a
// head's swatch to switch it; hover a token to isolate its lines, click to keep it, shift-click to
// pick several (their attention summed on the keys). Long sentences: the columns scroll, only the
// visible tokens are drawn, and only the lines core::HeadLineRule keeps.
#pragma once

#include <vector>
#include "app/panels/panel.hpp"

namespace attnviz::app {

// The most lines drawn in one frame (ImGui's indices are 16-bit here: about 8 vertices a line);
// beyond, the strongest of the visible lines, and the view says so.
inline constexpr int kMaxHeadViewLinesPerFrame = 4000;

class HeadViewPanel : public Panel {
public:
    using Panel::Panel;
    void draw(PanelContext& ctx) override;

private:
    std::vector<int> m_visible;  // scratch: indices of the lines drawn this frame
};

}  // namespace attnviz::app
