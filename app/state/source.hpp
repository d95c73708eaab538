// The state's source, asked in one place: a scenario (its own one layer, computed here), a
// checkpoint (many layers, its weights, a pass to run again) or attention computed elsewhere (many
// layers of maps and nothing behind them). This file pair is the only one that asks which
// (tests/layers/check_source_kind.py holds the rest of app/ to it): layouts, panels, actions and
// exports ask what the source can do (capabilities) or for what it gives (the checkpoint's pass,
// the file of maps, the maps of every layer), and makeState (app_state.hpp) makes the source here.
#pragma once

#include "app/state/app_state.hpp"
#include "core/attention/attention_maps.hpp"
#include "core/base/files.hpp"
#include "core/io/export.hpp"

#include <memory>
#include <string>
#include <vector>

namespace attnviz::app {

struct Capabilities {
    bool manyLayers = false;  // maps of a model's many layers: the model view and statistics open with them
    bool weights = false;     // X and W_Q, W_K, W_V behind the maps: stages, token swap, positions, neuron view, labs
    bool rerun = false;       // a checkpoint's pass to run again: what-if edits, another sentence, the induction test
    bool editable = false;    // the scenario's controls (sentence, τ, mask, sizes) change the maps
    bool ownPass = false;     // the views of every layer read a checkpoint's own pass (τ = 1, its own mask), not the shown layer's softmax
    bool givenMaps = false;   // the maps are given whole (computed elsewhere): no softmax of ours to name, the mask detected
    bool readsBack = false;   // a decoder's pass (each token reads the ones before): the induction and retrieval tests
    // The shown layer's heads computed here whole (every head's T × T scores and weights): τ, the
    // masks, the swaps, the stages and the labs act on them. False for a model's sentence too long
    // for that (core::LoadedModel::shownWhole): its views read the layer's maps from the pass; and
    // for a file of queries and keys too long to make the layer's maps whole (core::layerMadeWhole):
    // its views read them from the file, made on demand.
    bool wholeLayer = true;
};

Capabilities capabilities(const AppState& state);

// What the source gives; null when it has none.
// The checkpoint's own pass over the sentence: its checkpoint, the pass with the what-if edits and
// the pass before them, the tokens as drawn, the next tokens.
const core::LoadedModel* checkpointPass(const AppState& state);
// What maps given whole are, for a title: " · imported maps · causal (detected)" (or without the
// mask when a map reads ahead), or for a file of queries and keys " · made from queries and keys
// · causal · window 4096 · soft-capped at 50" (the file's mask and cap); "" when the maps are not
// given.
std::string givenMapsNote(const AppState& state);
// What the given maps are, for a title of every layer: "imported maps", or "made from queries and
// keys" (a file of queries and keys); "" when the maps are not given.
std::string givenMapsName(const AppState& state);
// Why the shown layer is read from the model's pass (or a file of queries and keys), in one line
// ("" when its heads are whole): the tokens and what its heads whole would take.
std::string readFromPassNote(const AppState& state);
// A sentence pair's blocks: the queries or keys [first, end) of sentence A ([CLS] A [SEP]) and of
// sentence B (B [SEP]); `pair` false when the input is one text (then every view shows it all).
struct PairSegments {
    bool pair = false;
    Eigen::Index aEnd = 0, bStart = 0, end = 0;  // A: [0, aEnd); B: [bStart, end) (RoBERTa's second </s> between)
};
PairSegments pairSegments(const AppState& state);
// The block `filter` asks for: rows (queries) and columns (keys) [first, end), the whole map when
// the input is one text or the filter is All.
struct PairBlock {
    Eigen::Index firstRow = 0, rows = 0, firstCol = 0, cols = 0;
};
PairBlock pairBlock(const AppState& state, PairFilter filter);
const char* pairFilterName(PairFilter filter);  // "all", "A → A", "A → B", "B → A", "B → B"

// The softmax a model's own pass has: "causal, τ = 1" (a decoder; and any source but an encoder)
// or "both directions, τ = 1" (an encoder).
std::string ownSoftmaxNote(const AppState& state);
// The checkpoint behind the maps (what the induction test and the benchmark of a whole pass run).
const core::decoder::Checkpoint* checkpointOf(const AppState& state);
// The file of attention computed elsewhere, checked in the background (checkStatus).
const core::ImportedAttention* mapsFile(const AppState& state);

// The layers behind the state's maps: a model's or an import's; 0 for a scenario's one layer.
int layerCount(const AppState& state);
// The maps the views of every layer read (the model view, the head statistics, the head view,
// rollout, the comparison), viewing the state (keep it alive and unchanged while they are read): a
// checkpoint's own pass, every layer × head; an import's maps once every map passed its check (a
// file that changed is read no more); a scenario's forward pass, its heads as one layer, once every
// head's weights are fresh. Empty (false) until then.
core::AttentionMaps attentionMaps(const AppState& state);
// Whether the views of every layer read current maps: a checkpoint's pass and an import always; a
// scenario's when no head is being recomputed (a new τ, say, has not yet bumped the data version).
bool mapsFresh(const AppState& state);
// What keeps attentionMaps(state) alive off the state (a worker thread's sweep) when they are
// made on demand (a checkpoint's pass that keeps none: the pass); null otherwise.
std::shared_ptr<const void> onDemandMapsOwner(const AppState& state);
// The pass those maps are of, to key what is derived of them: a checkpoint's pass or an import by
// identity, a scenario's by its data version (skipFirstKey false).
PassKey passKey(const AppState& state);
// Whether the file of maps is still being checked in the background (the window keeps waking for
// its progress).
bool mapsBeingChecked(const AppState& state);
// Whether two states are the same checkpoint's passes over the same tokens (before the what-if
// edits): what the what-if history stays valid across.
bool samePassInput(const AppState& a, const AppState& b);
// The key/value head query head `head` reads when heads share them (grouped-query attention, as a
// checkpoint's config or a scenario's kv heads say); groupedQuery says whether they do.
bool groupedQuery(const AppState& state);
int kvHeadOf(const AppState& state, int head);

// --export: every matrix as JSON (a checkpoint's every layer and next tokens; a scenario's every
// stage), with the rollout when given.
void writeSourceJson(core::ByteSink& sink, const AppState& state, const core::RolloutExport* rollout);
// --export-npy: the matrices as .npy files into `dir`, joining `batch`.
// With `one` (a checkpoint's pass only), that layer's one head.
void exportSourceNpy(core::FileBatch& batch, const std::string& dir, const AppState& state, const core::RolloutExport* rollout,
                     const core::OneMap* one = nullptr);
// What the head statistics name as their source: a checkpoint's name, else the scenario's, else
// `fallback` (where the scenario came from).
std::string sourceName(const AppState& state, const std::string& fallback);
// Every map the views of every layer read, checked now on this thread: an import's (errors name
// its file). A pass computed here has nothing to check.
void checkEveryMap(const AppState& state);
// Throws InputError naming the imported file when it changed since it was opened (whatever was
// read of it meanwhile is not to be trusted); nothing for other sources.
void checkSourceUnchanged(const AppState& state);
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
