#include "app/state/shown_map.hpp"

#include "app/state/head_summary.hpp"
#include "app/state/source.hpp"
#include "core/attention/colormap.hpp"

#include <algorithm>
#include <new>
#include <utility>

namespace attnviz::app {

void ShownMapJob::start(const ShownMapKey& key, core::AttentionMaps maps, std::shared_ptr<const void> owner) {
    stop();
    auto progress = std::make_shared<core::Progress>();
    {
        const std::lock_guard lock(m_mutex);
        m_key = key;
        m_owner = owner;
        m_done.reset();
        m_error.clear();
        m_progress = progress;
    }
    m_job.start([this, key, maps = std::move(maps), owner = std::move(owner), progress](const std::atomic<bool>&) {
        std::optional<core::PooledMap> done;
        std::string error;
        try {
            done = core::poolMap(maps, key.layer, key.head,
                                 {.factor = key.factor,
                                  .mean = {.skipFirstKey = key.skipFirstKey},
                                  .progress = progress.get(),
                                  .firstRow = key.firstRow,
                                  .rows = key.rows,
                                  .firstCol = key.firstCol,
                                  .cols = key.cols,
                                  .referenceFactor = core::scaleReferenceFactor(maps.queries, maps.keys)});
        } catch (const core::Cancelled&) {
            return;  // stopped: nothing to report
        } catch (const std::bad_alloc&) {
            error = "out of memory while reading the map from the pass";
        }
        const std::lock_guard lock(m_mutex);
        m_done = std::move(done);
        m_error = std::move(error);
    });
}

void ShownMapJob::stop() {
    std::shared_ptr<core::Progress> progress;
    {
        const std::lock_guard lock(m_mutex);
        progress = m_progress;
    }
    if (progress) progress->cancel();
    m_job.stop();
}

bool ShownMapJob::runningFor(const ShownMapKey& key) const {
    const std::lock_guard lock(m_mutex);
    return m_key == key && m_job.running();
}

double ShownMapJob::fraction() const {
    const std::lock_guard lock(m_mutex);
    return m_progress ? m_progress->fraction() : 0.0;
}

std::string ShownMapJob::errorAt(const ShownMapKey& key) const {
    if (m_job.running()) return {};
    const std::lock_guard lock(m_mutex);
    return m_key == key ? m_error : std::string();
}

std::optional<core::PooledMap> ShownMapJob::take(const ShownMapKey& key) {
    if (m_job.running()) return std::nullopt;
    const std::lock_guard lock(m_mutex);
    if (!(m_key == key) || !m_done) return std::nullopt;
    return std::exchange(m_done, std::nullopt);
}

bool previewingLayer(const AppState& state) {
    const ViewState& v = state.view;
    return capabilities(state).ownPass && v.previewLayer >= 0 && v.previewLayer != state.scenario.layer && v.previewHead >= 0;
}

ShownMapKey shownMapKey(const AppState& state, int head) {
    const Eigen::Index tq = state.model.tq(), tk = state.model.tk();
    const bool preview = previewingLayer(state);
    if (preview) head = state.view.previewHead;
    return {.pass = passKey(state),
            .layer = preview ? state.view.previewLayer : shownMapLayer(state),
            .head = head,
            .skipFirstKey = head < 0 && state.view.skipFirstKey,
            .factor = std::max({1, state.view.heatmapPooling, core::factorFor(tq, tk, kShownMapTexels)})};
}

bool shownMapFromWorker(const AppState& state) {
    if (state.view.rollout) return false;
    if (previewingLayer(state)) return onDemandMapsOwner(state) != nullptr;
    return !capabilities(state).wholeLayer;
}

std::optional<ShownMapKey> shownRegionKey(const AppState& state, int head) {
    const ZoomRegion& r = state.view.zoomRegion;
    if (r.rows <= 0 || r.cols <= 0 || previewingLayer(state) || !shownMapFromWorker(state)) return std::nullopt;
    ShownMapKey key = shownMapKey(state, head);
    if (r.factor >= key.factor) return std::nullopt;  // no finer than the whole map
    key.factor = r.factor;
    key.firstRow = r.firstRow, key.rows = r.rows, key.firstCol = r.firstCol, key.cols = r.cols;
    return key;
}

namespace {

// A map of `Slot` (ShownMap or ShownRegion) made for `key` on its job and adopted when ready;
// true when it is current.
template <class Slot>
bool refreshSlot(AppState& state, const ShownMapKey& key) {
    Slot& slot = state.derived.get<Slot>();
    if (slot.current(key)) return true;
    if (!slot.job) slot.job = std::make_shared<ShownMapJob>();
    if (std::optional<core::PooledMap> done = slot.job->take(key)) {
        slot.restart(key);
        slot.map = std::move(*done);
        return true;
    }
    if (slot.job->runningFor(key) || !slot.job->errorAt(key).empty()) return false;
    slot.job->start(key, attentionMaps(state), onDemandMapsOwner(state));
    return false;
}

}  // namespace

bool refreshShownMap(AppState& state) {
    if (!shownMapFromWorker(state)) return true;
    const int head = shownHead(state);
    if (!refreshSlot<ShownMap>(state, shownMapKey(state, head))) return false;  // coarse first
    const std::optional<ShownMapKey> region = shownRegionKey(state, head);
    if (!region) {  // none asked for: a region under way is of no use
        if (const ShownRegion* slot = state.derived.find<ShownRegion>(); slot && slot->job) slot->job->stop();
        return true;
    }
    // a region that failed (out of memory) leaves the whole map drawn, and asks for nothing more
    if (const ShownRegion* slot = state.derived.find<ShownRegion>(); slot && slot->job && !slot->job->errorAt(*region).empty()) return true;
    return refreshSlot<ShownRegion>(state, *region);
}

const ShownRegion* shownRegionOf(const AppState& state, int head) {
    const ShownRegion* region = state.derived.find<ShownRegion>();
    if (!region || !region->key || region->map.means.empty() || !region->key->sameMap(shownMapKey(state, head))) return nullptr;
    return region;
}

const ShownMap* shownMapOf(const AppState& state, int head) {
    const ShownMap* shown = state.derived.find<ShownMap>();
    if (!shown || !shown->key || shown->map.means.empty() || !shown->key->sameMap(shownMapKey(state, head))) return nullptr;
    return shown;
}

const ShownMapJob* pendingShownMap(const AppState& state) {
    const ShownMap* shown = state.derived.find<ShownMap>();
    if (!shown || !shown->job || !shownMapFromWorker(state)) return nullptr;
    const ShownMapKey key = shownMapKey(state, shownHead(state));
    if (shown->current(key)) return nullptr;
    return shown->job->runningFor(key) || !shown->job->errorAt(key).empty() ? shown->job.get() : nullptr;
}

bool shownMapRunning(const AppState& state) {
    const int head = shownHead(state);
    const ShownMap* shown = state.derived.find<ShownMap>();
    if (shown && shown->job && shown->job->runningFor(shownMapKey(state, head))) return true;
    const ShownRegion* region = state.derived.find<ShownRegion>();
    const std::optional<ShownMapKey> key = shownRegionKey(state, head);
    return region && region->job && key && region->job->runningFor(*key);
}

core::Mat shownRows(const AppState& state, int head, Eigen::Index r0, Eigen::Index n) {
    if (capabilities(state).wholeLayer) {
        if (head >= 0) return state.forward.heads[static_cast<std::size_t>(head)].weights.middleRows(r0, n);
        return core::meanWeights(state.forward, r0, n, meanOptions(state));
    }
    const core::AttentionMaps maps = attentionMaps(state);
    const int layer = shownMapLayer(state);
    core::Mat scratch;
    if (head >= 0) return maps.rowBlock(layer, head, r0, n, scratch);
    return core::meanRows(maps, layer, r0, n, {.skipFirstKey = state.view.skipFirstKey}, scratch);
}

}  // namespace attnviz::app
