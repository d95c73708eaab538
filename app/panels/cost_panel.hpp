// The cost of attention (seed 000 §39.3): the memory wall of stored T × T matrices, with what
// fits in this machine's memory, and a live timing of self-attention against an RNN cell of the
// same width, on log–log axes. The timing runs off the UI thread and can be stopped.
#pragma once

#include "app/background_job.hpp"
#include "app/panels/panel.hpp"
#include "core/labs/cost.hpp"

#include <atomic>
#include <functional>
#include <mutex>
#include <vector>

namespace attnviz::app {

class CostPanel : public Panel {
public:
    // One point of the sweep: T tokens at width d. `cancel` turns true when Stop is asked for; a
    // point measured across it is dropped.
    using Measure = std::function<core::CostPoint(long long tokens, int width, const std::atomic<bool>& cancel)>;
    // The timing sweep measures with core::measureCost unless given another (tests give one that
    // does not depend on the clock).
    explicit CostPanel(Measure measure = {});
    ~CostPanel() override;
    const char* id() const override { return "cost"; }
    const char* title() const override { return "Cost of attention"; }
    void draw(PanelContext& ctx) override;

    // The timing sweep, T = 16 … 4096 at d = 64 (seed 000's width). Results arrive one T at a time.
    static const std::vector<long long>& sweepTokens();
    void startMeasuring();
    void stopMeasuring();
    bool measuring() const { return m_job.running(); }
    std::vector<core::CostPoint> points() const;

private:
    void drawMemoryWall(PanelContext& ctx, float width);
    void drawTiming(PanelContext& ctx);

    Measure m_measure;
    mutable std::mutex m_mutex;
    std::vector<core::CostPoint> m_points;  // guarded by m_mutex
    BackgroundJob m_job;                    // last: stopped before the points go
};

}  // namespace attnviz::app
