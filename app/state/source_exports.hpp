// What the command line writes of the state's source beside the figures: every matrix as JSON or
// .npy files (a checkpoint's whole pass, an import written back as it is, a scenario's heads), the
// name the head statistics give their source, and the checks that an import was read whole and
// unchanged. The kind of source is asked here, not by the command line.
#pragma once

#include "app/state/app_state.hpp"
#include "core/base/files.hpp"
#include "core/io/export.hpp"

#include <string>

namespace attnviz::app {

// --export: every matrix as JSON (a checkpoint's every layer and next tokens; a scenario's every
// stage), with the rollout when given.
void writeSourceJson(core::ByteSink& sink, const AppState& state, const core::RolloutExport* rollout);
// --export-npy: the matrices as .npy files into `dir`, joining `batch`.
void exportSourceNpy(core::FileBatch& batch, const std::string& dir, const AppState& state, const core::RolloutExport* rollout);
// What the head statistics name as their source: a checkpoint's name, else the scenario's, else
// `fallback` (where the scenario came from).
std::string sourceName(const AppState& state, const std::string& fallback);
// Every map the views of every layer read, checked now on this thread: an import's (errors name
// its file). A pass computed here has nothing to check.
void checkEveryMap(const AppState& state);
// Throws InputError naming the imported file when it changed since it was opened (whatever was
// read of it meanwhile is not to be trusted); nothing for other sources.
void checkSourceUnchanged(const AppState& state);
// The checkpoint behind the state, or null (a scenario, an import): what the induction test and
// the benchmark of a whole pass run.
const core::decoder::Checkpoint* checkpointOf(const AppState& state);
// The token ids the checkpoint's pass read (empty without a checkpoint).
std::vector<int> passIds(const AppState& state);

// What the heads of one layer write into the residual stream: each key's values and the output
// projection, of the pass the views of every layer read (attentionMaps): a checkpoint's layer of
// its own pass, or a scenario's one layer (0). Empty when there are none: imported maps, or a
// scenario's heads not yet computed.
struct LayerValues {
    core::Mat values;  // [T_k, kv·d_v]: v_j of every key/value head, its bias included, side by side
    core::Mat wo;      // [h·d_v, d_out]: W_O, head h's rows at h·d_v; empty when the scenario has none
    int heads = 0, kvHeads = 0, dv = 0;
    int kvHeadOf(int head) const { return head * kvHeads / heads; }
    explicit operator bool() const { return heads > 0; }
};
LayerValues layerValues(const AppState& state, int layer);

}  // namespace attnviz::app
