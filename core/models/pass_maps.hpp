// Every layer × head of one pass as core::AttentionMaps, for the views and exports of many heads
// (statistics, rollout): a checkpoint's own pass, or a scenario's forward pass as one layer.
#pragma once

#include "core/attention/attention_maps.hpp"
#include "core/models/loaded_model.hpp"
#include "core/scenario/model.hpp"

#include <string>
#include <vector>

namespace attnviz::core {

// A model's own pass: every layer, causal at τ = 1 with each layer's window, the keys' labels as
// drawn (visibleToken). Views `loaded.run`: keep it alive while the maps are read.
AttentionMaps passMaps(const LoadedModel& loaded);
// A scenario's forward pass as one layer of its heads under `settings`, labelled `keyLabels`
// (ids from equal labels of the model's key tokens). Views `forward`.
AttentionMaps forwardMaps(const Model& model, const Forward& forward, const Settings& settings, std::vector<std::string> keyLabels);

}  // namespace attnviz::core
