#include "app/state/head_summary.hpp"

#include <algorithm>
#include <new>
#include <utility>

namespace attnviz::app {

int shownMapLayer(const AppState& state) { return layerCount(state) > 0 ? state.scenario.layer : 0; }

PassKey headSummaryKey(const AppState& state) {
    PassKey key = passKey(state);
    key.skipFirstKey = state.view.skipFirstKey;
    key.firstTokens = state.view.firstTokens;
    return key;
}

bool headSummaryCurrent(const AppState& state) { return state.headSummary.current(headSummaryKey(state)); }

namespace {

// The thumbnails' pooling factor for maps of that many queries and keys.
int thumbnailFactor(const core::AttentionMaps& maps) { return core::thumbnailFactor(maps.queries, maps.keys); }

core::HeadSweepOptions sweepOptions(const AppState& state, const core::AttentionMaps& maps) {
    return {.stats = {.skipFirstKey = state.view.skipFirstKey, .firstTokens = state.view.firstTokens},
            .everyKey = state.view.skipFirstKey,
            .factor = thumbnailFactor(maps),
            .profiles = true};
}

// The summary of `maps` from their sweep, for the pass `key` is of.
HeadSummary summaryOf(const core::AttentionMaps& maps, core::HeadSweep sweep, const PassKey& key, std::uint64_t version) {
    HeadSummary s;
    s.version = version;
    s.restart(key);
    s.layers = maps.layers;
    s.heads = maps.heads;
    s.firstLayer = maps.firstLayer;
    s.queries = maps.queries;
    s.keys = maps.keys;
    s.factor = thumbnailFactor(maps);
    s.stats = std::move(sweep.stats);
    s.everyKey = std::move(sweep.everyKey);
    s.side = sweep.side;
    s.sideKeys = sweep.sideKeys;
    s.means = std::move(sweep.means);
    s.maxima = std::move(sweep.maxima);
    s.bins = std::move(sweep.bins);
    s.profiles = std::move(sweep.profiles);
    for (const float v : s.means)
        if (!core::isMaskedTexel(v)) s.largestMean = std::max(s.largestMean, v);
    for (const float v : s.maxima)
        if (!core::isMaskedTexel(v)) s.largestMax = std::max(s.largestMax, v);
    return s;
}

}  // namespace

bool summarizeHeads(AppState& state) {
    if (headSummaryCurrent(state)) return true;
    const core::AttentionMaps maps = attentionMaps(state);
    if (!maps) return false;
    core::HeadSweep sweep = core::sweepHeads(maps, sweepOptions(state, maps));
    if (const core::ImportedAttention* file = mapsFile(state); file && file->changed())
        return false;  // read partly as zeros: the last summary stays
    state.headSummary = summaryOf(maps, std::move(sweep), headSummaryKey(state), state.headSummary.version);
    return true;
}

void HeadSweepJob::start(const PassKey& key, core::AttentionMaps maps, std::shared_ptr<const void> owner,
                         const core::HeadSweepOptions& options) {
    stop();
    auto progress = std::make_shared<core::Progress>();
    {
        const std::lock_guard lock(m_mutex);
        m_key = key;
        m_owner = owner;  // held until the next sweep: the key's pass is not freed while its result waits
        m_stopped = false;
        m_done.reset();
        m_error.clear();
        m_progress = progress;
    }
    m_job.start([this, maps = std::move(maps), owner = std::move(owner), options, progress](const std::atomic<bool>&) {
        core::HeadSweepOptions counted = options;
        counted.progress = progress.get();
        std::optional<core::HeadSweep> done;
        std::string error;
        try {
            done = core::sweepHeads(maps, counted);
        } catch (const core::Cancelled&) {
            return;  // stopped: nothing to report
        } catch (const std::bad_alloc&) {
            error = "out of memory while summarizing every head";
        }
        const std::lock_guard lock(m_mutex);
        m_done = std::move(done);
        m_error = std::move(error);
    });
}

void HeadSweepJob::stop() {
    std::shared_ptr<core::Progress> progress;
    {
        const std::lock_guard lock(m_mutex);
        progress = m_progress;
        if (m_job.running()) m_stopped = true;
    }
    if (progress) progress->cancel();
    m_job.stop();
}

void HeadSweepJob::resume() {
    const std::lock_guard lock(m_mutex);
    m_stopped = false;
}

bool HeadSweepJob::isFor(const PassKey& key) const {
    const std::lock_guard lock(m_mutex);
    return m_key == key;
}

bool HeadSweepJob::runningFor(const PassKey& key) const {
    const std::lock_guard lock(m_mutex);
    return m_key == key && m_job.running();
}

bool HeadSweepJob::stoppedAt(const PassKey& key) const {
    const std::lock_guard lock(m_mutex);
    return m_key == key && m_stopped;
}

double HeadSweepJob::fraction() const {
    const std::lock_guard lock(m_mutex);
    return m_progress ? m_progress->fraction() : 0.0;
}

std::string HeadSweepJob::errorAt(const PassKey& key) const {
    if (m_job.running()) return {};
    const std::lock_guard lock(m_mutex);
    return m_key == key ? m_error : std::string();
}

std::optional<core::HeadSweep> HeadSweepJob::take(const PassKey& key) {
    if (m_job.running()) return std::nullopt;
    const std::lock_guard lock(m_mutex);
    if (!(m_key == key) || !m_done) return std::nullopt;
    return std::exchange(m_done, std::nullopt);
}

bool refreshHeadSummary(AppState& state) {
    // A sweep of another pass (or another rule) is of no use: stopped, and what it holds let go.
    if (state.headSweep && !state.headSweep->isFor(headSummaryKey(state))) state.headSweep.reset();
    if (headSummaryCurrent(state)) return true;
    std::shared_ptr<const void> owner = onDemandMapsOwner(state);
    if (!owner) return summarizeHeads(state);  // kept maps: read in place, at once
    if (!state.headSweep) state.headSweep = std::make_shared<HeadSweepJob>();
    HeadSweepJob& job = *state.headSweep;
    const PassKey key = headSummaryKey(state);
    const core::AttentionMaps maps = attentionMaps(state);
    if (std::optional<core::HeadSweep> done = job.take(key)) {
        state.headSummary = summaryOf(maps, std::move(*done), key, state.headSummary.version);
        return true;
    }
    if (job.runningFor(key) || job.stoppedAt(key) || !job.errorAt(key).empty()) return false;
    job.start(key, maps, std::move(owner), sweepOptions(state, maps));
    return false;
}

const HeadSweepJob* pendingHeadSweep(const AppState& state) {
    if (!state.headSweep || headSummaryCurrent(state)) return nullptr;
    const PassKey key = headSummaryKey(state);
    const HeadSweepJob& job = *state.headSweep;
    return job.runningFor(key) || job.stoppedAt(key) || !job.errorAt(key).empty() ? &job : nullptr;
}

}  // namespace attnviz::app
