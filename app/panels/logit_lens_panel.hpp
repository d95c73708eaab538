// The logit lens (app/views/logit_lens.hpp): a layers × positions grid, the embeddings on top and
// the model's own prediction at the bottom, each cell the stream's top token there on the colour of
// its probability; hover a cell for its five most likely tokens and the target's probability and
// rank, click it to select that position as the query and that layer everywhere.
#pragma once

#include "app/panels/panel.hpp"

namespace attnviz::app {

class LogitLensPanel : public Panel {
public:
    using Panel::Panel;
    void draw(PanelContext& ctx) override;
};

}  // namespace attnviz::app
