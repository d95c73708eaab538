#include "app/state/query_key_view.hpp"

#include "app/state/head_summary.hpp"
#include "core/base/error.hpp"
#include "core/models/query_key_of_run.hpp"
#include "core/models/run_maps.hpp"

#include <new>

namespace attnviz::app {
QueryKeyView::Key queryKeyKey(const AppState& state) {
    // A checkpoint's pass, or a scenario's head's own version (its q and k change only with its
    // weights; the other heads finishing, a frame each, do not touch it). The first-key rule is not
    // the map's.
    PassKey pass = passKey(state);
    const int head = state.view.selectedHead;
    if (!capabilities(state).ownPass && head >= 0 && head < static_cast<int>(state.headVersions.size()))
        pass.data = state.headVersions[static_cast<std::size_t>(head)];
    return {pass, shownMapLayer(state), head};
}

bool queryKeyCurrent(const AppState& state) {
    // A scenario's head being recomputed has not yet bumped the data version
    return state.queryKey.current(queryKeyKey(state)) &&
           (capabilities(state).ownPass || state.view.selectedHead < 0 || weightsFresh(state, state.view.selectedHead));
}

bool refreshQueryKeyMap(AppState& state) {
    if (queryKeyCurrent(state)) return true;
    const int head = state.view.selectedHead;
    const core::LoadedModel* own = checkpointPass(state);
    const bool ready =
        own ? static_cast<bool>(own->run) : head < 0 || (head < static_cast<int>(state.forward.heads.size()) && weightsFresh(state, head));
    if (!ready) return false;
    QueryKeyView& v = state.queryKey;
    v.restart(queryKeyKey(state));
    v.map = {};
    if (capabilities(state).givenMaps) {
        v.why =
            "Imported attention has no model behind it: the query–key map needs the head's queries and keys (open a checkpoint "
            "with --model).";
        return true;
    }
    if (head < 0) {
        v.why = "The query–key map is of one head; the mean over heads has no queries or keys. Select a head.";
        return true;
    }
    try {
        if (own) {
            v.map = core::runQueryKeyMap(*own->run, own->checkpoint->config(), v.key->layer, head);
        } else {
            const core::HeadTensors& h = state.forward.heads[static_cast<std::size_t>(head)];
            v.map = core::queryKeyMap(h.q, h.k);
        }
        ++state.work.queryKeyMaps;
    } catch (const core::InputError& e) {
        v.why = e.what();
    } catch (const std::bad_alloc&) {
        v.why = "out of memory while making the query–key map";
    }
    return true;
}

const core::QueryKeyMap* shownQueryKeyMap(const AppState& state) {
    return queryKeyCurrent(state) && state.queryKey.map.points.rows() > 0 ? &state.queryKey.map : nullptr;
}

core::RowVec queryKeyWeights(const AppState& state, int query) {
    const int head = state.view.selectedHead;
    if (head < 0 || query < 0) return {};
    if (const core::LoadedModel* pass = checkpointPass(state)) {
        const core::decoder::Run& run = *pass->run;
        if (query >= run.tokens() || head >= run.headCount()) return {};
        core::Mat made;  // the row made on demand when the pass keeps no maps
        return core::runMaps(run, pass->checkpoint->config()).rowBlock(shownMapLayer(state), head, query, 1, made);
    }
    if (head >= static_cast<int>(state.forward.heads.size()) || !weightsFresh(state, head)) return {};
    const core::Mat& w = state.forward.heads[static_cast<std::size_t>(head)].weights;
    return query < w.rows() ? core::RowVec(w.row(query)) : core::RowVec();
}

std::vector<int> queryKeyLines(const AppState& state, int query, int count) {
    const core::RowVec row = queryKeyWeights(state, query);
    return row.size() > 0 ? core::strongestKeys(row, count) : std::vector<int>{};
}

std::string queryKeyCaption(const AppState& state) {
    const int head = state.view.selectedHead;
    const bool ownPass = capabilities(state).ownPass;
    std::string text = ownPass ? "Layer " + std::to_string(shownMapLayer(state) + 1) + " · " : "";
    text += head < 0 ? "mean over heads" : (ownPass ? "head " : "Head ") + std::to_string(head + 1);
    return text;
}

}  // namespace attnviz::app
