#include "app/state/actions.hpp"

#include "core/base/error.hpp"
#include "core/base/format.hpp"
#include "core/base/prng.hpp"

#include <algorithm>
#include <cmath>
#include <new>
#include <utility>

namespace attnviz::app {
namespace {

template <class... Ts>
struct Overloaded : Ts... {
    using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

void clampSelection(AppState& state) {
    state.view.selectedHead = std::clamp(state.view.selectedHead, -1, std::max(0, state.model.heads - 1));
    state.view.selectedQuery =
        std::clamp(state.view.selectedQuery, 0, std::max(0, static_cast<int>(state.model.tq()) - 1));
}

// Rebuilds the model from `next`; on failure the state is unchanged and the error is kept.
bool rebuild(AppState& state, core::Scenario next) {
    try {
        AppState fresh = makeState(next, state.limits);
        fresh.view = state.view;
        fresh.work = state.work;
        fresh.work.modelBuilds += 1;
        fresh.dataVersion = state.dataVersion + 1;  // versions never repeat: caches key on them
        fresh.presetId = state.presetId;
        fresh.sourcePath = state.sourcePath;
        fresh.lesson = std::move(state.lesson);
        state = std::move(fresh);
        state.error.clear();
        clampSelection(state);
        return true;
    } catch (const core::InputError& e) {
        state.error = e.message();
        return false;
    } catch (const std::bad_alloc&) {  // past the estimate (other processes, a ulimit): the old model stays
        state.error = "out of memory while building the model; the previous one is kept";
        return false;
    }
}

// d_k follows d_model / heads when not set; when it does not divide, fall back to the floor.
void fitHeadWidth(core::Scenario& s) {
    const int dModel = s.dModel.value_or(16);
    const int heads = s.heads.value_or(1);
    s.dk.reset();
    s.dv.reset();
    if (dModel % heads != 0) s.dk = std::max(1, dModel / heads);
}

void markSoftmaxStale(AppState& state) {
    for (Stage& s : state.stale) s = std::max(s, Stage::Weights);
    state.baseStale = true;
}

bool reject(AppState& state, const std::string& where, const std::string& what) {
    state.error = core::InputError(where, what).message();
    return false;
}

}  // namespace

bool apply(AppState& state, const Action& action) {
    using namespace action;
    return std::visit(
        Overloaded{
            [&](const SetSentence& a) {
                core::Scenario next = state.scenario;
                next.sentence = a.text;
                next.tokens.reset();
                next.x.reset();
                next.q.reset(), next.k.reset(), next.v.reset(), next.keyTokens.reset();
                next.swaps.clear();
                return rebuild(state, next);
            },
            [&](const SetTokens& a) {
                core::Scenario next = state.scenario;
                next.tokens = a.tokens;
                next.sentence.reset();
                next.x.reset();
                next.swaps.clear();
                return rebuild(state, next);
            },
            [&](const SetTokenizer& a) {
                core::Scenario next = state.scenario;
                next.tokenizer = a.kind;
                next.swaps.clear();
                return rebuild(state, next);
            },
            [&](const SetDModel& a) {
                core::Scenario next = state.scenario;
                next.dModel = a.value;
                fitHeadWidth(next);
                return rebuild(state, next);
            },
            [&](const SetHeads& a) {
                core::Scenario next = state.scenario;
                next.heads = a.value;
                fitHeadWidth(next);
                return rebuild(state, next);
            },
            [&](const SetDk& a) {
                core::Scenario next = state.scenario;
                next.dk = a.value;
                next.dv.reset();
                return rebuild(state, next);
            },
            [&](const SetSeed& a) {
                core::Scenario next = state.scenario;
                next.seed = a.value;
                return rebuild(state, next);
            },
            [&](const SetEmbedding& a) {
                core::Scenario next = state.scenario;
                next.embedding = a.kind;
                if (a.kind == core::EmbeddingKind::OneHot) next.dModel.reset(), next.dk.reset(), next.dv.reset();
                return rebuild(state, next);
            },
            [&](const SetPositional& a) {
                core::Scenario next = state.scenario;
                next.positional = a.kind;
                return rebuild(state, next);
            },
            [&](const LoadScenario& a) {
                const std::string preset = state.presetId, path = state.sourcePath;
                state.presetId = a.presetId;
                state.sourcePath = a.path;
                if (rebuild(state, a.scenario)) return true;
                state.presetId = preset;
                state.sourcePath = path;
                return false;
            },
            [&](const SwapTokens& a) {
                const int n = static_cast<int>(state.model.tq());
                if (a.a < 0 || a.b < 0 || a.a >= n || a.b >= n)
                    return reject(state, "swap", "positions must be between 0 and " + std::to_string(n - 1));
                core::Scenario next = state.scenario;
                next.swaps.emplace_back(a.a, a.b);
                return rebuild(state, next);
            },
            [&](const ResetSwaps&) {
                core::Scenario next = state.scenario;
                next.swaps.clear();
                return rebuild(state, next);
            },
            [&](const Shuffle& a) {
                core::Scenario next = state.scenario;
                next.swaps.clear();
                core::Prng rng(a.seed);
                for (int i = static_cast<int>(state.model.tq()) - 1; i > 0; --i) {
                    const int j = static_cast<int>(rng.nextU64() % static_cast<std::uint64_t>(i + 1));
                    if (j != i) next.swaps.emplace_back(i, j);
                }
                return rebuild(state, next);
            },
            [&](const SetTemperature& a) {
                if (!std::isfinite(a.value) || a.value <= 0.0f)
                    return reject(state, "temperature", "must be greater than 0, got " + core::formatNumber(a.value));
                state.scenario.temperature = a.value;
                state.settings.temperature = a.value;
                markSoftmaxStale(state);
                return true;
            },
            [&](const SetScaled& a) {
                state.scenario.scaled = a.value;
                state.settings.scaled = a.value;
                markSoftmaxStale(state);
                return true;
            },
            [&](const SetCausal& a) {
                state.scenario.causal = a.value;
                state.settings.causal = a.value;
                markSoftmaxStale(state);
                return true;
            },
            [&](const ToggleCausal&) { return apply(state, SetCausal{!state.settings.causal}); },
            [&](const SelectHead& a) {
                state.view.selectedHead = a.head;
                clampSelection(state);
                return true;
            },
            [&](const StepHead& a) {
                // cycles through mean (-1), 0, 1, …, heads-1
                const int n = state.model.heads + 1;
                state.view.selectedHead = ((state.view.selectedHead + 1 + a.delta) % n + n) % n - 1;
                return true;
            },
            [&](const SelectQuery& a) {
                state.view.selectedQuery = a.query;
                clampSelection(state);
                return true;
            },
            [&](const StepQuery& a) {
                state.view.selectedQuery += a.delta;
                clampSelection(state);
                return true;
            },
            [&](const StepStage& a) {
                state.view.stage = std::clamp(state.view.stage + a.delta, 0, kStageCount - 1);
                return true;
            },
            [&](const SetColormap& a) {
                state.view.colormap = a.value;
                return true;
            },
            [&](const SetTheme& a) {
                state.view.theme = a.value;
                return true;
            },
            [&](const SetUiScale& a) {
                if (!std::isfinite(a.value)) return reject(state, "UI scale", "not a number");
                state.view.uiScale = std::clamp(a.value, kMinUiScale, kMaxUiScale);
                return true;
            },
            [&](const SetPresenter& a) {
                state.view.presenter = a.value;
                return true;
            },
            [&](const SetSmallMultiples& a) {
                state.view.smallMultiples = a.value;
                return true;
            },
            [&](const SetAutoRange& a) {
                state.view.autoRange = a.value;
                return true;
            },
            [&](const SetPreviewHead& a) {
                state.view.previewHead = a.head >= -1 && a.head < state.model.heads ? a.head : -2;
                return true;
            },
            [&](const PickSwapChip& a) {
                const int n = static_cast<int>(state.model.tq());
                if (a.position < 0 || a.position >= n) return reject(state, "swap", "no token at position " + std::to_string(a.position));
                if (state.view.pendingSwap < 0) {
                    state.view.pendingSwap = a.position;
                    return true;
                }
                const int first = std::exchange(state.view.pendingSwap, -1);
                if (first == a.position) return true;  // clicking a chip twice deselects it
                return apply(state, SwapTokens{first, a.position});
            },
            [&](const SetView& a) {
                state.view.zoom = std::isfinite(a.zoom) ? std::clamp(a.zoom, 1.0f, 512.0f) : 1.0f;
                const float half = 0.5f / state.view.zoom;
                state.view.panX = std::isfinite(a.panX) ? std::clamp(a.panX, half, 1.0f - half) : 0.5f;
                state.view.panY = std::isfinite(a.panY) ? std::clamp(a.panY, half, 1.0f - half) : 0.5f;
                return true;
            },
            [&](const SetLab& a) {
                state.view.lab = a.value;
                return true;
            },
            [&](const SetFastWeightSteps& a) {
                state.view.fastWeightSteps = a.steps < 0 ? -1 : std::min<int>(a.steps, static_cast<int>(state.model.tk()));
                return true;
            },
            [&](const SetMemoryWall& a) {
                const core::MemoryWall& w = a.value;
                for (auto [value, name] : {std::pair{w.batch, "batch"}, {w.heads, "heads"}, {w.layers, "layers"}})
                    if (value < 1 || value > 1000000) return reject(state, name, "expected 1 to 1000000, got " + std::to_string(value));
                if (w.tokens < 1 || w.tokens > 100000000)
                    return reject(state, "T", "expected 1 to 100000000 tokens, got " + std::to_string(w.tokens));
                if (w.bytesPerValue != 1 && w.bytesPerValue != 2 && w.bytesPerValue != 4 && w.bytesPerValue != 8)
                    return reject(state, "bytes per value", "expected 1, 2, 4 or 8, got " + std::to_string(w.bytesPerValue));
                state.view.wall = w;
                return true;
            },
            [&](const OpenLesson& a) {
                LessonState lesson{a.lesson, 0, std::nullopt};
                const std::optional<LessonState> previous = std::exchange(state.lesson, lesson);
                if (apply(state, GoToLessonStep{0})) return true;
                state.lesson = previous;  // its first step does not build: keep what was shown
                return false;
            },
            [&](const GoToLessonStep& a) {
                if (!state.lesson) return reject(state, "lesson", "no lesson is open");
                const int n = static_cast<int>(state.lesson->lesson.steps.size());
                const int step = std::clamp(a.step, 0, n - 1);
                const core::LessonStep& st = state.lesson->lesson.steps[static_cast<std::size_t>(step)];
                if (!apply(state, LoadScenario{st.scenario, st.presetId, ""})) {
                    state.error = "lesson step " + std::to_string(step + 1) + ": " + state.error;
                    return false;
                }
                state.lesson->step = step;
                state.lesson->result.reset();
                state.view.lab = labFromName(st.lab).value_or(Lab::None);  // checked when the lesson was read
                if (st.head) state.view.selectedHead = *st.head;
                clampSelection(state);
                return true;
            },
            [&](const StepLesson& a) {
                if (!state.lesson) return reject(state, "lesson", "no lesson is open");
                const int n = static_cast<int>(state.lesson->lesson.steps.size());
                const int next = std::clamp(state.lesson->step + a.delta, 0, n - 1);
                return next == state.lesson->step || apply(state, GoToLessonStep{next});
            },
            [&](const AnswerCheck& a) {
                if (!state.lesson) return reject(state, "lesson", "no lesson is open");
                const auto& step = state.lesson->lesson.steps[static_cast<std::size_t>(state.lesson->step)];
                if (!step.check) return reject(state, "lesson", "this step has no quick check");
                if (!std::isfinite(a.value)) return reject(state, "answer", "not a number");
                try {
                    const double live = liveCheckValue(state, *step.check);
                    state.lesson->result = CheckResult{a.value, live, std::abs(a.value - live) <= step.check->tolerance};
                    return true;
                } catch (const core::InputError& e) {
                    return reject(state, e.where(), e.what());
                }
            },
            [&](const CloseLesson&) {
                state.lesson.reset();
                return true;
            },
            [&](const ClearError&) {
                state.error.clear();
                return true;
            },
        },
        action);
}

double liveCheckValue(AppState& state, const core::QuickCheck& check) {
    switch (check.quantity) {
        case core::CheckQuantity::ScoreEntries: return static_cast<double>(state.model.tq() * state.model.tk());
        case core::CheckQuantity::Weight: {
            if (check.head > state.model.heads)
                throw core::InputError("check.head", "head " + std::to_string(check.head) + " of " + std::to_string(state.model.heads));
            if (check.query > state.model.tq() || check.key > state.model.tk())
                throw core::InputError("check", "α_" + std::to_string(check.query) + "," + std::to_string(check.key) + " is outside the " +
                                                    core::shapeString(state.model.tq(), state.model.tk()) + " map");
            recomputeHead(state, check.head - 1);
            return state.forward.heads[static_cast<std::size_t>(check.head - 1)].weights(check.query - 1, check.key - 1);
        }
        case core::CheckQuantity::Equivariance:
            recompute(state);
            return state.equivariance.outputDiff;
    }
    return 0.0;
}

}  // namespace attnviz::app
