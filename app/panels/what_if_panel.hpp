// The what-if panel: a model's heads ablated (output zeroed, or replaced by its mean over the
// positions) and tokens hidden from every key set, one click each, listed with remove, undo, redo
// and clear. It shows the next tokens before and after with the change of each one's
// log-probability, how far every head's map moved (a layer × head grid), and the selected head's
// map after − before on a two-sided scale.
#pragma once

#include "app/gfx/texture_cache.hpp"
#include "app/panels/panel.hpp"

#include <cstdint>
#include <memory>
#include <vector>

namespace attnviz::app {

class WhatIfPanel : public Panel {
public:
    using Panel::Panel;
    void draw(PanelContext& ctx) override;

private:
    // Kept for the pass they were made from: the heads' moved measures (every map read once), and
    // the shown head's difference.
    std::weak_ptr<const core::decoder::Run> m_movedOf;
    std::vector<double> m_moved;
    gfx::TextureStamp m_diffKey{0, -1, 0, -1, 0};  // the version, head and layer (rows) of m_diff
    core::Mat m_diff;
    float m_range = 0;
};

}  // namespace attnviz::app
