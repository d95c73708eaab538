// View actions: what the user looks at. Nothing is recomputed (a swap picked by its second
// chip goes through the scenario's SwapTokens).
#include "app/state/actions_families.hpp"

#include "app/state/compare_view.hpp"
#include "app/state/head_view.hpp"
#include "core/base/error.hpp"
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

bool applyAction(AppState& state, const action::SetSkipFirstKey& a) {
    state.view.skipFirstKey = a.value;
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

bool applyAction(AppState& state, const action::SetCompare& a) {
    if (!a.text.empty()) {
        try {
            (void)compareScenario(state.scenario, a.text);
        } catch (const core::InputError& e) {
            state.error = e.message();
            return false;
        }
    }
    state.view.compareText = a.text;
    return true;
}

bool applyAction(AppState& state, const action::SetPreviewHead& a) {
    // Another layer of a model: only the heatmap previews it (from the model's pass).
    if (const core::LoadedModel* pass = checkpointPass(state); pass && a.layer >= 0 && a.layer != state.scenario.layer) {
        const bool valid = a.layer < pass->layers() && a.head >= 0 && a.head < pass->run->headCount();
        state.view.previewLayer = valid ? a.layer : -1;
        state.view.previewHead = valid ? a.head : -2;
        return true;
    }
    state.view.previewLayer = -1;
    state.view.previewHead = a.head >= -1 && a.head < state.model.heads ? a.head : -2;
    return true;
}

bool applyAction(AppState& state, const action::HoverToken& a) {
    const Eigen::Index count = a.key ? state.model.tk() : state.model.tq();
    state.view.hoverToken = a.token >= 0 && a.token < count ? a.token : -1;
    state.view.hoverKey = state.view.hoverToken >= 0 && a.key;
    return true;
}

bool applyAction(AppState& state, const action::SetHeatmapPooling& a) {
    if (a.factor < 1) return false;
    state.view.heatmapPooling = a.factor;
    return true;
}

bool applyAction(AppState& state, const action::SetZoomRegion& a) {
    const ZoomRegion& r = a.region;
    const Eigen::Index tq = state.model.tq(), tk = state.model.tk();
    // within the map as it is now (the panel asked for it from the last frame's); rows 0: none
    ZoomRegion region;
    region.factor = std::max(1, r.factor);
    region.firstRow = std::clamp<Eigen::Index>(r.firstRow, 0, std::max<Eigen::Index>(tq - 1, 0));
    region.firstCol = std::clamp<Eigen::Index>(r.firstCol, 0, std::max<Eigen::Index>(tk - 1, 0));
    region.rows = std::clamp<Eigen::Index>(r.rows, 0, tq - region.firstRow);
    region.cols = std::clamp<Eigen::Index>(r.cols, 0, tk - region.firstCol);
    state.view.zoomRegion = region.rows > 0 && region.cols > 0 ? region : ZoomRegion{};
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

bool applyAction(AppState& state, const action::SelectCell& a) {
    const int tq = static_cast<int>(state.model.tq()), tk = static_cast<int>(state.model.tk());
    if (a.query < 0 || a.query >= tq || a.key < 0 || a.key >= tk)
        return reject(state, "cell",
                      "no cell (" + std::to_string(a.query) + ", " + std::to_string(a.key) + ") in " + std::to_string(tq) + " × " +
                          std::to_string(tk) + " weights");
    state.view.selectedQuery = a.query;
    state.view.selectedKey = a.key;
    return true;
}

bool applyAction(AppState& state, const action::ToggleViewHead& a) {
    if (a.head < 0 || a.head >= state.model.heads) return reject(state, "head view", "no head " + std::to_string(a.head + 1));
    std::vector<int> heads = headViewHeads(state);
    const auto it = std::lower_bound(heads.begin(), heads.end(), a.head);
    if (it != heads.end() && *it == a.head) {
        if (heads.size() == 1) return true;  // the last head shown stays on
        heads.erase(it);
    } else {
        heads.insert(it, a.head);
    }
    state.view.viewHeads = std::move(heads);
    return true;
}

bool applyAction(AppState& state, const action::SetViewHeads& a) {
    std::vector<int> heads = a.heads;
    for (const int h : heads)
        if (h < 0 || h >= state.model.heads) return reject(state, "head view", "no head " + std::to_string(h + 1));
    std::sort(heads.begin(), heads.end());
    heads.erase(std::unique(heads.begin(), heads.end()), heads.end());
    state.view.viewHeads = std::move(heads);
    return true;
}

bool applyAction(AppState& state, const action::PickViewToken& a) {
    if (a.query == -1 && !a.add) {
        state.view.viewTokens.clear();
        return true;
    }
    if (a.query < 0 || a.query >= static_cast<int>(state.model.tq()))
        return reject(state, "head view", "no token at position " + std::to_string(a.query));
    std::vector<int>& picked = state.view.viewTokens;
    const auto it = std::lower_bound(picked.begin(), picked.end(), a.query);
    const bool in = it != picked.end() && *it == a.query;
    if (a.add) {
        if (in) picked.erase(it);
        else picked.insert(it, a.query);
    } else {
        const bool alone = in && picked.size() == 1;
        picked.clear();
        if (!alone) picked.push_back(a.query);
    }
    if (!a.add && !picked.empty()) state.view.selectedQuery = a.query;  // the other views follow a single pick
    return true;
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
