#include "app/state/induction_job.hpp"

#include "core/base/error.hpp"

#include <new>

namespace attnviz::app {

void InductionJob::start(std::shared_ptr<const core::decoder::Checkpoint> model, const core::InductionSettings& settings) {
    stop();
    {
        const std::lock_guard lock(m_mutex);
        m_done = {};
        m_done.checkpoint = model.get();
    }
    auto progress = std::make_shared<core::Progress>();
    m_progress = progress;
    m_job.start([this, model = std::move(model), settings, progress](const std::atomic<bool>&) {
        std::optional<std::vector<double>> scores;
        std::string error;
        try {
            scores = core::inductionScores(*model, settings, progress.get());
        } catch (const core::Cancelled&) {
            return;  // stopped: nothing to report
        } catch (const core::InputError& e) {
            error = e.message();
        } catch (const std::bad_alloc&) {
            error = "induction test: out of memory";
        }
        const std::lock_guard lock(m_mutex);
        m_done.scores = std::move(scores);
        m_done.error = std::move(error);
    });
}

void InductionJob::stop() {
    if (m_progress) m_progress->cancel();
    m_job.stop();
}

InductionSnapshot InductionJob::snapshot() const {
    InductionSnapshot snap;
    {
        const std::lock_guard lock(m_mutex);
        snap = m_done;
    }
    snap.running = m_job.running();
    snap.fraction = snap.running && m_progress ? m_progress->fraction() : 0.0;
    return snap;
}

const std::vector<double>* inductionTestScores(const InductionSnapshot& snapshot, const void* checkpoint) {
    if (!snapshot.scores || snapshot.checkpoint == nullptr || snapshot.checkpoint != checkpoint) return nullptr;
    return &*snapshot.scores;
}

}  // namespace attnviz::app
