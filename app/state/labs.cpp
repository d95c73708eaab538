#include "app/state/labs.hpp"

#include "app/state/source.hpp"
#include "core/base/format.hpp"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

namespace attnviz::app {

// ---- names ----------------------------------------------------------------------------------

const char* labName(Lab lab) {
    for (const LabInfo& l : kLabs)
        if (l.lab == lab) return l.name;
    return "";
}

std::optional<Lab> labFromName(const std::string& name) {
    if (name.empty()) return Lab::None;
    for (const LabInfo& l : kLabs)
        if (name == l.name) return l.lab;
    return std::nullopt;
}

std::string labNameList() {
    std::vector<std::string> names;
    names.reserve(kLabs.size());
    for (const LabInfo& l : kLabs) names.emplace_back(l.name);
    return core::joinChoices(names);
}

// ---- training -------------------------------------------------------------------------------

namespace {

const char* positionsName(core::TrainPositions p) {
    switch (p) {
        case core::TrainPositions::None: return "no positions";
        case core::TrainPositions::Learned: return "learned positions";
        case core::TrainPositions::Sinusoidal: return "sinusoidal positions";
    }
    return "";
}

// A run as it starts: its label, and the held-out loss and maps before any step.
TrainRun startingRun(const core::Trainer& trainer) {
    TrainRun run;
    run.config = trainer.config();
    const core::TrainConfig& c = run.config;
    run.label =
        c.task == core::TrainTask::TwoRelations ? std::to_string(c.heads) + (c.heads > 1 ? " heads" : " head") : positionsName(c.positions);
    run.heldOut = trainer.heldOutLoss();
    run.maps = trainer.sampleAttention();
    return run;
}

}  // namespace

std::vector<TrainRun> untrainedRuns(const core::TrainConfig& settings) {
    std::vector<TrainRun> runs;
    for (const core::TrainConfig& c : trainRuns(settings)) runs.push_back(startingRun(core::Trainer(c)));
    return runs;
}

std::vector<core::TrainConfig> trainRuns(const core::TrainConfig& settings) {
    core::TrainConfig a = settings, b = settings;
    if (settings.task == core::TrainTask::TwoRelations) {
        a.heads = 1, b.heads = 2;  // same budget: d_model 4 either way
        a.learningRate = b.learningRate = 5e-3;
    } else {
        a.positions = core::TrainPositions::None;  // Exercise 39.4: without positions, then with
        if (b.positions == core::TrainPositions::None) b.positions = core::TrainPositions::Learned;
    }
    return {a, b};
}

void TrainingJob::start(const core::TrainConfig& settings, int steps) {
    const std::vector<core::TrainConfig> configs = trainRuns(settings);
    std::vector<core::Trainer> trainers(configs.begin(), configs.end());  // throws for bad settings, here
    m_job.stop();
    {
        const std::lock_guard lock(m_mutex);
        m_runs.clear();
        for (const core::Trainer& t : trainers) m_runs.push_back(startingRun(t));
        ++m_version;
    }
    m_job.start([this, trainers = std::move(trainers), steps](const std::atomic<bool>& cancel) mutable {
        for (int s = 0; s < steps && !cancel; ++s) {
            std::vector<double> losses;
            for (core::Trainer& t : trainers) losses.push_back(t.step());
            const bool publish = s % 10 == 9 || s + 1 == steps;
            std::vector<std::vector<core::MatD>> maps;
            std::vector<double> heldOut;
            if (publish)
                for (const core::Trainer& t : trainers) maps.push_back(t.sampleAttention()), heldOut.push_back(t.heldOutLoss());
            const std::lock_guard lock(m_mutex);
            for (std::size_t r = 0; r < trainers.size(); ++r) {
                m_runs[r].losses.push_back(static_cast<float>(losses[r]));
                if (!publish) continue;
                m_runs[r].maps = maps[r];
                m_runs[r].heldOut = heldOut[r];
                m_runs[r].scenario = trainers[r].toScenario();
            }
            if (publish) ++m_version;
        }
    });
}

TrainSnapshot TrainingJob::snapshot() const {
    TrainSnapshot snap;
    snap.running = m_job.running();
    const std::lock_guard lock(m_mutex);
    snap.version = m_version;
    snap.runs = m_runs;
    return snap;
}

// ---- cost -----------------------------------------------------------------------------------

const std::vector<long long>& CostSweepJob::sweepTokens() {
    static const std::vector<long long> tokens = {16, 32, 64, 128, 256, 512, 1024, 2048, 4096};
    return tokens;
}

CostSweepJob::CostSweepJob(CostMeasure measure) : m_measure(std::move(measure)) {
    if (!m_measure)
        m_measure = [](long long tokens, int width, const std::atomic<bool>&) { return core::measureCost(tokens, width, 0.15); };
}

void CostSweepJob::start() {
    m_job.stop();
    {
        const std::lock_guard lock(m_mutex);
        m_points.clear();
    }
    m_job.start([this](const std::atomic<bool>& cancel) {
        for (long long t : sweepTokens()) {
            if (cancel) break;
            const core::CostPoint p = m_measure(t, kWidth, cancel);
            if (cancel) break;
            const std::lock_guard lock(m_mutex);
            m_points.push_back(p);
        }
    });
}

CostSnapshot CostSweepJob::snapshot() const {
    CostSnapshot snap;
    snap.running = m_job.running();
    const std::lock_guard lock(m_mutex);
    snap.points = m_points;
    return snap;
}

TrainSnapshot trainSnapshot(const AppState& state) { return state.labs.jobs->training.snapshot(); }
CostSnapshot costSnapshot(const AppState& state) { return state.labs.jobs->cost.snapshot(); }
bool labsRunning(const AppState& state) { return state.labs.jobs->training.running() || state.labs.jobs->cost.running(); }

// ---- linear attention -----------------------------------------------------------------------

std::optional<LinearInputs> linearInputs(const AppState& state) {
    const Eigen::Index T = state.model.tq();
    // maps given whole have no queries, keys or values to run linear attention on
    if (!capabilities(state).weights || T != state.model.tk() || T > kMaxLinearTokens || state.model.heads < 1) return std::nullopt;
    LinearInputs in;
    in.head = std::clamp(state.view.selectedHead, 0, state.model.heads - 1);
    in.steps = state.view.fastWeightSteps < 0 ? static_cast<int>(T) : std::min<int>(state.view.fastWeightSteps, static_cast<int>(T));
    in.query = std::clamp(state.view.selectedQuery, 0, static_cast<int>(T) - 1);
    return in;
}

const LinearMaps* linearMaps(const AppState& state) {
    const std::optional<LinearInputs> in = linearInputs(state);
    if (!in || !weightsFresh(state, in->head)) return nullptr;
    const LinearMaps& m = state.labs.linear;
    const bool current = m.head == in->head && m.version == state.headVersions[static_cast<std::size_t>(in->head)] &&
                         m.causal == state.settings.causal && m.steps == in->steps && m.query == in->query;
    return current ? &m : nullptr;
}

std::string flashWhy(const AppState& state) {
    const Eigen::Index tq = state.model.tq(), tk = state.model.tk();
    if (tq > kMaxFlashTokens || tk > kMaxFlashTokens)
        return "The walk is drawn cell by cell for up to " + std::to_string(kMaxFlashTokens) + " tokens (here " + std::to_string(tq) +
               " queries, " + std::to_string(tk) + " keys): pick a shorter sentence.";
    if (state.model.heads < 1) return "There is no head to walk.";
    if (!capabilities(state).weights) return "Imported attention has no model behind it: the walk needs the scores Q Kᵀ and the values.";
    return "";
}

const FlashMaps* flashMaps(const AppState& state) {
    if (!flashWhy(state).empty()) return nullptr;
    const int head = std::clamp(state.view.selectedHead, 0, state.model.heads - 1);
    if (!weightsFresh(state, head)) return nullptr;
    const FlashMaps& f = state.labs.flash;
    const bool current = f.head == head && f.version == state.headVersions[static_cast<std::size_t>(head)] &&
                         f.tiles.queries == state.view.flashTiles.queries && f.tiles.keys == state.view.flashTiles.keys;
    return current ? &f : nullptr;
}

namespace {

// The flash lab's walk over the selected head (the mean has none: head 1 then).
void refreshFlash(AppState& state) {
    if (!flashWhy(state).empty()) return;
    const int head = std::clamp(state.view.selectedHead, 0, state.model.heads - 1);
    if (!weightsFresh(state, head) || flashMaps(state)) return;
    FlashMaps& f = state.labs.flash;
    const core::HeadTensors& t = state.forward.heads[static_cast<std::size_t>(head)];
    f.head = head;
    f.version = state.headVersions[static_cast<std::size_t>(head)];
    f.tiles = state.view.flashTiles;
    f.walk = core::flashWalk(t, state.settings, f.tiles);
    // The materialised path's A·V is made a frame after its weights: compared with the head's
    // own when done, else with A·V of its weights here.
    core::HeadTensors reference;
    const bool outputsFresh = headFresh(state, head);
    if (!outputsFresh) {
        reference.weights = t.weights;
        reference.output = t.weights * t.v;
    }
    f.gap = core::flashGap(f.walk, outputsFresh ? t : reference);
}

}  // namespace

void refreshLabMaps(AppState& state) {
    if (state.view.lab == Lab::Flash) refreshFlash(state);
    if (state.view.lab != Lab::Linear) return;
    const std::optional<LinearInputs> in = linearInputs(state);
    if (!in || !weightsFresh(state, in->head)) return;
    LinearMaps& m = state.labs.linear;
    const std::uint64_t version = state.headVersions[static_cast<std::size_t>(in->head)];
    const core::HeadTensors& t = state.forward.heads[static_cast<std::size_t>(in->head)];
    const core::Settings& settings = state.settings;
    const bool same = m.version == version && m.head == in->head;
    // 1. the fast weights: per head and slider position
    if (!same || m.steps != in->steps) {
        m.steps = in->steps;
        m.fast = core::fastWeights(t.k, t.v, in->steps);
        m.fastRange = std::max(1e-6f, m.fast.cwiseAbs().maxCoeff());
        ++state.work.fastWeights;
    }
    // 2. one Hopfield step: probe = the query's q, stored patterns = the keys, β = 1/√d_k
    if (!same || m.query != in->query) {
        m.query = in->query;
        m.beta = 1.0f / std::sqrt(static_cast<float>(std::max(1, state.model.dk)));
        m.hopfield = core::hopfieldStep(t.k, t.q.row(in->query).transpose(), m.beta);
        m.hopfieldDiff.reset();
        if (settings.temperature == 1.0f && settings.scaled && !core::hasMask(settings))
            m.hopfieldDiff = (m.hopfield.weights.transpose() - t.weights.row(in->query)).cwiseAbs().maxCoeff();
        ++state.work.hopfieldSteps;
    }
    // 3. the linear map with the mask, and the recurrent form against the causal parallel one
    if (same && m.causal == settings.causal) return;
    m.version = version;
    m.head = in->head;
    m.causal = settings.causal;
    m.linear = core::linearAttention(t.q, t.k, t.v, settings.causal);
    const core::Mat recurrent = core::linearAttentionRecurrent(t.q, t.k, t.v);
    const core::Mat parallel = settings.causal ? m.linear.output : core::linearAttention(t.q, t.k, t.v, true).output;
    m.recurrentDiff = (recurrent - parallel).cwiseAbs().maxCoeff();
    ++state.work.linearMaps;
}

}  // namespace attnviz::app
