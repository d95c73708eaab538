// The train lab's runs as they would start under its settings, shown before Train is pressed: made
// in the state by the lab's row's refresh once per settings that change them (task, heads,
// positions, seed), never in the panel.
#pragma once

#include "app/state/app_state.hpp"
#include "app/state/derived.hpp"

#include <cstdint>
#include <vector>

namespace attnviz::app {

struct TrainPreview {
    struct Key {
        core::TrainTask task{};
        int heads = 0;
        core::TrainPositions positions{};
        std::uint64_t seed = 0;
        bool operator==(const Key&) const = default;
    };
    std::vector<TrainRun> runs;  // empty, with the reason, for settings no trainer takes
};
using TrainPreviewView = Derived<TrainPreview::Key, TrainPreview>;

// The train lab's row's refresh.
bool refreshTrainPreview(AppState& state);
// The preview of the lab's current settings when made; else null.
const TrainPreviewView* shownTrainPreview(const AppState& state);

}  // namespace attnviz::app
