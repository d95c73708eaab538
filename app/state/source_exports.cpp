#include "app/state/source_exports.hpp"

#include "core/models/decoder/decoder.hpp"

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

LayerValues layerValues(const AppState& state, int layer) {
    LayerValues out;
    if (state.loaded) {
        const core::decoder::Config& c = state.loaded.checkpoint->config();
        if (layer < 0 || layer >= c.nLayer) return out;
        out.values = state.loaded.run->qkv(layer).rightCols(c.kvWidth());
        out.wo = state.loaded.checkpoint->layers()[static_cast<std::size_t>(layer)].outW.widened();
        out.heads = c.nHead;
        out.kvHeads = c.nKvHead;
        out.dv = c.headDim;
        return out;
    }
    const core::Model& m = state.model;
    if (state.imported || layer != 0 || !headFresh(state, -1) || state.forward.heads.empty()) return out;
    const int kv = m.kvHeads > 0 ? m.kvHeads : m.heads;
    out.values.resize(m.tk(), static_cast<Eigen::Index>(kv) * m.dv);
    for (int g = 0; g < kv; ++g) {  // a key/value head's values, as the first query head that reads it computed them
        int h = 0;
        while (m.kvHeadOf(h) != g) ++h;
        out.values.middleCols(static_cast<Eigen::Index>(g) * m.dv, m.dv) = state.forward.heads[static_cast<std::size_t>(h)].v;
    }
    if (m.wo.rows() == static_cast<Eigen::Index>(m.heads) * m.dv) out.wo = m.wo;
    out.heads = m.heads;
    out.kvHeads = kv;
    out.dv = m.dv;
    return out;
}

}  // namespace attnviz::app
