// Lab actions: which lab is shown, its view (fast-weight steps, the memory wall), and its jobs:
// training and the cost sweep start and stop here, on the state's own worker threads.
#include "app/state/actions_families.hpp"

#include "core/base/error.hpp"

#include <algorithm>
#include <utility>

namespace attnviz::app::detail {
namespace {

bool checkTrainSettings(AppState& state, const TrainSettings& t) {
    if (t.steps < 1) return reject(state, "steps", "expected at least 1, got " + std::to_string(t.steps));
    return true;
}

}  // namespace

bool applyAction(AppState& state, const action::SetLab& a) {
    state.view.lab = a.value;
    return true;
}

bool applyAction(AppState& state, const action::SetFlashStep& a) {
    if (a.step < -1) return reject(state, "flash step", "must be -1 (the walk done) or more, got " + std::to_string(a.step));
    state.view.flashStep = a.step;  // past the last step is the walk done (the panel clamps)
    return true;
}

bool applyAction(AppState& state, const action::SetFlashTiles& a) {
    for (const auto& [size, name] : {std::pair{a.tiles.queries, "flash tile rows"}, {a.tiles.keys, "flash tile columns"}})
        if (size < 1 || size > kMaxFlashTokens)
            return reject(state, name, "must be between 1 and " + std::to_string(kMaxFlashTokens) + ", got " + std::to_string(size));
    state.view.flashTiles = a.tiles;
    state.view.flashStep = 0;
    refreshLabMaps(state);
    return true;
}

bool applyAction(AppState& state, const action::SetFastWeightSteps& a) {
    state.view.fastWeightSteps = a.steps < 0 ? -1 : std::min<int>(a.steps, static_cast<int>(state.model.tk()));
    return true;
}

bool applyAction(AppState& state, const action::SetKvCache& a) {
    state.view.kvCache = a.value;
    return true;
}

bool applyAction(AppState& state, const action::SetMemoryWall& a) {
    const core::MemoryWall& w = a.value;
    for (auto [value, name] : {std::pair{w.batch, "batch"}, {w.heads, "heads"}, {w.layers, "layers"}})
        if (value < 1 || value > 1000000) return reject(state, name, "expected 1 to 1000000, got " + std::to_string(value));
    if (w.tokens < 1 || w.tokens > 100000000) return reject(state, "T", "expected 1 to 100000000 tokens, got " + std::to_string(w.tokens));
    if (w.bytesPerValue != 1 && w.bytesPerValue != 2 && w.bytesPerValue != 4 && w.bytesPerValue != 8)
        return reject(state, "bytes per value", "expected 1, 2, 4 or 8, got " + std::to_string(w.bytesPerValue));
    state.view.wall = w;
    return true;
}

bool applyAction(AppState& state, const action::SetTrainSettings& a) {
    if (state.labs.jobs->training.running()) return reject(state, "training", "the settings are fixed while a run goes on");
    if (!checkTrainSettings(state, a.value)) return false;
    state.labs.train = a.value;
    return true;
}

bool applyAction(AppState& state, const action::StartTraining& a) {
    if (!checkTrainSettings(state, a.value)) return false;
    try {
        state.labs.jobs->training.start(a.value.config, a.value.steps);
    } catch (const core::InputError& e) {  // settings no trainer takes: nothing started
        return reject(state, e.where(), e.what());
    }
    state.labs.train = a.value;
    return true;
}

bool applyAction(AppState& state, const action::StopTraining&) {
    state.labs.jobs->training.stop();
    return true;
}

bool applyAction(AppState& state, const action::StartCostSweep&) {
    state.labs.jobs->cost.start();
    return true;
}

bool applyAction(AppState& state, const action::StopCostSweep&) {
    state.labs.jobs->cost.stop();
    return true;
}

}  // namespace attnviz::app::detail
