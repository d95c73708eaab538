#include "app/state/model_test_job.hpp"

#include "core/base/error.hpp"

#include <new>

namespace attnviz::app {

template <class Settings, class Scores>
void ModelTestJob<Settings, Scores>::start(std::shared_ptr<const core::decoder::Checkpoint> model, const Settings& settings) {
    stop();
    {
        const std::lock_guard lock(m_mutex);
        m_done = {};
        m_done.checkpoint = model.get();
    }
    auto progress = std::make_shared<core::Progress>();
    m_progress = progress;
    m_job.start([this, model = std::move(model), settings, progress](const std::atomic<bool>&) {
        std::optional<Scores> scores;
        std::string error;
        try {
            scores = m_run(*model, settings, progress.get());
        } catch (const core::Cancelled&) {
            return;  // stopped: nothing to report
        } catch (const core::InputError& e) {
            error = e.message();
        } catch (const std::bad_alloc&) {
            error = std::string(m_name) + ": out of memory";
        }
        const std::lock_guard lock(m_mutex);
        m_done.scores = std::move(scores);
        m_done.error = std::move(error);
    });
}

template <class Settings, class Scores>
void ModelTestJob<Settings, Scores>::stop() {
    if (m_progress) m_progress->cancel();
    m_job.stop();
}

template <class Settings, class Scores>
typename ModelTestJob<Settings, Scores>::Snapshot ModelTestJob<Settings, Scores>::snapshot() const {
    Snapshot snap;
    {
        const std::lock_guard lock(m_mutex);
        snap = m_done;
    }
    snap.running = m_job.running();
    snap.fraction = snap.running && m_progress ? m_progress->fraction() : 0.0;
    return snap;
}

template <class Settings, class Scores>
const Scores* ModelTestJob<Settings, Scores>::scoresOf(const Snapshot& snapshot, const void* checkpoint) {
    if (!snapshot.scores || snapshot.checkpoint == nullptr || snapshot.checkpoint != checkpoint) return nullptr;
    return &*snapshot.scores;
}

template class ModelTestJob<core::InductionSettings, std::vector<double>>;
template class ModelTestJob<core::RetrievalSettings, core::RetrievalScores>;

}  // namespace attnviz::app
