// Everything the user can set: sentence, presets, sizes, seed, embedding, positions,
// temperature, scaling, mask, head, colours. Every control explains itself in a tooltip.
#pragma once

#include "app/panels/panel.hpp"

namespace attnviz::app {

class ControlsPanel : public Panel {
public:
    using Panel::Panel;
    void draw(PanelContext& ctx) override;
};

// Temperature slider: position in [0, 1] on a log scale from 0.01 to 100; 0.5 is τ = 1.
float temperatureToSlider(float tau);
// Snaps to τ = 1 within a small detent around the middle.
float sliderToTemperature(float position);

}  // namespace attnviz::app
