// A long task's progress and its stop request, shared by the thread doing the task and the one
// showing it (opening a checkpoint in the window).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace attnviz::core {

// Thrown where a task checks its Progress after a stop was asked for. Not an InputError: nothing
// was wrong, and nothing is reported.
struct Cancelled {};

class Progress {
public:
    // Asks the task to stop at its next check.
    void cancel() { m_cancel = true; }
    bool cancelled() const { return m_cancel; }
    // Adds `units` to the work expected (before they are done).
    void expect(std::uint64_t units) { m_total += units; }
    // Counts `units` done, then checks.
    void advance(std::uint64_t units) {
        m_done += units;
        check();
    }
    // Counts all the work expected as done (what was expected but skipped), then checks.
    void complete() {
        m_done = m_total.load();
        check();
    }
    // Throws Cancelled once cancel() was called.
    void check() const {
        if (m_cancel) throw Cancelled{};
    }
    // The part done, 0 … 1 (0 while nothing is expected).
    double fraction() const {
        const std::uint64_t total = m_total, done = m_done;
        return total == 0 ? 0.0 : std::min(1.0, static_cast<double>(done) / static_cast<double>(total));
    }

private:
    std::atomic<bool> m_cancel{false};
    std::atomic<std::uint64_t> m_done{0}, m_total{0};
};

// The same through a pointer that may be null (no one watching: nothing is counted).
inline void expect(Progress* p, std::uint64_t units) {
    if (p) p->expect(units);
}
inline void advance(Progress* p, std::uint64_t units) {
    if (p) p->advance(units);
}
inline void complete(Progress* p) {
    if (p) p->complete();
}
inline void check(const Progress* p) {
    if (p) p->check();
}

}  // namespace attnviz::core
