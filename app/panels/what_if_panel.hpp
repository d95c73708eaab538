// The what-if panel: a model's heads ablated (output zeroed, or replaced by its mean over the
// positions) and tokens hidden from every key set, one click each, listed with remove, undo, redo
// and clear. It shows the next tokens before and after with the change of each one's
// log-probability, how far every head's map moved (a layer × head grid), and the selected head's
// map after − before on a two-sided scale.
#pragma once

#include "app/panels/panel.hpp"

namespace attnviz::app {

class WhatIfPanel : public Panel {
public:
    using Panel::Panel;
    void draw(PanelContext& ctx) override;
};

}  // namespace attnviz::app
