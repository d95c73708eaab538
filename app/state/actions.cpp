// apply(): the dispatch, and what the action families share. Each family is in its own file
// (see actions_families.hpp).
#include "app/state/actions.hpp"

#include "app/state/actions_families.hpp"
#include "app/state/source.hpp"
#include "core/base/error.hpp"

#include <algorithm>
#include <type_traits>

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

namespace {

// Edits of a scenario's input, sizes, weights or softmax: attention computed elsewhere is fixed.
template <class A>
constexpr bool kEditsTheMaps =
    std::is_same_v<A, action::SetSentence> || std::is_same_v<A, action::SetTokens> || std::is_same_v<A, action::SetPair> ||
    std::is_same_v<A, action::SetTokenizer> || std::is_same_v<A, action::SetDModel> || std::is_same_v<A, action::SetHeads> ||
    std::is_same_v<A, action::SetDk> || std::is_same_v<A, action::SetSeed> || std::is_same_v<A, action::SetEmbedding> ||
    std::is_same_v<A, action::SetPositional> || std::is_same_v<A, action::SetKvHeads> || std::is_same_v<A, action::SetWindow> ||
    std::is_same_v<A, action::SwapTokens> || std::is_same_v<A, action::ResetSwaps> || std::is_same_v<A, action::Shuffle> ||
    std::is_same_v<A, action::SetTemperature> || std::is_same_v<A, action::SetScaled> || std::is_same_v<A, action::SetCausal> ||
    std::is_same_v<A, action::ToggleCausal>;

// Edits of the shown layer's softmax or order: a layer read from a model's pass is its own.
template <class A>
constexpr bool kEditsTheShownLayer =
    std::is_same_v<A, action::SetWindow> || std::is_same_v<A, action::SwapTokens> || std::is_same_v<A, action::ResetSwaps> ||
    std::is_same_v<A, action::Shuffle> || std::is_same_v<A, action::SetTemperature> || std::is_same_v<A, action::SetScaled> ||
    std::is_same_v<A, action::SetCausal> || std::is_same_v<A, action::ToggleCausal>;

}  // namespace

bool apply(AppState& state, const Action& action) {
    return std::visit(
        [&](const auto& a) {
            if constexpr (kEditsTheMaps<std::decay_t<decltype(a)>>)
                if (!capabilities(state).editable) return detail::reject(state, "imported attention", kImportedMapsFixed);
            if constexpr (kEditsTheShownLayer<std::decay_t<decltype(a)>>)
                if (!capabilities(state).wholeLayer)
                    return detail::reject(
                        state, "layer " + std::to_string(state.scenario.layer),
                        readFromPassNote(state) + "; its softmax and order are the model's own (" + ownSoftmaxNote(state) + ")");
            return detail::applyAction(state, a);
        },
        action);
}

}  // namespace attnviz::app
