// Heads that learn (seed 000 §39.7.1, Exercise 39.4): two small attention models trained side
// by side — one head against two on the two-relation toy, or no positions against positions on
// reversal and previous-token copying — with live loss curves and the heads' maps on a
// held-out example. The training runs in the state (labs.hpp): this panel edits its settings,
// starts and stops it through actions, and draws its snapshot; the trained model opens in the
// main view (and saves as a scenario from there).
#pragma once

#include "app/panels/panel.hpp"

#include <cstdint>
#include <vector>

namespace attnviz::app {

class TrainPanel : public Panel {
public:
    using Panel::Panel;
    void draw(PanelContext& ctx) override;

private:
    void drawRuns(PanelContext& ctx, const std::vector<TrainRun>& runs, bool trained, std::uint64_t version, int steps);
    static void drawLoss(const std::vector<TrainRun>& runs, bool trained, int steps);
    static void drawMaps(PanelContext& ctx, const std::vector<TrainRun>& runs, bool trained, std::uint64_t version);
};

}  // namespace attnviz::app
