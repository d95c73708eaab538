// Opening a model folder without stopping the window: the checkpoint is read, checked and packed
// and the sentence run on a worker thread, into a whole new state, while the window goes on
// showing the state before, with the progress. The app adopts the new state once it is ready
// (adoptOpenedModel in actions.hpp). A second opening, or a cancel, stops the first.
#pragma once

#include "core/base/progress.hpp"
#include "core/scenario/model.hpp"
#include "core/scenario/scenario.hpp"

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace attnviz::app {

struct AppState;

// What LoadScenario asked for: a scenario naming a model folder, and where it came from (`path`:
// the scenario file, which an error is named within; "" for a folder opened as such).
struct OpeningRequest {
    core::Scenario scenario;
    std::string presetId, path;
    core::Limits limits;
};

// A finished opening: the state built, or why it was not.
struct OpenedModel {
    OpeningRequest request;
    std::unique_ptr<AppState> state;  // null when it failed
    std::string error;
};

class ModelOpening {
public:
    ModelOpening();
    ModelOpening(const ModelOpening&) = delete;
    ModelOpening& operator=(const ModelOpening&) = delete;
    ~ModelOpening();

    // Stops an opening under way (its result is dropped), then starts this one.
    void start(OpeningRequest request);
    // Stops an opening under way and waits for its thread; its result is dropped.
    void cancel();
    // True from start until the result is taken or the opening cancelled.
    bool active() const { return m_active; }
    // The model being opened ("" when none), and how far it is: 0 … 1.
    const std::string& name() const { return m_name; }
    double fraction() const { return m_progress ? m_progress->fraction() : 0.0; }
    // The finished opening, once; nullopt while none is finished.
    std::optional<OpenedModel> take();
    // Blocks until the opening under way has finished (tests, and a command line that needs the
    // result before going on).
    void wait();

private:
    mutable std::mutex m_mutex;
    std::optional<OpenedModel> m_done;  // guarded by m_mutex
    std::shared_ptr<core::Progress> m_progress;
    std::string m_name;
    bool m_active = false;
    std::thread m_thread;  // last: joined before the rest goes
};

}  // namespace attnviz::app
