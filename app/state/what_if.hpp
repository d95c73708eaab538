// A model's what-if edits as the window works with them: the list (the scenario's ablations and
// hidden tokens, in that order), their undo and redo history, and what the what-if panel shows
// of the pass after against the pass before (loaded.run against loaded.base): how far each head's
// map moved (core/attention/compare.hpp's mapMoved over the same positions) and a head's difference.
#pragma once

#include "core/models/decoder/decoder.hpp"
#include "core/scenario/scenario.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace attnviz::app {

// The edits of one scenario: what undo and redo step between.
struct WhatIfEdits {
    std::vector<core::HeadAblation> ablations;
    std::vector<int> hiddenTokens;
    bool empty() const { return ablations.empty() && hiddenTokens.empty(); }
    std::size_t size() const { return ablations.size() + hiddenTokens.size(); }
    bool operator==(const WhatIfEdits&) const = default;
};

WhatIfEdits whatIfEdits(const core::Scenario& scenario);
void setWhatIfEdits(core::Scenario& scenario, const WhatIfEdits& edits);
// Edit n of the list (ablations first, then hidden tokens) as a decoder edit.
core::decoder::Intervention whatIfEdit(const WhatIfEdits& edits, std::size_t n);
// An edit as the window's list shows it, counted from 1 as the window counts, with the command
// line's flag (counted from 0): "zero layer 4 · head 6  (--ablate 3.5)", "hide token 8 “cat”
// (--hide-token 7)".
std::string whatIfEditText(const core::decoder::Intervention& edit, const std::vector<std::string>& labels);

struct WhatIfState {
    std::vector<WhatIfEdits> undo, redo;  // the lists before each change, the latest last
};

struct AppState;
// How far each head's map moved from before to after (core::headsMoved over the same positions),
// layer-major; empty without edits. A view keeps it for its pass (it reads every map once).
std::vector<double> whatIfMoved(const AppState& state);
// The selected head's after − before map of `layer` (core::alignedDifference over the same
// positions): [T, T]; empty without edits.
core::Mat whatIfDifference(const AppState& state, int layer, int head);

}  // namespace attnviz::app
