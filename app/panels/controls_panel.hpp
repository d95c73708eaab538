// Everything the user can set: sentence, presets, sizes, seed, embedding, positions,
// temperature, scaling, mask, head, colours. Every control explains itself in a tooltip.
#pragma once

#include "app/panels/panel.hpp"

namespace attnviz::app {

// Where the whole does not fit (a tab on a small screen), the sections are headers, one open at a
// time.
class ControlsPanel : public Panel {
public:
    using Panel::Panel;
    void draw(PanelContext& ctx) override;

private:
    // Full: a separator before every section but the first. Compact: the section's header, open
    // when it is the one chosen. Returns whether to draw the section.
    bool section(const char* name, int index);
    void scenarioSection(PanelContext& ctx);
    void inputsSection(PanelContext& ctx);
    void softmaxSection(PanelContext& ctx);
    void softmaxControls(PanelContext& ctx);
    void viewSection(PanelContext& ctx);

    float m_wholeHeight = 0;  // of the content, the last time it was drawn whole
    bool m_compact = false;
    int m_open = 0;  // the section open when compact (-1: none)
};

// Temperature slider: position in [0, 1] on a log scale from 0.01 to 100; 0.5 is τ = 1.
float temperatureToSlider(float tau);
// Snaps to τ = 1 within a small detent around the middle.
float sliderToTemperature(float position);

}  // namespace attnviz::app
