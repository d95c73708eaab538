// The maps the views of many heads read (the model view, the head statistics, the head view,
// rollout): a model's own pass, every layer × head (causal, τ = 1: what the model computes, not
// the shown layer's edits), or a scenario's forward pass, its heads as one layer; and their
// summary, made once per pass.
#pragma once

#include "app/state/app_state.hpp"
#include "app/state/background_job.hpp"
#include "app/state/source.hpp"
#include "core/attention/head_stats.hpp"
#include "core/base/progress.hpp"

#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace attnviz::app {

// The layer of those maps that the views of one layer show (the heatmap's, the head view's, the
// comparison's, the query–key map's, rollout's last): a model's or an import's selected layer, or
// the scenario's one layer (0). The one rule every view of one layer follows.
int shownMapLayer(const AppState& state);

// The pass the maps are of.
PassKey headSummaryKey(const AppState& state);
// Whether state.headSummary is of the current pass.
bool headSummaryCurrent(const AppState& state);
// Makes state.headSummary for the current pass when it is not current and the maps are ready;
// returns whether it is current now.
bool summarizeHeads(AppState& state);

// The sweep over every map of a pass whose maps are made on demand (seconds to minutes at a few
// thousand tokens), on a worker thread: the window goes on, shows how far it is, and may stop it.
class HeadSweepJob {
public:
    HeadSweepJob() = default;
    HeadSweepJob(const HeadSweepJob&) = delete;
    HeadSweepJob& operator=(const HeadSweepJob&) = delete;
    ~HeadSweepJob() { stop(); }

    // Stops a sweep under way and sweeps `maps` (what they read kept alive by `owner`) for `key`.
    void start(const PassKey& key, core::AttentionMaps maps, std::shared_ptr<const void> owner, const core::HeadSweepOptions& options);
    // Stops a sweep under way and waits for it; the key's sweep then stays stopped until resume().
    void stop();
    void resume();
    bool running() const { return m_job.running(); }
    bool isFor(const PassKey& key) const;  // the last sweep started was of `key`
    bool runningFor(const PassKey& key) const;
    bool stoppedAt(const PassKey& key) const;
    double fraction() const;                        // of the sweep under way (or stopped), 0 … 1
    std::string errorAt(const PassKey& key) const;  // why the key's sweep failed ("" when it did not, or is under way)
    // The finished sweep of `key`, handed over once.
    std::optional<core::HeadSweep> take(const PassKey& key);

private:
    mutable std::mutex m_mutex;
    PassKey m_key;                        // guarded by m_mutex, as the four below
    std::shared_ptr<const void> m_owner;  // what the key's maps read, kept alive with its result
    bool m_stopped = false;
    std::optional<core::HeadSweep> m_done;
    std::string m_error;
    std::shared_ptr<core::Progress> m_progress;  // of the sweep under way
    BackgroundJob m_job;                         // last: stopped before the rest goes
};

// The model view's and the statistics' refresh in the window: summarizeHeads, except that a pass
// whose maps are made on demand is swept on state.headSweep, and its summary adopted in the frame
// it is ready (false until then, and while the sweep stays stopped).
bool refreshHeadSummary(AppState& state);
// The sweep for the current pass, under way, stopped or failed; null when there is none.
const HeadSweepJob* pendingHeadSweep(const AppState& state);

}  // namespace attnviz::app
