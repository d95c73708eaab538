// The shown layer's map when it is read from a model's pass (a sentence too long for its heads
// whole: Capabilities::wholeLayer false): the heatmap's pooled map of one head or the mean, made
// on a worker thread (seconds at tens of thousands of tokens) while the window goes on, and the
// rows the views of one query read, made at once.
#pragma once

#include "app/state/app_state.hpp"
#include "app/state/background_job.hpp"
#include "core/attention/attention_maps.hpp"
#include "core/base/progress.hpp"

#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace attnviz::app {

// The most texels the heatmap's pooled map has a side (a texture the screen never needs larger).
inline constexpr Eigen::Index kShownMapTexels = 4096;

struct ShownMapKey {
    PassKey pass;
    int layer = 0, head = 0;    // head −1: the mean over the layer's heads
    bool skipFirstKey = false;  // how the mean reads each head
    int factor = 1;             // cells per texel side
    // the cells pooled: the whole map, or a zoomed region of it (ZoomRegion; rows −1: to the end)
    Eigen::Index firstRow = 0, rows = -1, firstCol = 0, cols = -1;
    bool operator==(const ShownMapKey&) const = default;
    // The same map, at another pooling.
    bool sameMap(const ShownMapKey& other) const {
        return pass == other.pass && layer == other.layer && head == other.head && skipFirstKey == other.skipFirstKey;
    }
};

// The map pooled on a worker: start() stops the one under way; take() hands a finished one over.
class ShownMapJob {
public:
    ShownMapJob() = default;
    ShownMapJob(const ShownMapJob&) = delete;
    ShownMapJob& operator=(const ShownMapJob&) = delete;
    ~ShownMapJob() { stop(); }

    void start(const ShownMapKey& key, core::AttentionMaps maps, std::shared_ptr<const void> owner);
    void stop();
    bool runningFor(const ShownMapKey& key) const;
    double fraction() const;
    std::string errorAt(const ShownMapKey& key) const;
    std::optional<core::PooledMap> take(const ShownMapKey& key);

private:
    mutable std::mutex m_mutex;
    ShownMapKey m_key;                    // guarded by m_mutex, as the four below
    std::shared_ptr<const void> m_owner;  // what the maps read, kept alive while they are read
    std::optional<core::PooledMap> m_done;
    std::string m_error;
    std::shared_ptr<core::Progress> m_progress;
    BackgroundJob m_job;  // last: stopped before the rest goes
};

// The pooled map the heatmap draws (a derived value of the state's store): the last one made, and
// the job making the next.
struct ShownMap : DerivedOf<ShownMapKey> {
    core::PooledMap map;  // empty until the first is made
    std::shared_ptr<ShownMapJob> job;
};

// The zoomed region of the same map made at a finer pooling (view.zoomRegion), on its own job
// once the whole map is current: drawn over the whole map where it lies.
struct ShownRegion : DerivedOf<ShownMapKey> {
    core::PooledMap map;  // empty until the first is made
    std::shared_ptr<ShownMapJob> job;
};

// Whether the heatmap previews another layer's head of a model's pass (the model view's tile under
// the mouse: ViewState::previewLayer).
bool previewingLayer(const AppState& state);
// The key the heatmap needs now: the shown head (or the mean), or the previewed layer's head,
// pooled by the heatmap's pooling (ViewState::heatmapPooling), at least enough for
// kShownMapTexels a side.
ShownMapKey shownMapKey(const AppState& state, int head);
// Whether the heatmap's map is made on the worker: a layer read from the pass, or another layer
// previewed when the pass makes its maps on demand (never made whole on the window's thread).
bool shownMapFromWorker(const AppState& state);
// The key of the zoomed region the heatmap asks for (view.zoomRegion), when the map is made on the
// worker and a region is asked for and finer than the whole map's pooling; else none.
std::optional<ShownMapKey> shownRegionKey(const AppState& state, int head);
// The heatmap's view refresh: such a map is made for shownMapKey on the worker and adopted in
// the frame it is ready; then the zoomed region, the same way. True when both are current (or
// not made on the worker).
bool refreshShownMap(AppState& state);
// The last map made of the same head (at any pooling), to draw while the next is made; null when
// there is none.
const ShownMap* shownMapOf(const AppState& state, int head);
// The last region made of the same map (at any region and pooling), to draw over it; null when
// there is none.
const ShownRegion* shownRegionOf(const AppState& state, int head);
// The job making the map for the current key, under way or failed; null when there is none.
const ShownMapJob* pendingShownMap(const AppState& state);
// Whether a worker is making a shown map (the window keeps waking for its progress).
bool shownMapRunning(const AppState& state);

// Rows [r0, r0 + n) of the shown head's map (head −1: the mean over heads as meanOptions reads
// them), whatever the layer is: its heads' weights, or made from the model's pass.
core::Mat shownRows(const AppState& state, int head, Eigen::Index r0, Eigen::Index n);

}  // namespace attnviz::app
