// A test of the open model's heads on sequences of its own (the induction test, the retrieval
// test) on a worker thread: the window goes on while the checkpoint reads them, shows how far it
// is, and may stop it. It never touches the user's sentence or the state's pass.
#pragma once

#include "app/state/background_job.hpp"
#include "core/base/progress.hpp"
#include "core/models/induction.hpp"
#include "core/models/retrieval.hpp"

#include <algorithm>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace attnviz::app {

template <class Scores>
struct ModelTestSnapshot {
    bool running = false;
    double fraction = 0;               // of the test's work, 0 … 1, while running
    const void* checkpoint = nullptr;  // the checkpoint the scores (or the error) are of
    std::optional<Scores> scores;      // once finished
    std::string error;                 // why it failed ("" when it did not)
};

// Settings → Scores by `run` (core::inductionScores, core::retrievalScores), named `name` in its
// one-line errors ("induction test: out of memory").
template <class Settings, class Scores>
class ModelTestJob {
public:
    using Snapshot = ModelTestSnapshot<Scores>;
    using Run = Scores (*)(const core::decoder::Checkpoint&, const Settings&, core::Progress*);

    ModelTestJob(Run run, const char* name) : m_run(run), m_name(name) {}
    ModelTestJob(const ModelTestJob&) = delete;
    ModelTestJob& operator=(const ModelTestJob&) = delete;
    ~ModelTestJob() { stop(); }

    // Stops a test under way, forgets the last result, and tests `model` (kept alive meanwhile).
    void start(std::shared_ptr<const core::decoder::Checkpoint> model, const Settings& settings);
    // Stops a test under way and waits for it; a result already made stays.
    void stop();
    bool running() const { return m_job.running(); }
    Snapshot snapshot() const;
    // The scores when the last test finished on `checkpoint` (the state's model), else null.
    static const Scores* scoresOf(const Snapshot& snapshot, const void* checkpoint);

private:
    Run m_run;
    const char* m_name;
    mutable std::mutex m_mutex;
    Snapshot m_done;                             // guarded by m_mutex (running and fraction unused)
    std::shared_ptr<core::Progress> m_progress;  // of the test under way
    BackgroundJob m_job;                         // last: stopped before the rest goes
};

using InductionJob = ModelTestJob<core::InductionSettings, std::vector<double>>;
using InductionSnapshot = InductionJob::Snapshot;
using RetrievalJob = ModelTestJob<core::RetrievalSettings, core::RetrievalScores>;
using RetrievalSnapshot = RetrievalJob::Snapshot;
extern template class ModelTestJob<core::InductionSettings, std::vector<double>>;
extern template class ModelTestJob<core::RetrievalSettings, core::RetrievalScores>;

// `s` with its repeat cut so that the BOS (where the tokenizer puts one) and both copies fit the
// model's positions: 50 tokens twice need 101 positions, a short model repeats fewer. The repeat
// may fall under 2; the caller refuses that.
inline core::InductionSettings inductionUpTo(core::InductionSettings s, const core::decoder::Checkpoint& model) {
    s.repeat = std::min(s.repeat, (model.config().nPositions - core::bosOffset(model)) / 2);
    return s;
}

// The longest input a test may run `model` on under a limit of `maxTokens`: its positions, or the limit.
inline int longestTestInput(const core::decoder::Checkpoint& model, long long maxTokens) {
    return static_cast<int>(std::min<long long>(model.config().nPositions, maxTokens));
}

// `s` with its lengths cut to `longest` (the most the model's positions and the token limit allow):
// the lengths past it dropped, or `longest` alone when none is left. For the default lengths, so
// that a short model still runs the test at its longest.
inline core::RetrievalSettings retrievalUpTo(core::RetrievalSettings s, int longest) {
    std::erase_if(s.lengths, [&](int length) { return length > longest; });
    if (s.lengths.empty()) s.lengths = {longest};
    return s;
}

// The scores of the induction test for the state's model, when the last test finished on it.
inline const std::vector<double>* inductionTestScores(const InductionSnapshot& snapshot, const void* checkpoint) {
    return InductionJob::scoresOf(snapshot, checkpoint);
}
// The retrieval test's, likewise.
inline const core::RetrievalScores* retrievalTestScores(const RetrievalSnapshot& snapshot, const void* checkpoint) {
    return RetrievalJob::scoresOf(snapshot, checkpoint);
}

}  // namespace attnviz::app
