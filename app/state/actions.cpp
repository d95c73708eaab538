// apply(): the dispatch, and what the action families share. Each family is in its own file
// (see actions_families.hpp).
#include "app/state/actions.hpp"

#include "app/state/actions_families.hpp"
#include "core/base/error.hpp"

#include <algorithm>

namespace attnviz::app {

namespace detail {

void clampSelection(AppState& state) {
    state.view.selectedHead = std::clamp(state.view.selectedHead, -1, std::max(0, state.model.heads - 1));
    state.view.selectedQuery = std::clamp(state.view.selectedQuery, 0, std::max(0, static_cast<int>(state.model.tq()) - 1));
    state.view.selectedKey = std::clamp(state.view.selectedKey, 0, std::max(0, static_cast<int>(state.model.tk()) - 1));
    // The head view's picks that the model no longer has are dropped.
    const auto dropBeyond = [](std::vector<int>& picks, int n) { std::erase_if(picks, [n](int p) { return p < 0 || p >= n; }); };
    dropBeyond(state.view.viewHeads, state.model.heads);
    dropBeyond(state.view.viewTokens, static_cast<int>(state.model.tq()));
}

bool reject(AppState& state, const std::string& where, const std::string& what) {
    state.error = core::InputError(where, what).message();
    return false;
}

}  // namespace detail

bool apply(AppState& state, const Action& action) {
    return std::visit([&](const auto& a) { return detail::applyAction(state, a); }, action);
}

}  // namespace attnviz::app
