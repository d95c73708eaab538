// The induction test (core::inductionScores) of the open model on a worker thread: the window
// goes on while the checkpoint reads its repeated random tokens, shows how far it is, and may
// stop it. It never touches the user's sentence or the state's pass.
#pragma once

#include "app/state/background_job.hpp"
#include "core/base/progress.hpp"
#include "core/models/induction.hpp"

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace attnviz::app {

struct InductionSnapshot {
    bool running = false;
    double fraction = 0;                        // of the passes, 0 … 1, while running
    const void* checkpoint = nullptr;           // the checkpoint the scores (or the error) are of
    std::optional<std::vector<double>> scores;  // [layers × heads], layer-major, once finished
    std::string error;                          // why it failed ("" when it did not)
};

class InductionJob {
public:
    InductionJob() = default;
    InductionJob(const InductionJob&) = delete;
    InductionJob& operator=(const InductionJob&) = delete;
    ~InductionJob() { stop(); }

    // Stops a test under way, forgets the last result, and tests `model` (kept alive meanwhile).
    void start(std::shared_ptr<const core::decoder::Checkpoint> model, const core::InductionSettings& settings);
    // Stops a test under way and waits for it; a result already made stays.
    void stop();
    bool running() const { return m_job.running(); }
    InductionSnapshot snapshot() const;

private:
    mutable std::mutex m_mutex;
    InductionSnapshot m_done;                    // guarded by m_mutex (running and fraction unused)
    std::shared_ptr<core::Progress> m_progress;  // of the test under way
    BackgroundJob m_job;                         // last: stopped before the rest goes
};

// The scores of the induction test for the state's model, when the last test finished on it.
const std::vector<double>* inductionTestScores(const InductionSnapshot& snapshot, const void* checkpoint);

}  // namespace attnviz::app
