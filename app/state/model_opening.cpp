#include "app/state/model_opening.hpp"

#include "app/state/app_state.hpp"
#include "core/base/error.hpp"
#include "core/models/loaded_model.hpp"

#include <new>
#include <utility>

namespace attnviz::app {

ModelOpening::ModelOpening() = default;
ModelOpening::~ModelOpening() { cancel(); }

void ModelOpening::start(OpeningRequest request) {
    cancel();
    m_name = request.scenario.model ? core::modelFolderName(*request.scenario.model) : std::string();
    m_progress = std::make_shared<core::Progress>();
    m_active = true;
    m_thread = std::thread([this, request = std::move(request), progress = m_progress]() mutable {
        OpenedModel done;
        try {
            // Nothing is shared with the state on screen: the checkpoint is opened afresh.
            done.state = std::make_unique<AppState>(makeState(request.scenario, request.limits, progress.get()));
        } catch (const core::Cancelled&) {
            return;
        } catch (const core::InputError& e) {
            // named within the scenario file, as the command line names it
            done.error = (request.path.empty() ? e : e.within(request.path)).message();
        } catch (const std::bad_alloc&) {
            done.error = "out of memory while opening the model; the previous one is kept";
        }
        done.request = std::move(request);
        const std::lock_guard lock(m_mutex);
        m_done = std::move(done);
    });
}

void ModelOpening::cancel() {
    if (m_progress) m_progress->cancel();
    if (m_thread.joinable()) m_thread.join();
    const std::lock_guard lock(m_mutex);
    m_done.reset();
    m_progress.reset();
    m_name.clear();
    m_active = false;
}

std::optional<OpenedModel> ModelOpening::take() {
    std::optional<OpenedModel> done;
    {
        const std::lock_guard lock(m_mutex);
        done = std::exchange(m_done, std::nullopt);
    }
    if (!done) return done;
    if (m_thread.joinable()) m_thread.join();  // it has published: it is returning
    m_progress.reset();
    m_name.clear();
    m_active = false;
    return done;
}

void ModelOpening::wait() {
    if (m_thread.joinable()) m_thread.join();
}

}  // namespace attnviz::app
