// The head view (BertViz's): the tokens twice, queries left and keys right, a line from each query
// to each key it reads with opacity = weight, one colour per head, several heads overlaid. Click a
// head's swatch to switch it; hover a token to isolate its lines, click to keep it, shift-click to
// pick several (their attention summed on the keys). Long sentences: the columns scroll, only the
// visible tokens are drawn, and only the lines core::HeadLineRule keeps.
#pragma once

#include "app/panels/panel.hpp"
#include "app/state/app_state.hpp"
#include "core/attention/head_lines.hpp"

#include <optional>
#include <vector>

namespace attnviz::app {

// The most lines drawn in one frame (ImGui's indices are 16-bit here: about 8 vertices a line);
// beyond, the strongest of the visible lines, and the view says so.
inline constexpr int kMaxHeadViewLinesPerFrame = 4000;

class HeadViewPanel : public Panel {
public:
    using Panel::Panel;
    void draw(PanelContext& ctx) override;

private:
    // Geometry made once per pass and selection, not per frame: which lines, and the picked
    // tokens' sums. Current while `key` is the state's.
    struct Key {
        HeadSummary::Key pass;
        int layer = -1;
        Eigen::Index tokens0 = 0;        // the pass's length (a model's pass may grow in place)
        std::vector<int> heads, tokens;  // shown heads, picked tokens
        bool operator==(const Key&) const = default;
    };
    std::optional<Key> m_key;
    core::HeadLines m_lines;
    std::vector<float> m_sums;   // [heads × keys]: summedAttention of the picked tokens
    std::vector<int> m_visible;  // scratch: indices of the lines drawn this frame
};

}  // namespace attnviz::app
