#include "app/state/rollout_view.hpp"

#include "app/state/head_summary.hpp"
#include "core/base/error.hpp"

#include <new>

namespace attnviz::app {

core::RolloutOptions rolloutOptions(const ViewState& view) { return {.heads = view.rolloutHeads, .skipFirstKey = view.skipFirstKey}; }

RolloutView::Key rolloutKey(const AppState& state) { return {headSummaryKey(state), shownMapLayer(state), rolloutOptions(state.view)}; }

bool rolloutCurrent(const AppState& state) {
    // A scenario's heads being recomputed (a new τ, say) have not yet bumped the data version
    return state.rollout.current(rolloutKey(state)) && mapsFresh(state);
}

bool refreshRollout(AppState& state) {
    if (rolloutCurrent(state)) return true;
    const core::AttentionMaps maps = attentionMaps(state);
    if (!maps) return false;
    RolloutView& r = state.rollout;
    r.restart(rolloutKey(state));
    r.matrix.resize(0, 0);
    try {
        r.matrix = core::attentionRollout(maps, r.key->layer, r.key->options);
        ++state.work.rollouts;
    } catch (const core::InputError& e) {
        r.why = e.what();
    } catch (const std::bad_alloc&) {
        r.why = "out of memory while rolling out the attention";
    }
    return true;
}

const core::Mat* shownRollout(const AppState& state) {
    return state.view.rollout && rolloutCurrent(state) && state.rollout.matrix.size() > 0 ? &state.rollout.matrix : nullptr;
}

core::Settings rolloutMask(const AppState& state) {
    core::Settings mask;
    // a decoder's own pass is causal whatever the shown layer's mask; an encoder's reads both ways
    const Capabilities can = capabilities(state);
    mask.causal = can.ownPass ? can.readsBack : state.settings.causal;
    if (const core::ImportedAttention* file = mapsFile(state))  // nothing flows from a later token when every layer rolled out is causal
        for (int l = 0; l <= shownMapLayer(state); ++l) mask.causal = mask.causal && file->layerSettings(l).causal;
    return mask;
}

std::string rolloutCaption(const AppState& state) {
    const core::RolloutOptions options = rolloutOptions(state.view);
    std::string text = "Rollout";
    if (layerCount(state) > 0) text += " up to layer " + std::to_string(shownMapLayer(state) + 1);
    text += std::string(" · ") + core::rolloutHeadsName(options.heads) + " over heads";
    if (options.skipFirstKey) text += " · first key left out";
    return text;
}

}  // namespace attnviz::app
