#include "app/views/what_if_view.hpp"

#include "app/state/head_summary.hpp"
#include "app/state/source.hpp"
#include "app/state/what_if.hpp"

#include <utility>

namespace attnviz::app {
namespace {

WhatIfMaps::Key keyOf(const AppState& state) {
    return {headSummaryKey(state).run, state.dataVersion, state.scenario.layer, state.view.selectedHead};
}

}  // namespace

bool refreshWhatIf(AppState& state) {
    if (!capabilities(state).rerun) return true;
    WhatIfView& view = state.derived.get<WhatIfView>();
    const WhatIfMaps::Key key = keyOf(state);
    if (view.current(key)) return true;
    // Every head's moved measure reads every map: kept while the pass is the same.
    std::vector<double> moved = view.key && view.key->pass == key.pass ? std::move(view.value.moved) : whatIfMoved(state);
    WhatIfMaps& made = view.remake(key);
    made.moved = std::move(moved);
    if (key.head >= 0) {
        made.diff = whatIfDifference(state, key.layer, key.head);
        made.range = made.diff.size() ? made.diff.cwiseAbs().maxCoeff() : 0.0f;
    }
    return true;
}

const WhatIfView* shownWhatIf(const AppState& state) {
    const WhatIfView* view = state.derived.find<WhatIfView>();
    return view && view->current(keyOf(state)) ? view : nullptr;
}

}  // namespace attnviz::app
