// The attention matrix of the selected head (or the mean over heads): rows = queries,
// columns = keys, as the seeds draw it.
#pragma once

#include "app/panels/panel.hpp"
#include "app/state/shown_map.hpp"

#include <optional>

namespace attnviz::app {

class HeatmapPanel : public Panel {
public:
    using Panel::Panel;
    void draw(PanelContext& ctx) override;

private:
    // A layer read from the model's pass: the rows whose numbers are on screen (the tooltip's, a
    // zoomed map's cells), made from the pass when they are first needed.
    struct Rows {
        std::optional<ShownMapKey> of;  // the map they are of (factor unused)
        Eigen::Index r0 = 0;
        core::Mat rows;
        bool has(Eigen::Index i) const { return i >= r0 && i < r0 + rows.rows(); }
    };
    // Rows [r0, r0 + n) of the shown map, made unless they are kept already.
    const Rows& rowsFromPass(const AppState& s, int head, Eigen::Index r0, Eigen::Index n);
    Rows m_rows;
};

}  // namespace attnviz::app
