// What the what-if view shows of a model's pass after its edits against the pass before, made in
// the state once per pass, layer and head (never per frame, never in the panel): how far every
// head's map moved (read once per pass: every map), and the shown head's after − before.
#pragma once

#include "app/state/app_state.hpp"
#include "app/state/derived.hpp"

#include <cstdint>
#include <vector>

namespace attnviz::app {

struct WhatIfMaps {
    struct Key {
        const void* pass = nullptr;  // the pass after the edits (headSummaryKey's run)
        std::uint64_t data = 0;      // the state's dataVersion
        int layer = 0, head = 0;
        bool operator==(const Key&) const = default;
    };
    std::vector<double> moved;  // [layers × heads] layer-major: whatIfMoved (empty without edits)
    core::Mat diff;             // the shown head's after − before (empty for the mean, or without edits)
    float range = 0;            // its largest |change|
};
using WhatIfView = Derived<WhatIfMaps::Key, WhatIfMaps>;

// The what-if row's refresh: makes what is not current (the moved measures only for a new pass).
bool refreshWhatIf(AppState& state);
// The view's data when current; else null.
const WhatIfView* shownWhatIf(const AppState& state);

}  // namespace attnviz::app
