// What-if actions: a model's heads ablated and tokens hidden, one change at a time, each undoable.
// A change writes the scenario's edits and rebuilds the state from it (loadModel then reruns the
// pass from the first layer the change reaches, reusing the edited pass before it).
#include "app/state/actions_families.hpp"

#include <algorithm>

namespace attnviz::app::detail {
namespace {

// The what-if needs a model; `where` names the action in its message.
bool needsModel(AppState& state, const char* where) {
    if (capabilities(state).rerun) return true;
    return reject(state, where, "a what-if edits a model's pass: open a model (--model DIR or a scenario's \"model\")");
}

// Rebuilds with `edits`, recording the list before on the undo history (and forgetting the redo
// history when `fresh`); on failure nothing changes.
bool change(AppState& state, const WhatIfEdits& edits, bool fresh = true) {
    const WhatIfEdits before = whatIfEdits(state.scenario);
    if (edits == before) return true;
    std::vector<WhatIfEdits> undo = state.whatIf.undo, redo = state.whatIf.redo;
    core::Scenario next = state.scenario;
    setWhatIfEdits(next, edits);
    if (!rebuildScenario(state, next)) return false;
    undo.push_back(before);
    if (fresh) redo.clear();
    state.whatIf.undo = std::move(undo);
    state.whatIf.redo = std::move(redo);
    return true;
}

}  // namespace

bool applyAction(AppState& state, const action::AblateHead& a) {
    if (!needsModel(state, "ablate")) return false;
    const core::decoder::Config& c = checkpointOf(state)->config();
    if (a.layer < 0 || a.layer >= c.nLayer || a.head < 0 || a.head >= c.nHead)
        return reject(state, "ablate",
                      core::layerHeadText(a.layer, a.head) + " is outside this model's layers 0 … " + std::to_string(c.nLayer - 1) +
                          " and heads 0 … " + std::to_string(c.nHead - 1));
    WhatIfEdits edits = whatIfEdits(state.scenario);
    std::erase_if(edits.ablations, [&](const core::HeadAblation& e) { return e.layer == a.layer && e.head == a.head; });
    edits.ablations.push_back({a.layer, a.head, a.mean});
    // The same head ablated the same way stays where it was in the list.
    const WhatIfEdits before = whatIfEdits(state.scenario);
    if (std::find(before.ablations.begin(), before.ablations.end(), core::HeadAblation{a.layer, a.head, a.mean}) != before.ablations.end())
        return true;
    return change(state, edits);
}

bool applyAction(AppState& state, const action::HideToken& a) {
    if (!needsModel(state, "hide token")) return false;
    const auto tokens = static_cast<int>(checkpointPass(state)->base->tokens());
    if (a.token < 0 || a.token >= tokens)
        return reject(state, "hide token", std::to_string(a.token) + " is outside the sentence's tokens 0 … " + std::to_string(tokens - 1));
    WhatIfEdits edits = whatIfEdits(state.scenario);
    if (std::find(edits.hiddenTokens.begin(), edits.hiddenTokens.end(), a.token) != edits.hiddenTokens.end()) return true;
    edits.hiddenTokens.push_back(a.token);
    return change(state, edits);
}

bool applyAction(AppState& state, const action::RemoveWhatIfEdit& a) {
    WhatIfEdits edits = whatIfEdits(state.scenario);
    if (a.index < 0 || static_cast<std::size_t>(a.index) >= edits.size())
        return reject(state, "what-if", "no edit " + std::to_string(a.index) + " (" + std::to_string(edits.size()) + " in the list)");
    const auto n = static_cast<std::size_t>(a.index);
    if (n < edits.ablations.size()) edits.ablations.erase(edits.ablations.begin() + a.index);
    else edits.hiddenTokens.erase(edits.hiddenTokens.begin() + static_cast<std::ptrdiff_t>(n - edits.ablations.size()));
    return change(state, edits);
}

bool applyAction(AppState& state, const action::UndoWhatIf&) {
    if (state.whatIf.undo.empty()) return true;
    const WhatIfEdits now = whatIfEdits(state.scenario), back = state.whatIf.undo.back();
    std::vector<WhatIfEdits> undo = state.whatIf.undo, redo = state.whatIf.redo;
    core::Scenario next = state.scenario;
    setWhatIfEdits(next, back);
    if (!rebuildScenario(state, next)) return false;
    undo.pop_back();
    redo.push_back(now);
    state.whatIf.undo = std::move(undo);
    state.whatIf.redo = std::move(redo);
    return true;
}

bool applyAction(AppState& state, const action::RedoWhatIf&) {
    if (state.whatIf.redo.empty()) return true;
    const WhatIfEdits now = whatIfEdits(state.scenario), forward = state.whatIf.redo.back();
    std::vector<WhatIfEdits> undo = state.whatIf.undo, redo = state.whatIf.redo;
    core::Scenario next = state.scenario;
    setWhatIfEdits(next, forward);
    if (!rebuildScenario(state, next)) return false;
    redo.pop_back();
    undo.push_back(now);
    state.whatIf.undo = std::move(undo);
    state.whatIf.redo = std::move(redo);
    return true;
}

bool applyAction(AppState& state, const action::ClearWhatIf&) { return change(state, {}); }

}  // namespace attnviz::app::detail
