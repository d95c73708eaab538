// Direct logit attribution (app/views/attribution.hpp): what each head, MLP and the embeddings
// write onto the target's logit at one position, as a layers × heads grid on a two-sided colour
// scale, with the sum checked against the pass's logit. The position (the last, or the selected
// query) and the target (a token, or "A-B" for a difference) are set above it; hover a cell for its
// term, click a head to select it everywhere.
#pragma once

#include "app/panels/panel.hpp"

#include <array>

namespace attnviz::app {

class AttributionPanel : public Panel {
public:
    using Panel::Panel;
    void draw(PanelContext& ctx) override;

private:
    std::array<char, 128> m_target{};    // the target field as typed
    std::string m_shownTarget = "\x01";  // the state's target the field was last filled from
};

}  // namespace attnviz::app
