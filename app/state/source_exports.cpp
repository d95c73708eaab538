#include "app/state/source_exports.hpp"

namespace attnviz::app {

void writeSourceJson(core::ByteSink& sink, const AppState& state, const core::RolloutExport* rollout) {
    if (state.loaded) core::writeModelExportJson(sink, state.scenario, state.loaded, rollout);
    else core::writeExportJson(sink, state.model, state.forward, rollout);
}

void exportSourceNpy(core::FileBatch& batch, const std::string& dir, const AppState& state, const core::RolloutExport* rollout) {
    if (state.loaded) core::exportModelNpyDir(batch, dir, state.loaded, rollout);
    else if (state.imported) core::exportImportedNpyDir(batch, dir, *state.imported, rollout);
    else core::exportNpyDir(batch, dir, state.model, state.forward, rollout);
}

std::string sourceName(const AppState& state, const std::string& fallback) {
    if (state.loaded) return state.loaded.checkpoint->name();
    if (state.imported) return state.scenario.name;
    return state.scenario.name.empty() ? fallback : state.scenario.name;
}

void checkEveryMap(const AppState& state) {
    if (state.imported) state.imported->checkAll();
}

void checkSourceUnchanged(const AppState& state) {
    if (state.imported) state.imported->checkUnchanged();
}

const core::decoder::Checkpoint* checkpointOf(const AppState& state) { return state.loaded ? state.loaded.checkpoint.get() : nullptr; }

std::vector<int> passIds(const AppState& state) { return state.loaded ? state.loaded.run->ids : std::vector<int>{}; }

}  // namespace attnviz::app
