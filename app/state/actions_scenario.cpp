// Scenario actions: edits of the document that is saved. A model change rebuilds the model
// (rejected with a message when it does not build, the previous state kept); a softmax change
// (temperature, scaling, mask) writes the scenario and marks the weights stale, and the next
// recompute takes the new settings from it.
#include "app/state/actions_families.hpp"
#include "app/state/head_summary.hpp"
#include "app/state/source.hpp"

#include "core/base/error.hpp"
#include "core/base/format.hpp"
#include "core/base/prng.hpp"

#include <algorithm>
#include <cmath>
#include <new>
#include <utility>

namespace attnviz::app::detail {
namespace {

// Puts `fresh`, a state built for a new scenario, in place of `state`: what the user set (the
// view, the labs, the lesson, the opening under way) carries over.
void install(AppState& state, AppState fresh) {
    fresh.view = state.view;
    deriveNextTokens(fresh);
    fresh.work = state.work;
    fresh.work.modelBuilds += 1;
    fresh.dataVersion = state.dataVersion + 1;  // versions never repeat: caches key on them
    fresh.presetId = state.presetId;
    fresh.sourcePath = state.sourcePath;
    fresh.lesson = std::move(state.lesson);
    fresh.labs.train = state.labs.train;
    fresh.labs.jobs = std::move(state.labs.jobs);  // runs and sweeps go on across models
    fresh.opening = std::move(state.opening);
    fresh.induction = std::move(state.induction);  // a test goes on across layers and sentences
    fresh.retrieval = std::move(state.retrieval);
    fresh.compare = std::move(state.compare);  // the other input's pass, kept while it still holds (refreshCompare)
    // Another layer of the same pass (the model view's click): its summary still holds.
    if (state.headSummary.current(headSummaryKey(fresh))) fresh.headSummary = std::move(state.headSummary);
    // The what-if history holds while the model reads the same tokens.
    if (samePassInput(fresh, state)) fresh.whatIf = std::move(state.whatIf);
    state = std::move(fresh);
    state.error.clear();
    clampSelection(state);
}

// Rebuilds the model from `next`; on failure the state is unchanged and the error is kept,
// named within `source` (the scenario file it came from, as the command line names it) if any.
bool rebuild(AppState& state, const core::Scenario& next, const std::string& source = "") {
    try {
        install(state, makeState(next, state.limits, nullptr, &state));
        return true;
    } catch (const core::InputError& e) {
        state.error = (source.empty() ? e : e.within(source)).message();
        return false;
    } catch (const std::bad_alloc&) {  // past the estimate (other processes, a ulimit): the old model stays
        state.error = "out of memory while building the model; the previous one is kept";
        return false;
    }
}

// Rebuilds from the current scenario as `edit` changes it.
template <class Edit>
bool rebuildWith(AppState& state, Edit&& edit) {
    core::Scenario next = state.scenario;
    edit(next);
    return rebuild(state, next);
}

// d_k follows d_model / heads when not set; when it does not divide, fall back to the floor.
void fitHeadWidth(core::Scenario& s) {
    const int dModel = s.dModel.value_or(16);
    const int heads = s.heads.value_or(1);
    s.dk.reset();
    s.dv.reset();
    if (dModel % heads != 0) s.dk = std::max(1, dModel / heads);
}

// `from`: Stage::Weights, or Stage::Scores when the change reaches the scores too.
void markSoftmaxStale(AppState& state, Stage from = Stage::Weights) {
    for (Stage& s : state.stale) s = std::max(s, from);
    state.baseStage = std::max(state.baseStage, from);
    state.equivarianceStale = true;
}

}  // namespace

bool rebuildScenario(AppState& state, const core::Scenario& next) { return rebuild(state, next); }

bool applyAction(AppState& state, const action::SetSentence& a) {
    return rebuildWith(state, [&](core::Scenario& next) {
        next.sentence = a.text;
        next.tokens.reset();
        next.x.reset();
        next.q.reset(), next.k.reset(), next.v.reset(), next.keyTokens.reset();
        next.swaps.clear();
        next.hiddenTokens.clear();  // positions of another text, as the swaps are
        next.generated.clear();     // what followed another text
    });
}

bool applyAction(AppState& state, const action::SetPair& a) {
    return rebuildWith(state, [&](core::Scenario& next) {
        if (a.text.empty()) next.pair.reset();
        else next.pair = a.text;
        next.swaps.clear();
        next.hiddenTokens.clear();  // positions of another text
        next.generated.clear();
    });
}

bool applyAction(AppState& state, const action::SetGenerated& a) {
    state.generation.left = 0;  // taking tokens back stops a generation under way
    return rebuildWith(state, [&](core::Scenario& next) { next.generated = a.ids; });
}

bool applyAction(AppState& state, const action::StartGenerating& a) {
    const core::LoadedModel* pass = checkpointPass(state);
    if (pass == nullptr) return reject(state, "generate", "needs a model (open one with --model or File → Open model folder)");
    if (!pass->checkpoint->config().causal)
        return reject(state, "generate", "an encoder reads its text in both directions and generates no tokens");
    if (pass->edited()) return reject(state, "generate", "a what-if pass is not generated from; clear the edits first");
    if (a.count < 1 || a.count > 4096) return reject(state, "generate", "expected 1 to 4096 tokens, got " + std::to_string(a.count));
    if (!a.sampling.greedy && !(a.sampling.temperature > 0.0f && std::isfinite(a.sampling.temperature)))
        return reject(state, "generate", "the temperature must be above 0");
    state.generation = {a.count, a.sampling};
    return true;
}

bool applyAction(AppState& state, const action::StopGenerating&) {
    state.generation.left = 0;
    return true;
}

bool applyAction(AppState& state, const action::SetGenerateSampled& a) {
    if (a.topK < 0) return reject(state, "generate", "top-k must be 0 (every token) or more, got " + std::to_string(a.topK));
    state.view.generateSampled = a.sampled;
    state.view.generateTopK = a.topK;
    state.view.generateSeed = a.seed;
    return true;
}

bool applyAction(AppState& state, const action::SetPairFilter& a) {
    state.view.pairFilter = a.filter;
    return true;
}

bool applyAction(AppState& state, const action::SetTokens& a) {
    return rebuildWith(state, [&](core::Scenario& next) {
        next.tokens = a.tokens;
        next.sentence.reset();
        next.x.reset();
        next.swaps.clear();
    });
}

bool applyAction(AppState& state, const action::SetTokenizer& a) {
    return rebuildWith(state, [&](core::Scenario& next) {
        next.tokenizer = a.kind;
        next.swaps.clear();
    });
}

bool applyAction(AppState& state, const action::SetDModel& a) {
    return rebuildWith(state, [&](core::Scenario& next) {
        next.dModel = a.value;
        fitHeadWidth(next);
    });
}

bool applyAction(AppState& state, const action::SetHeads& a) {
    return rebuildWith(state, [&](core::Scenario& next) {
        next.heads = a.value;
        fitHeadWidth(next);
        // Key/value heads that no longer divide the heads: one per query head again.
        if (next.kvHeads && (*next.kvHeads > a.value || a.value % *next.kvHeads != 0)) next.kvHeads.reset();
    });
}

bool applyAction(AppState& state, const action::SetKvHeads& a) {
    if (a.value < 0) return reject(state, "kv_heads", "must be at least 1, got " + std::to_string(a.value));
    return rebuildWith(state, [&](core::Scenario& next) {
        if (a.value == 0) next.kvHeads.reset();
        else next.kvHeads = a.value;
    });
}

bool applyAction(AppState& state, const action::SetWindow& a) {
    if (a.value < 0) return reject(state, "window", "must be at least 1, got " + std::to_string(a.value));
    return rebuildWith(state, [&](core::Scenario& next) { next.window = a.value; });
}

bool applyAction(AppState& state, const action::SetDk& a) {
    return rebuildWith(state, [&](core::Scenario& next) {
        next.dk = a.value;
        next.dv.reset();
    });
}

bool applyAction(AppState& state, const action::SetSeed& a) {
    return rebuildWith(state, [&](core::Scenario& next) { next.seed = a.value; });
}

bool applyAction(AppState& state, const action::SetEmbedding& a) {
    return rebuildWith(state, [&](core::Scenario& next) {
        next.embedding = a.kind;
        if (a.kind == core::EmbeddingKind::OneHot) next.dModel.reset(), next.dk.reset(), next.dv.reset();
    });
}

bool applyAction(AppState& state, const action::SetPositional& a) {
    return rebuildWith(state, [&](core::Scenario& next) { next.positional = a.kind; });
}

bool applyAction(AppState& state, const action::SelectLayer& a) {
    const int layers = layerCount(state);
    if (layers == 0) return reject(state, "layer", "only a model has layers (open one with --model or a scenario's \"model\")");
    if (a.layer < 0 || a.layer >= layers)
        return reject(state, "layer", std::to_string(a.layer) + " is outside 0 … " + std::to_string(layers - 1));
    if (a.layer == state.scenario.layer) return true;
    return rebuildWith(state, [&](core::Scenario& next) { next.layer = a.layer; });
}

bool applyAction(AppState& state, const action::StepLayer& a) {
    if (layerCount(state) == 0) return true;  // a key press without layers: nothing to step
    return applyAction(state, action::SelectLayer{std::clamp(state.scenario.layer + a.delta, 0, layerCount(state) - 1)});
}

bool applyAction(AppState& state, const action::LoadScenario& a) {
    const core::decoder::Checkpoint* checkpoint = checkpointOf(state);
    const bool opened = checkpoint && a.scenario.model && checkpoint->folder() == *a.scenario.model;
    if (a.background && a.scenario.model && !opened) {
        state.opening->start({a.scenario, a.presetId, a.path, state.limits});
        return true;
    }
    state.opening->cancel();
    const std::string preset = state.presetId, path = state.sourcePath;
    state.presetId = a.presetId;
    state.sourcePath = a.path;
    if (rebuild(state, a.scenario, a.path)) return true;
    state.presetId = preset;
    state.sourcePath = path;
    return false;
}

bool applyAction(AppState& state, const action::CancelOpening&) {
    state.opening->cancel();
    return true;
}

bool applyAction(AppState& state, const action::SwapTokens& a) {
    const int n = static_cast<int>(state.model.tq());
    if (a.a < 0 || a.b < 0 || a.a >= n || a.b >= n)
        return reject(state, "swap", "positions must be between 0 and " + std::to_string(n - 1));
    return rebuildWith(state, [&](core::Scenario& next) { next.swaps.emplace_back(a.a, a.b); });
}

bool applyAction(AppState& state, const action::ResetSwaps&) {
    return rebuildWith(state, [&](core::Scenario& next) { next.swaps.clear(); });
}

bool applyAction(AppState& state, const action::Shuffle& a) {
    return rebuildWith(state, [&](core::Scenario& next) {
        next.swaps.clear();
        core::Prng rng(a.seed);
        for (int i = static_cast<int>(state.model.tq()) - 1; i > 0; --i) {
            const int j = static_cast<int>(rng.nextU64() % static_cast<std::uint64_t>(i + 1));
            if (j != i) next.swaps.emplace_back(i, j);
        }
    });
}

bool applyAction(AppState& state, const action::SetTemperature& a) {
    if (!std::isfinite(a.value) || a.value <= 0.0f)
        return reject(state, "temperature", "must be greater than 0, got " + core::formatNumber(a.value));
    state.scenario.temperature = a.value;
    markSoftmaxStale(state);
    return true;
}

bool applyAction(AppState& state, const action::SetScaled& a) {
    state.scenario.scaled = a.value;
    // ALiBi's penalty is kept in the scores in raw-score units, which the scaling sets.
    markSoftmaxStale(state, state.model.alibiSlopes.empty() ? Stage::Weights : Stage::Scores);
    return true;
}

bool applyAction(AppState& state, const action::SetCausal& a) {
    state.scenario.causal = a.value;
    state.scenario.causalGiven = true;
    markSoftmaxStale(state);
    return true;
}

bool applyAction(AppState& state, const action::ToggleCausal&) { return applyAction(state, action::SetCausal{!state.scenario.causal}); }

}  // namespace attnviz::app::detail

namespace attnviz::app {

bool adoptOpenedModel(AppState& state) {
    std::optional<OpenedModel> done = state.opening->take();
    if (!done) return false;
    if (!done->state) {
        state.error = done->error;
        return true;
    }
    state.presetId = done->request.presetId;
    state.sourcePath = done->request.path;
    detail::install(state, std::move(*done->state));
    return true;
}

}  // namespace attnviz::app
