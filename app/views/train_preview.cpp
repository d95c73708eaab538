#include "app/views/train_preview.hpp"

#include <exception>

namespace attnviz::app {
namespace {

TrainPreview::Key keyOf(const AppState& state) {
    const core::TrainConfig& c = state.labs.train.config;
    return {c.task, c.heads, c.positions, c.seed};
}

}  // namespace

bool refreshTrainPreview(AppState& state) {
    TrainPreviewView& view = state.derived.get<TrainPreviewView>();
    const TrainPreview::Key key = keyOf(state);
    if (view.current(key)) return true;
    TrainPreview& made = view.remake(key);
    try {
        made.runs = untrainedRuns(state.labs.train.config);
    } catch (const std::exception& e) {  // settings no trainer takes: nothing to show
        made.runs.clear();
        view.why = e.what();
    }
    return true;
}

const TrainPreviewView* shownTrainPreview(const AppState& state) {
    const TrainPreviewView* view = state.derived.find<TrainPreviewView>();
    return view && view->current(keyOf(state)) ? view : nullptr;
}

}  // namespace attnviz::app
