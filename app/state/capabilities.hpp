// What the state's source can do, asked in one place: a scenario (its own one layer, computed
// here), a checkpoint (many layers, its weights, a pass to run again) or attention computed
// elsewhere (many layers of maps and nothing behind them). Layouts and panels ask for what they
// need ("are there weights behind the maps?"), not for the kind of source.
#pragma once

#include "app/state/app_state.hpp"

namespace attnviz::app {

struct Capabilities {
    bool manyLayers = false;  // maps of a model's many layers: the model view and statistics open with them
    bool weights = false;     // X and W_Q, W_K, W_V behind the maps: stages, token swap, positions, neuron view, labs
    bool rerun = false;       // a checkpoint's pass to run again: what-if edits, another sentence, the induction test
    bool editable = false;    // the scenario's controls (sentence, τ, mask, sizes) change the maps
    bool ownPass = false;     // the views of every layer read a checkpoint's own pass (causal, τ = 1), not the shown layer's softmax
    bool givenMaps = false;   // the maps are given whole (computed elsewhere): no softmax of ours to name, the mask detected
};

Capabilities capabilities(const AppState& state);

}  // namespace attnviz::app
