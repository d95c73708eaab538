#include "app/state/source.hpp"

#include "core/base/error.hpp"
#include "core/base/format.hpp"
#include "core/models/decoder/decoder.hpp"
#include "core/models/pass_maps.hpp"

namespace attnviz::app {

namespace {

// The shown layer's heads fresh as they are, nothing to recompute or combine (maps given whole, or
// a layer read from the pass).
void nothingToCompute(AppState& state) {
    state.stale.assign(static_cast<std::size_t>(state.model.heads), Stage::Fresh);
    state.headVersions.assign(static_cast<std::size_t>(state.model.heads), state.dataVersion);
    state.baseStage = Stage::Fresh;
    state.equivarianceStale = false;
    state.combineStale = false;
    state.equivariance = core::EquivarianceReport{0.0f, std::vector<float>(state.forward.heads.size(), 0.0f)};
}

// A state of attention computed elsewhere: the file mapped (or the previous state's mapping
// reused), the shown layer checked and the rest checked in the background, the shown layer as a
// scenario's heads whose weights are the file's, fresh: there is nothing to recompute.
AppState importedState(const core::Scenario& scenario, const core::Limits& limits, core::Progress* progress,
                       std::shared_ptr<const core::ImportedAttention> previous) {
    AppState state;
    state.limits = limits;
    state.scenario = scenario;
    const std::string tokens = scenario.tokensFile.value_or("");
    if (previous && previous->path() == *scenario.attention && previous->options().tokensFile == tokens)
        state.imported = std::move(previous);
    else state.imported = core::ImportedAttention::open(*scenario.attention, {.tokensFile = tokens}, limits);
    core::check(progress);
    // The shown layer is checked now; every other map on a worker thread, which the views of every
    // layer wait for (attentionMaps is empty until every map passed). Queries and keys are checked
    // at once (a read of the file: its values finite), as the layer may be read from the file.
    if (state.imported->queriesAndKeys()) state.imported->checkAll(progress);
    core::ImportedLayer layer = core::importedLayer(*state.imported, scenario.layer, limits);
    state.imported->checkAllInBackground();
    state.model = std::move(layer.model);
    state.forward = std::move(layer.forward);
    state.settings = layer.settings;
    state.scenario.causal = layer.settings.causal;  // what the maps show; the recomputes take it from here
    for (const auto& t : state.model.queryTokens) state.queryLabels.push_back(core::visibleToken(t));
    for (const auto& t : state.model.keyTokens) state.keyLabels.push_back(core::visibleToken(t));
    state.work.modelBuilds += 1;
    nothingToCompute(state);
    return state;
}

// A model's sentence too long for the shown layer's heads whole: the layer is the pass's own
// (causal, τ = 1, the model's window), read from it, so the scenario may not ask for another
// softmax or order. Nothing of the layer is computed here: its heads are fresh and hold no maps.
void readLayerFromPass(AppState& state) {
    const core::Scenario& s = state.scenario;
    const auto refuse = [&](const char* field, const std::string& what) {
        throw core::InputError(field, what + ": " + readFromPassNote(state) + "; they are the model's own (" + ownSoftmaxNote(state) + ")");
    };
    if (s.temperature != 1.0f) refuse("temperature", "τ is " + core::formatNumber(s.temperature));
    if (!s.scaled) refuse("scaled", "the scores are unscaled");
    if (s.causal != state.loaded.checkpoint->config().causal) refuse("causal", s.causal ? "a causal mask is asked for" : "the mask is off");
    if (s.window > 0) refuse("window", "a window of " + std::to_string(s.window) + " keys is asked for");
    if (!s.padding.empty()) refuse("padding", "padded keys are asked for");
    if (!s.swaps.empty()) refuse("swaps", "tokens are swapped");
    nothingToCompute(state);
}

}  // namespace

std::string givenMapsName(const AppState& state) {
    if (!state.imported) return {};
    return state.imported->queriesAndKeys() ? "made from queries and keys" : "imported maps";
}

std::string givenMapsNote(const AppState& state) {
    if (!state.imported) return {};
    std::string note = " · " + givenMapsName(state);
    if (!state.imported->queriesAndKeys()) return state.settings.causal ? note + " · causal (detected)" : note;
    if (state.settings.causal) note += " · causal";
    if (state.settings.window > 0) note += " · window " + std::to_string(state.settings.window);
    if (state.imported->softcap() > 0) note += " · soft-capped at " + core::formatNumber(state.imported->softcap());
    return note;
}

std::string readFromPassNote(const AppState& state) {
    if (state.imported && !core::layerMadeWhole(*state.imported, state.limits)) {
        const core::ImportedAttention& a = *state.imported;
        const std::uint64_t bytes = core::layerMapBytes(a);
        return "at " + std::to_string(a.keys()) + " tokens this layer's " + std::to_string(a.heads()) + " maps would take " +
               core::formatBytes(bytes) +
               (bytes > state.limits.shownLayerBytes
                    ? ", more than the " + core::formatBytes(state.limits.shownLayerBytes) + " a layer is made whole within"
                    : std::string(", over --max-memory")) +
               ", so each is made from the file's queries and keys as it is read";
    }
    if (!state.loaded || state.loaded.shownWhole) return {};
    const core::decoder::Config& c = state.loaded.checkpoint->config();
    const auto t = static_cast<long long>(state.loaded.run->ids.size());
    const std::uint64_t bytes = core::shownLayerMapBytes(c, t);
    const std::string over = bytes > state.limits.shownLayerBytes
                                 ? "would take " + core::formatBytes(bytes) + ", more than the " +
                                       core::formatBytes(state.limits.shownLayerBytes) + " a layer is computed whole within"
                                 : "would pass --max-memory";
    return "at " + std::to_string(t) + " tokens this layer's " + std::to_string(c.nHead) + " heads' " + std::to_string(t) + " x " +
           std::to_string(t) + " scores and weights " + over + ", so its maps are read from the model's pass";
}

PairSegments pairSegments(const AppState& state) {
    if (!state.loaded || !state.scenario.pair) return {};
    const core::decoder::Run& run = *state.loaded.run;
    const core::ModelTokenizer& tokenizer = state.loaded.checkpoint->tokenizer();
    // A ends with its separator; RoBERTa's B starts after a second one.
    std::optional<int> sep;
    if (tokenizer.wordPiece()) sep = tokenizer.wordPiece()->sepId();
    else if (!(sep = tokenizer.bpe()->idOf("</s>"))) sep = tokenizer.bpe()->idOf("[SEP]");  // RoBERTa's, ModernBERT's
    const auto t = static_cast<Eigen::Index>(run.ids.size());
    if (!sep) return {};
    for (Eigen::Index i = 1; i + 1 < t; ++i)
        if (run.ids[static_cast<std::size_t>(i)] == *sep) {
            const bool twice = run.ids[static_cast<std::size_t>(i + 1)] == *sep && i + 2 < t;
            return {.pair = true, .aEnd = i + 1, .bStart = twice ? i + 2 : i + 1, .end = t};
        }
    return {};
}

PairBlock pairBlock(const AppState& state, PairFilter filter) {
    const auto t = static_cast<Eigen::Index>(state.queryLabels.size());
    const PairSegments s = pairSegments(state);
    if (!s.pair || filter == PairFilter::All) return {0, t, 0, t};
    const bool rowsA = filter == PairFilter::AtoA || filter == PairFilter::AtoB,
               colsA = filter == PairFilter::AtoA || filter == PairFilter::BtoA;
    return {rowsA ? 0 : s.bStart, rowsA ? s.aEnd : s.end - s.bStart, colsA ? 0 : s.bStart, colsA ? s.aEnd : s.end - s.bStart};
}

const char* pairFilterName(PairFilter filter) {
    switch (filter) {
        case PairFilter::AtoA: return "A → A";
        case PairFilter::AtoB: return "A → B";
        case PairFilter::BtoA: return "B → A";
        case PairFilter::BtoB: return "B → B";
        case PairFilter::All: break;
    }
    return "all";
}

std::string ownSoftmaxNote(const AppState& state) {
    return !state.loaded || state.loaded.checkpoint->config().causal ? "causal, τ = 1" : "both directions, τ = 1";
}

AppState makeState(const core::Scenario& scenario, const core::Limits& limits, core::Progress* progress, const AppState* previous) {
    if (scenario.attention) return importedState(scenario, limits, progress, previous ? previous->imported : nullptr);
    AppState state;
    state.limits = limits;
    state.scenario = scenario;
    state.loaded = core::loadModel(scenario, previous ? &previous->loaded : nullptr, limits, progress);
    // A model's layer is shown with the model's own mask (an encoder's reads every key) unless the
    // scenario asked for another.
    if (state.loaded && !scenario.causalGiven) state.scenario.causal = state.loaded.checkpoint->config().causal;
    state.model = core::buildModel(state.scenario, state.loaded, true, limits);
    if (state.swapped()) state.baseModel = core::buildModel(state.scenario, state.loaded, false, limits);
    state.settings = core::buildSettings(state.scenario, state.model);
    for (const auto& t : state.model.queryTokens) state.queryLabels.push_back(core::visibleToken(t));
    for (const auto& t : state.model.keyTokens) state.keyLabels.push_back(core::visibleToken(t));
    state.work.modelBuilds += 1;
    state.forward.heads.resize(static_cast<std::size_t>(state.model.heads));
    state.stale.assign(static_cast<std::size_t>(state.model.heads), Stage::Projections);
    state.headVersions.assign(static_cast<std::size_t>(state.model.heads), 0);
    state.baseStage = Stage::Projections;
    state.equivarianceStale = true;
    if (state.loaded && !state.loaded.shownWhole) readLayerFromPass(state);
    deriveNextTokens(state);
    return state;
}

Capabilities capabilities(const AppState& state) {
    if (state.imported) return {.manyLayers = true, .givenMaps = true, .wholeLayer = core::layerMadeWhole(*state.imported, state.limits)};
    if (state.loaded)
        return {.manyLayers = true,
                .weights = true,
                .rerun = true,
                .editable = true,
                .ownPass = true,
                .readsBack = state.loaded.checkpoint->config().causal,
                .wholeLayer = state.loaded.shownWhole};
    return {.weights = true, .editable = true};
}

const core::LoadedModel* checkpointPass(const AppState& state) { return state.loaded ? &state.loaded : nullptr; }

const core::decoder::Checkpoint* checkpointOf(const AppState& state) { return state.loaded ? state.loaded.checkpoint.get() : nullptr; }

const core::ImportedAttention* mapsFile(const AppState& state) { return state.imported.get(); }

int layerCount(const AppState& state) {
    if (state.loaded) return state.loaded.layers();
    return state.imported ? state.imported->layers() : 0;
}

core::AttentionMaps attentionMaps(const AppState& state) {
    if (state.loaded) return core::passMaps(state.loaded);
    if (state.imported)  // a file that changed is read no more: the views keep what they made of it before
        return state.imported->checkedAll() && !state.imported->changed() ? core::importedMaps(state.imported, state.keyLabels)
                                                                          : core::AttentionMaps{};
    if (!weightsFresh(state, -1) || state.forward.heads.empty()) return {};
    return core::forwardMaps(state.model, state.forward, state.settings, state.keyLabels);
}

bool mapsFresh(const AppState& state) { return state.loaded || weightsFresh(state, -1); }

std::shared_ptr<const void> onDemandMapsOwner(const AppState& state) {
    if (state.loaded && !state.loaded.run->keepsWeights()) return state.loaded.run;
    return nullptr;
}

PassKey passKey(const AppState& state) {
    if (state.loaded) return {state.loaded.run.get(), 0, false};
    if (state.imported) return {state.imported.get(), 0, false};
    return {nullptr, state.dataVersion, false};
}

bool mapsBeingChecked(const AppState& state) { return state.imported && state.imported->checkStatus().running; }

bool samePassInput(const AppState& a, const AppState& b) {
    return a.loaded.base && b.loaded.base && a.loaded.checkpoint == b.loaded.checkpoint && a.loaded.base->ids == b.loaded.base->ids;
}

bool groupedQuery(const AppState& state) {
    if (state.loaded) return state.loaded.checkpoint->config().nKvHead != state.loaded.checkpoint->config().nHead;
    return state.model.kvHeads > 0;
}

int kvHeadOf(const AppState& state, int head) {
    if (state.loaded) return state.loaded.checkpoint->config().kvHeadOf(head);
    return state.model.kvHeadOf(head);
}

void writeSourceJson(core::ByteSink& sink, const AppState& state, const core::RolloutExport* rollout) {
    if (state.loaded) core::writeModelExportJson(sink, state.scenario, state.loaded, rollout);
    else core::writeExportJson(sink, state.model, state.forward, rollout);
}

void exportSourceNpy(core::FileBatch& batch, const std::string& dir, const AppState& state, const core::RolloutExport* rollout,
                     const core::OneMap* one) {
    if (state.loaded) core::exportModelNpyDir(batch, dir, state.loaded, rollout, one);
    else if (state.imported) core::exportImportedNpyDir(batch, dir, *state.imported, rollout, one);
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
