// Lesson actions: open a lesson at its first step, go to a step (its scenario, panels, lab
// and head), answer the step's quick check against the live numbers, close.
#include "app/state/actions_families.hpp"

#include "core/base/error.hpp"
#include "core/base/format.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace attnviz::app {
namespace detail {

bool applyAction(AppState& state, const action::OpenLesson& a) {
    LessonState lesson{a.lesson, 0, std::nullopt};
    const std::optional<LessonState> previous = std::exchange(state.lesson, lesson);
    if (applyAction(state, action::GoToLessonStep{0})) return true;
    state.lesson = previous;  // its first step does not build: keep what was shown
    return false;
}

bool applyAction(AppState& state, const action::GoToLessonStep& a) {
    if (!state.lesson) return reject(state, "lesson", "no lesson is open");
    const int n = static_cast<int>(state.lesson->lesson.steps.size());
    const int step = std::clamp(a.step, 0, n - 1);
    const core::LessonStep& st = state.lesson->lesson.steps[static_cast<std::size_t>(step)];
    if (!applyAction(state, action::LoadScenario{st.scenario, st.presetId, ""})) {
        state.error = "lesson step " + std::to_string(step + 1) + ": " + state.error;
        return false;
    }
    state.lesson->step = step;
    state.lesson->result.reset();
    state.view.lab = labFromName(st.lab).value_or(Lab::None);  // checked when the lesson was read
    if (st.head) state.view.selectedHead = *st.head;
    clampSelection(state);
    return true;
}

bool applyAction(AppState& state, const action::StepLesson& a) {
    if (!state.lesson) return reject(state, "lesson", "no lesson is open");
    const int n = static_cast<int>(state.lesson->lesson.steps.size());
    const int next = std::clamp(state.lesson->step + a.delta, 0, n - 1);
    return next == state.lesson->step || applyAction(state, action::GoToLessonStep{next});
}

bool applyAction(AppState& state, const action::AnswerCheck& a) {
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
}

bool applyAction(AppState& state, const action::CloseLesson&) {
    state.lesson.reset();
    return true;
}

}  // namespace detail

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
        case core::CheckQuantity::Equivariance: recompute(state); return state.equivariance.outputDiff;
    }
    return 0.0;
}

}  // namespace attnviz::app
