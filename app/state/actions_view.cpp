// View actions: what the user looks at. Nothing is recomputed (a swap picked by its second
// chip goes through the scenario's SwapTokens).
#include "app/state/actions_families.hpp"

#include "core/base/format.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace attnviz::app::detail {

bool applyAction(AppState& state, const action::SelectHead& a) {
    state.view.selectedHead = a.head;
    clampSelection(state);
    return true;
}

bool applyAction(AppState& state, const action::StepHead& a) {
    // cycles through mean (-1), 0, 1, …, heads-1
    const int n = state.model.heads + 1;
    state.view.selectedHead = ((state.view.selectedHead + 1 + a.delta) % n + n) % n - 1;
    return true;
}

bool applyAction(AppState& state, const action::SelectQuery& a) {
    state.view.selectedQuery = a.query;
    clampSelection(state);
    return true;
}

bool applyAction(AppState& state, const action::StepQuery& a) {
    state.view.selectedQuery += a.delta;
    clampSelection(state);
    return true;
}

bool applyAction(AppState& state, const action::StepStage& a) {
    state.view.stage = std::clamp(state.view.stage + a.delta, 0, kStageCount - 1);
    return true;
}

bool applyAction(AppState& state, const action::SetShift& a) {
    if (a.value < 0 || a.value > kMaxShift)
        return reject(state, "shift", "must be between 0 and " + std::to_string(kMaxShift) + ", got " + std::to_string(a.value));
    state.view.shift = a.value;
    return true;
}

bool applyAction(AppState& state, const action::SetNextTemperature& a) {
    if (!std::isfinite(a.value) || a.value <= 0.0f)
        return reject(state, "next-token temperature", "must be greater than 0, got " + core::formatNumber(a.value));
    state.view.nextTemperature = std::clamp(a.value, kMinTemperature, kMaxTemperature);
    deriveNextTokens(state);
    return true;
}

bool applyAction(AppState& state, const action::SetColormap& a) {
    state.view.colormap = a.value;
    return true;
}

bool applyAction(AppState& state, const action::SetTheme& a) {
    state.view.theme = a.value;
    return true;
}

bool applyAction(AppState& state, const action::SetUiScale& a) {
    if (!std::isfinite(a.value)) return reject(state, "UI scale", "not a number");
    state.view.uiScale = std::clamp(a.value, kMinUiScale, kMaxUiScale);
    return true;
}

bool applyAction(AppState& state, const action::SetPresenter& a) {
    state.view.presenter = a.value;
    return true;
}

bool applyAction(AppState& state, const action::SetSmallMultiples& a) {
    state.view.smallMultiples = a.value;
    return true;
}

bool applyAction(AppState& state, const action::SetColourScale& a) {
    state.view.colourScale = a.scale;
    return true;
}

bool applyAction(AppState& state, const action::SetRollout& a) {
    state.view.rollout = a.value;
    return true;
}

bool applyAction(AppState& state, const action::SetRolloutHeads& a) {
    state.view.rolloutHeads = a.heads;
    return true;
}

bool applyAction(AppState& state, const action::SetPreviewHead& a) {
    state.view.previewHead = a.head >= -1 && a.head < state.model.heads ? a.head : -2;
    return true;
}

bool applyAction(AppState& state, const action::SetHeatmapPooling& a) {
    if (a.factor < 1) return false;
    state.view.heatmapPooling = a.factor;
    return true;
}

bool applyAction(AppState& state, const action::PickSwapChip& a) {
    const int n = static_cast<int>(state.model.tq());
    if (a.position < 0 || a.position >= n) return reject(state, "swap", "no token at position " + std::to_string(a.position));
    if (state.view.pendingSwap < 0) {
        state.view.pendingSwap = a.position;
        return true;
    }
    const int first = std::exchange(state.view.pendingSwap, -1);
    if (first == a.position) return true;  // clicking a chip twice deselects it
    return applyAction(state, action::SwapTokens{first, a.position});
}

bool applyAction(AppState& state, const action::SetView& a) {
    state.view.zoom = std::isfinite(a.zoom) ? std::clamp(a.zoom, 1.0f, 512.0f) : 1.0f;
    const float half = 0.5f / state.view.zoom;
    state.view.panX = std::isfinite(a.panX) ? std::clamp(a.panX, half, 1.0f - half) : 0.5f;
    state.view.panY = std::isfinite(a.panY) ? std::clamp(a.panY, half, 1.0f - half) : 0.5f;
    return true;
}

bool applyAction(AppState& state, const action::ClearError&) {
    state.error.clear();
    return true;
}

}  // namespace attnviz::app::detail
