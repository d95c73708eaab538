// The labs' work, owned by the state: the training and cost-measuring jobs (each on its own
// worker thread, started and stopped by actions, read as snapshots), and the linear-attention
// maps derived from the visible head (recomputed lazily with the rest of the state). The lab
// panels only draw what is here.
#pragma once

#include "app/state/background_job.hpp"
#include "core/base/matrix.hpp"
#include "core/labs/cost.hpp"
#include "core/labs/flash_walk.hpp"
#include "core/labs/linear_attention.hpp"
#include "core/labs/train.hpp"
#include "core/scenario/scenario.hpp"

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace attnviz::app {

struct AppState;

// The lab panel shown in place of the bottom row (swap, stages, positional encoding).
enum class Lab : std::uint8_t { None, Linear, Cost, Train, Flash };

// The one table of lab names: `name` is what --lab and lesson files write, and the id of the
// lab's panel; `title` is what the View menu shows.
struct LabInfo {
    Lab lab;
    const char* name;
    const char* title;
};
inline constexpr std::array<LabInfo, 4> kLabs{{
    {Lab::Linear, "linear", "linear attention and fast weights"},
    {Lab::Cost, "cost", "the cost of attention"},
    {Lab::Train, "train", "heads that learn"},
    {Lab::Flash, "flash", "the flash-attention walk"},
}};
// "linear", "cost", "train", "flash"; "" for none.
const char* labName(Lab lab);
// The inverse of labName ("" is none); nullopt for any other name.
std::optional<Lab> labFromName(const std::string& name);
// "linear, cost, train or flash", for messages.
std::string labNameList();

// ---- Heads that learn (seed 000 §39.7.1, Exercise 39.4) ------------------------------------

// What the train lab is set to: the task, heads, positions and seed, and how many steps.
struct TrainSettings {
    core::TrainConfig config = twoRelations();
    int steps = 400;

    static core::TrainConfig twoRelations() {
        core::TrainConfig c;
        c.task = core::TrainTask::TwoRelations;
        return c;
    }
};

// The pair of runs `settings` compares (second = the one that opens in the app): one head
// against two on the two-relation toy, or no positions against positions otherwise.
std::vector<core::TrainConfig> trainRuns(const core::TrainConfig& settings);

struct TrainRun {
    core::TrainConfig config;
    std::vector<float> losses;     // per step, the batch's loss
    double heldOut = 0;            // after the last published step
    std::vector<core::MatD> maps;  // the heads' maps on the held-out example: [h] of [T, T]
    core::Scenario scenario;       // the trained weights, for the main view (after a published step)
    std::string label;
};

// The runs as they start, before any step: labels, held-out losses and the untrained heads' maps
// (what the lab shows before Train is pressed; a run publishes these at once). Throws
// core::InputError for settings a trainer cannot take.
std::vector<TrainRun> untrainedRuns(const core::TrainConfig& settings);

struct TrainSnapshot {
    bool running = false;
    std::uint64_t version = 0;  // changes with every published snapshot
    std::vector<TrainRun> runs;
};

// Trains the pair of runs on a worker thread, publishing every step's loss and, every ten
// steps and at the end, the maps, held-out loss and trained scenario.
class TrainingJob {
public:
    // Throws core::InputError for settings a trainer cannot take (nothing starts then).
    void start(const core::TrainConfig& settings, int steps);
    void stop() { m_job.stop(); }
    bool running() const { return m_job.running(); }
    TrainSnapshot snapshot() const;

private:
    mutable std::mutex m_mutex;
    std::vector<TrainRun> m_runs;  // guarded by m_mutex
    std::uint64_t m_version = 0;   // guarded by m_mutex
    BackgroundJob m_job;           // last: stopped before the runs go
};

// ---- The cost of attention (seed 000 §39.3) ------------------------------------------------

// One point of the sweep: T tokens at width d. `cancel` turns true when a stop is asked for; a
// point measured across it is dropped.
using CostMeasure = std::function<core::CostPoint(long long tokens, int width, const std::atomic<bool>& cancel)>;

struct CostSnapshot {
    bool running = false;
    std::vector<core::CostPoint> points;  // one a T, in sweep order, as they arrive
};

// The timing sweep, T = 16 … 4096 at d = 64 (seed 000's width), on a worker thread.
class CostSweepJob {
public:
    static constexpr int kWidth = 64;
    static const std::vector<long long>& sweepTokens();

    // Measures with core::measureCost unless given another (tests give one that does not
    // depend on the clock).
    explicit CostSweepJob(CostMeasure measure = {});
    void start();
    void stop() { m_job.stop(); }
    bool running() const { return m_job.running(); }
    CostSnapshot snapshot() const;

private:
    CostMeasure m_measure;
    mutable std::mutex m_mutex;
    std::vector<core::CostPoint> m_points;  // guarded by m_mutex
    BackgroundJob m_job;                    // last: stopped before the points go
};

// The labs' worker threads. Not movable (the threads point into it): AppState holds it
// through a pointer, so the state stays movable.
struct LabJobs {
    explicit LabJobs(CostMeasure measure = {}) : cost(std::move(measure)) {}
    TrainingJob training;
    CostSweepJob cost;
};

// ---- Linear attention, fast weights, Hopfield (seed 000 §39.4) -----------------------------

// Largest T for which the T x T linear map is computed and drawn.
inline constexpr Eigen::Index kMaxLinearTokens = 2048;

// Derived from one head's q, k, v (and, for the Hopfield check, its weights); each part is
// remade only when its own inputs change.
struct LinearMaps {
    int head = -1;
    std::uint64_t version = 0;  // headVersions[head] the maps were made from
    bool causal = false;
    core::LinearAttention linear;       // with the scenario's mask (causal or not)
    float recurrentDiff = 0;            // max |recurrent − causal parallel output|
    int steps = -1;                     // tokens written into `fast`
    core::Mat fast;                     // the fast-weight matrix S after `steps` tokens, [d_k, d_v]
    float fastRange = 0;                // max |S|, the colour scale
    int query = -1;                     // the Hopfield probe: q of this query
    float beta = 0;                     // 1/√d_k
    core::HopfieldStep hopfield;        // keys as stored patterns
    std::optional<float> hopfieldDiff;  // max |Δ| to attention row `query`; only at τ = 1, scaled, no mask
};

// What the state's lab objects hold beside the view.
// ---- The flash-attention walk (Dao et al. 2022) ---------------------------------------------

// The walk is drawn cell by cell: up to this many queries and keys.
inline constexpr Eigen::Index kMaxFlashTokens = 64;

// The walk over one head, made when the flash lab is shown and its head's weights are fresh.
struct FlashMaps {
    int head = -1;
    std::uint64_t version = 0;  // headVersions[head] it was made from
    core::FlashTiles tiles;
    core::FlashWalk walk;
    core::FlashGap gap;  // against the materialised softmax and A·V
};

struct Labs {
    TrainSettings train;
    LinearMaps linear;
    FlashMaps flash;
    std::unique_ptr<LabJobs> jobs = std::make_unique<LabJobs>();  // never null in a live state
};

// The head, fast-weight steps and probe the linear lab shows for the current view; nullopt when
// it shows no maps (a cross-attention model, or more than kMaxLinearTokens tokens).
struct LinearInputs {
    int head = 0, steps = 0, query = 0;
};
std::optional<LinearInputs> linearInputs(const AppState& state);
// The maps for the current view, or nullptr while they are not made yet (or not shown).
const LinearMaps* linearMaps(const AppState& state);
// The flash lab's walk for the current view, or nullptr while it is not made yet, or cannot be
// (flashWhy says why).
const FlashMaps* flashMaps(const AppState& state);
// "" when the current model can be walked; else why not (cross-attention, too many tokens).
std::string flashWhy(const AppState& state);
// Brings the linear lab's maps (and the flash lab's walk) when that lab is shown and its head's weights are
// fresh (recompute and recomputeStep call it).
void refreshLabMaps(AppState& state);

// Snapshots of the jobs for the panels, taken under the jobs' locks.
TrainSnapshot trainSnapshot(const AppState& state);
CostSnapshot costSnapshot(const AppState& state);
// Whether a lab's worker is training or measuring.
bool labsRunning(const AppState& state);

}  // namespace attnviz::app
