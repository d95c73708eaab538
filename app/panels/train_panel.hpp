// Heads that learn (seed 000 §39.7.1, Exercise 39.4): trains two small attention models side
// by side on a worker thread — one head against two on the two-relation toy, or no positions
// against positions on reversal and previous-token copying — with live loss curves and the
// heads' maps on a held-out example. Stop cancels; the same seed gives the same run; the
// trained model opens in the main view (and saves as a scenario from there).
#pragma once

#include "app/background_job.hpp"
#include "app/panels/panel.hpp"
#include "core/labs/train.hpp"

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

namespace attnviz::app {

class TrainPanel : public Panel {
public:
    TrainPanel();
    ~TrainPanel() override;
    const char* id() const override { return "train"; }
    const char* title() const override { return "Heads that learn"; }
    void draw(PanelContext& ctx) override;

    // The pair of runs the current settings compare (second = the one that opens in the app).
    std::vector<core::TrainConfig> runs() const;
    void start(int steps);
    void stop();
    bool training() const { return m_job.running(); }

    struct Progress {
        core::TrainConfig config;
        std::vector<float> losses;          // per step, the batch's loss
        double heldOut = 0;                 // after the last step
        std::vector<core::MatD> maps;       // the heads' maps on the held-out example
        core::Scenario scenario;            // the trained weights, for the main view
        std::string label;
    };
    // A copy of the runs so far; `version` (if given) names that snapshot.
    std::vector<Progress> progress(std::uint64_t* version = nullptr) const;

    core::TrainConfig settings;  // task, heads, positions, seed as chosen in the panel

private:
    mutable std::mutex m_mutex;
    std::vector<Progress> m_progress;  // guarded by m_mutex
    std::uint64_t m_version = 0;       // guarded by m_mutex; changes with every published snapshot
    int m_steps = 400;
    BackgroundJob m_job;  // last: stopped before the progress goes
};

}  // namespace attnviz::app
