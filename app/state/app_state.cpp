#include "app/state/app_state.hpp"

#include "app/state/shown_map.hpp"
#include "app/state/source.hpp"

#include "core/base/error.hpp"
#include "core/base/files.hpp"
#include "core/models/loaded_model.hpp"

#include <algorithm>
#include <filesystem>

namespace attnviz::app {

std::vector<std::pair<std::string, std::string>> sourceInputs(const core::Scenario& scenario) {
    namespace fs = std::filesystem;
    std::vector<std::pair<std::string, std::string>> inputs;
    if (scenario.model)
        for (const std::string& file : core::modelInputFiles(*scenario.model))
            inputs.emplace_back(file, "the model's " + fs::path(file).filename().string());
    if (scenario.attention) {
        const std::string& file = *scenario.attention;
        inputs.emplace_back(file, "the imported attention");
        inputs.emplace_back(scenario.tokensFile.value_or((fs::path(file).parent_path() / "tokens.txt").string()),
                            "the tokens of the imported attention");
    }
    return inputs;
}

void writeExport(const AppState& state, const std::string& path, std::string_view bytes) {
    core::FileBatch batch;
    for (auto& [input, what] : sourceInputs(state.scenario)) batch.protect(input, std::move(what));
    batch.add(path, bytes);
    batch.commit();
}

bool shiftCheckCurrent(const AppState& state) {
    const ShiftCheck& c = state.shiftCheck;
    return c.build == state.work.modelBuilds && c.shift == state.view.shift && c.scaled == state.scenario.scaled;
}

const ShiftCheck& checkShift(AppState& state) {
    ShiftCheck& c = state.shiftCheck;
    if (shiftCheckCurrent(state)) return c;
    c = ShiftCheck{state.work.modelBuilds, state.view.shift, state.scenario.scaled, std::nullopt, ""};
    // Two forward passes: live for what a lecture shows, not for the longest sequences.
    const long long cells = static_cast<long long>(state.model.tq()) * state.model.tk() * state.model.heads;
    const core::decoder::Checkpoint* checkpoint = checkpointOf(state);
    if (capabilities(state).givenMaps) c.why = "imported attention has no positions or weights to shift; the shift applies to scenarios";
    else if (checkpoint)
        c.why = checkpoint->config().rotary ? "a model's positions are fixed by its checkpoint; the shift applies to scenarios"
                                            : "a model's positions are learned vectors added to its input; the shift applies to scenarios";
    else if (cells > (1LL << 24)) c.why = "too large to check live (T² · heads over 16.8 million)";
    else {
        try {
            core::Scenario s = state.scenario;
            s.temperature = 1.0f;
            c.report = core::checkShift(s, state.view.shift, state.limits);
        } catch (const core::InputError& e) {
            c.why = e.message();
        }
    }
    return c;
}

void deriveNextTokens(AppState& state) {
    state.nextProbs.clear();
    if (const core::LoadedModel* pass = checkpointPass(state))
        state.nextProbs = core::decoder::probabilities(pass->run->logits, pass->next, state.view.nextTemperature);
}

namespace {

// The softmax settings the scenario's edits change (SetTemperature, SetScaled, SetCausal); the
// masks only change with a new model (makeState). Cheap: called on every recompute.
void deriveSettings(AppState& state) {
    state.settings.temperature = state.scenario.temperature;
    state.settings.scaled = state.scenario.scaled;
    state.settings.causal = state.scenario.causal;
}

// What every recompute of a stale head starts with: new versions (the weights' only when they
// change), the combined output and the reference marked stale, and the projections if needed.
core::HeadTensors& startRecompute(AppState& state, int head, Stage stage) {
    ++state.dataVersion;
    if (stage >= Stage::Weights) state.headVersions[static_cast<std::size_t>(head)] = state.dataVersion;
    state.combineStale = true;
    state.equivarianceStale = true;
    core::HeadTensors& t = state.forward.heads[static_cast<std::size_t>(head)];
    if (stage >= Stage::Projections) {
        core::projectHead(state.model, head, t);
        ++state.work.projections;
    }
    return t;
}

// Brings one head's weights up to date: projections and scores when stale, then the softmax
// (with the texels pooled by `pooling` when >= 1). Leaves the head at Stage::Outputs (its A·V
// still to do) when it needed new weights.
void recomputeWeights(AppState& state, int head, int pooling = 0) {
    auto& stage = state.stale[static_cast<std::size_t>(head)];
    if (stage <= Stage::Outputs) return;
    core::HeadTensors& t = startRecompute(state, head, stage);
    if (stage >= Stage::Scores) {
        core::scoreHead(state.model, state.settings, t);
        ++state.work.scores;
    }
    if (pooling >= 1) {
        core::weighHead(state.model, state.settings, t, pooling, state.pooled.texels);
        state.pooled.head = head;
        state.pooled.version = state.headVersions[static_cast<std::size_t>(head)];
        state.pooled.factor = pooling;
    } else {
        core::weighHead(state.model, state.settings, t);
    }
    ++state.work.softmaxes;
    stage = Stage::Outputs;
}

}  // namespace

void recomputeHead(AppState& state, int head) {
    deriveSettings(state);
    auto& stage = state.stale[static_cast<std::size_t>(head)];
    if (stage == Stage::Fresh) return;
    core::HeadTensors& t = startRecompute(state, head, stage);
    if (stage >= Stage::Weights) {  // scores (when stale), softmax and A·V, block by block
        const bool newScores = stage >= Stage::Scores;
        core::attendHead(state.model, state.settings, t, newScores);
        state.work.scores += newScores;
        ++state.work.softmaxes;
        ++state.work.outputs;
    } else {  // the weights are fresh: A·V only
        core::outputHead(state.settings, t);
        ++state.work.outputs;
    }
    stage = Stage::Fresh;
}

namespace {

void finish(AppState& state) {
    if (capabilities(state).givenMaps || !capabilities(state).wholeLayer) {
        // maps given whole come without values, and a layer read from the pass is not computed
        // here: nothing to combine
        state.combineStale = false;
    } else if (state.forward.output.size() == 0 || state.combineStale) {
        core::combineHeads(state.model, state.forward);
        state.combineStale = false;
    }
    if (!state.swapped()) {  // identity order: the reference is the forward pass itself (no copy)
        if (state.equivarianceStale) {
            state.baseForward = core::Forward{};
            state.equivariance = core::EquivarianceReport{0.0f, std::vector<float>(state.forward.heads.size(), 0.0f)};
        }
    } else if (state.baseStage >= Stage::Scores) {  // a new model: everything, into the kept matrices
        core::runForward(state.baseModel, state.settings, state.baseForward);
        ++state.work.referencePasses;
    } else if (state.baseStage != Stage::Fresh) {  // a softmax setting: its scores stand
        core::reattendForward(state.baseModel, state.settings, state.baseForward);
        ++state.work.referenceSoftmaxes;
    }
    state.baseStage = Stage::Fresh;
    if (state.swapped() && state.equivarianceStale)
        state.equivariance = core::checkEquivariance(state.baseForward, state.forward, state.model.perm);
    state.equivarianceStale = false;
}

}  // namespace

void recompute(AppState& state) {
    deriveSettings(state);
    for (int h = 0; h < state.model.heads; ++h) recomputeHead(state, h);
    finish(state);
    refreshLabMaps(state);
}

namespace {

bool stepHeads(AppState& state, int visibleHead, int moreHeads, int pooling) {
    if (isFresh(state)) return true;
    // 1. What the user looks at: its weights, and nothing else in the frame that needed them,
    // so the new heatmap is drawn as soon as it can be.
    if (!weightsFresh(state, visibleHead)) {
        if (visibleHead < 0) {
            for (int h = 0; h < state.model.heads; ++h) recomputeWeights(state, h);
        } else if (visibleHead < state.model.heads) {
            recomputeWeights(state, visibleHead, pooling);
        }
        return false;
    }
    // 2. Then, a head a frame: the visible head's A·V first, then the others in order.
    if (visibleHead >= 0 && visibleHead < state.model.heads && state.stale[static_cast<std::size_t>(visibleHead)] != Stage::Fresh &&
        moreHeads > 0) {
        recomputeHead(state, visibleHead);
        --moreHeads;
    }
    for (int h = 0; h < state.model.heads && moreHeads > 0; ++h)
        if (state.stale[static_cast<std::size_t>(h)] != Stage::Fresh) {
            recomputeHead(state, h);
            --moreHeads;
        }
    const bool headsFresh = std::all_of(state.stale.begin(), state.stale.end(), [](Stage st) { return st == Stage::Fresh; });
    if (headsFresh) finish(state);
    return isFresh(state);
}

}  // namespace

bool recomputeStep(AppState& state, int visibleHead, int moreHeads, int pooling) {
    deriveSettings(state);
    const bool fresh = stepHeads(state, visibleHead, moreHeads, pooling);
    refreshLabMaps(state);                     // the shown lab's maps, once their head's weights are fresh
    refreshShownQuantile(state, visibleHead);  // Auto's top of the heatmap
    return fresh;
}

void refreshShownQuantile(AppState& state, int head) {
    PooledWeights& p = state.pooled;
    if (head < 0 || head >= state.model.heads || !weightsFresh(state, head)) return;
    const std::uint64_t version = state.headVersions[static_cast<std::size_t>(head)];
    if (p.quantileHead == head && p.quantileVersion == version) return;
    const core::Mat& weights = state.forward.heads[static_cast<std::size_t>(head)].weights;
    // Auto reads no quantile of a map of fewer cells (core::chooseScale)
    p.referenceQuantile =
        weights.size() >= static_cast<Eigen::Index>(core::kAutoClipFrom) ? core::referenceQuantile(weights, state.settings) : 0.0f;
    p.quantileHead = head, p.quantileVersion = version;
}

bool isFresh(const AppState& state) {
    return state.baseStage == Stage::Fresh && !state.equivarianceStale &&
           std::all_of(state.stale.begin(), state.stale.end(), [](Stage s) { return s == Stage::Fresh; });
}

int shownHead(const AppState& state) {
    return state.view.previewHead >= -1 && state.view.previewLayer < 0 ? state.view.previewHead : state.view.selectedHead;
}

const core::Model& referenceModel(const AppState& state) { return state.swapped() ? state.baseModel : state.model; }

const core::Forward& referenceForward(const AppState& state) { return state.swapped() ? state.baseForward : state.forward; }

bool weightsFresh(const AppState& state, int head) {
    const auto fresh = [](Stage s) { return s <= Stage::Outputs; };
    if (head < 0) return std::all_of(state.stale.begin(), state.stale.end(), fresh);
    return head < static_cast<int>(state.stale.size()) && fresh(state.stale[static_cast<std::size_t>(head)]);
}

bool headFresh(const AppState& state, int head) {
    if (head < 0) return std::all_of(state.stale.begin(), state.stale.end(), [](Stage s) { return s == Stage::Fresh; });
    return head < static_cast<int>(state.stale.size()) && state.stale[static_cast<std::size_t>(head)] == Stage::Fresh;
}

core::Mat visibleWeights(const AppState& state) {
    if (!capabilities(state).wholeLayer) return shownRows(state, state.view.selectedHead, 0, state.model.tq());  // from the pass
    if (state.view.selectedHead < 0) return core::meanWeights(state.forward, meanOptions(state));
    return state.forward.heads[static_cast<std::size_t>(state.view.selectedHead)].weights;
}

}  // namespace attnviz::app
