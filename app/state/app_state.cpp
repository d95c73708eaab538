#include "app/state/app_state.hpp"

#include <algorithm>

namespace attnviz::app {

AppState makeState(const core::Scenario& scenario, const core::Limits& limits) {
    AppState state;
    state.limits = limits;
    state.scenario = scenario;
    state.model = core::buildModel(scenario, true, limits);
    state.baseModel = core::buildModel(scenario, false, limits);
    state.settings = core::buildSettings(scenario, state.model);
    for (const auto& t : state.model.queryTokens) state.queryLabels.push_back(core::visibleToken(t));
    for (const auto& t : state.model.keyTokens) state.keyLabels.push_back(core::visibleToken(t));
    state.work.modelBuilds += 1;
    state.forward.heads.resize(static_cast<std::size_t>(state.model.heads));
    state.stale.assign(static_cast<std::size_t>(state.model.heads), Stage::Projections);
    state.baseStale = true;
    return state;
}

void recomputeHead(AppState& state, int head) {
    auto& stage = state.stale[static_cast<std::size_t>(head)];
    if (stage != Stage::Fresh) ++state.dataVersion;
    core::HeadTensors& t = state.forward.heads[static_cast<std::size_t>(head)];
    if (stage >= Stage::Projections) {
        core::projectHead(state.model, head, t);
        ++state.work.projections;
    }
    if (stage >= Stage::Scores) {
        core::scoreHead(t);
        ++state.work.scores;
    }
    if (stage >= Stage::Weights) {
        core::weighHead(state.model, state.settings, t);
        ++state.work.softmaxes;
    }
    if (stage >= Stage::Outputs) {
        core::outputHead(t);
        ++state.work.outputs;
    }
    stage = Stage::Fresh;
}

void recompute(AppState& state) {
    if (!isFresh(state)) ++state.dataVersion;
    bool combine = false;
    for (int h = 0; h < state.model.heads; ++h) {
        if (state.stale[static_cast<std::size_t>(h)] != Stage::Fresh) combine = true;
        recomputeHead(state, h);
    }
    if (combine || state.forward.output.size() == 0) core::combineHeads(state.model, state.forward);
    if (state.baseStale) {
        if (state.swapped()) {
            state.baseForward = core::runForward(state.baseModel, state.settings);
            state.equivariance = core::checkEquivariance(state.baseForward, state.forward, state.model.perm);
        } else {
            state.baseForward = state.forward;
            state.equivariance = core::checkEquivariance(state.forward, state.forward, state.model.perm);
        }
        state.baseStale = false;
    }
}

bool isFresh(const AppState& state) {
    return !state.baseStale &&
           std::all_of(state.stale.begin(), state.stale.end(), [](Stage s) { return s == Stage::Fresh; });
}

core::Mat visibleWeights(const AppState& state) {
    if (state.view.selectedHead < 0) return core::meanWeights(state.forward);
    return state.forward.heads[static_cast<std::size_t>(state.view.selectedHead)].weights;
}

}  // namespace attnviz::app
