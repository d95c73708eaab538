// One task on a worker thread that can be asked to stop (long measurements, training): the
// state's lab job that owns it publishes under its own lock what the panels poll, and the UI
// thread never waits except in stop().
#pragma once

#include <atomic>
#include <functional>
#include <thread>

namespace attnviz::app {

class BackgroundJob {
public:
    BackgroundJob() = default;
    BackgroundJob(const BackgroundJob&) = delete;
    BackgroundJob& operator=(const BackgroundJob&) = delete;
    ~BackgroundJob() { stop(); }

    // Stops a running task first; `work` should return soon after `cancel` becomes true.
    void start(std::function<void(const std::atomic<bool>& cancel)> work) {
        stop();
        m_cancel = false;
        m_running = true;
        m_thread = std::thread([this, work = std::move(work)] {
            work(m_cancel);
            m_running = false;
        });
    }
    // Asks the task to stop and waits for it.
    void stop() {
        m_cancel = true;
        if (m_thread.joinable()) m_thread.join();
        m_running = false;
    }
    bool running() const { return m_running; }

private:
    std::thread m_thread;
    std::atomic<bool> m_running{false}, m_cancel{false};
};

}  // namespace attnviz::app
