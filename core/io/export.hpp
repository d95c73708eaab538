// Exports of a computed forward pass: JSON, .npy files, CSV.
#pragma once

#include "core/attention/rollout.hpp"
#include "core/base/files.hpp"
#include "core/models/loaded_model.hpp"
#include "core/scenario/model.hpp"

#include <nlohmann/json_fwd.hpp>

#include <string>

namespace attnviz::core {

// {"X", "heads": [{"K","Q","V","output","scores","weights"}], "key_tokens", "output", "tokens"}
// scores are the raw Q Kᵀ, weights the final A, a head's output its A V, and the top-level
// output concat · W_O (the concat itself without W_O, i.e. head 0's output with one head).
// Written as a stream, a matrix row at a time, in prettyJson's layout: the export costs a
// buffer beside the matrices, not a JSON tree of them (about 11 times their size). Each number
// is the shortest text that reads back as the same float; a non-finite one is null. Text is
// valid UTF-8, as in every JSON attnviz writes (core/base/json_text.hpp).
void writeExportJson(ByteSink& out, const Model& model, const Forward& forward, const struct RolloutExport* rollout = nullptr);

// Attention rollout exported beside the maps (rollout.hpp): R [T, T] up to `layer` (the model's
// layer number; 0 for a scenario's one layer) under `options`. In the JSON exports as
// "rollout": {"layer", "heads": "mean" | "max", "skip_first_key", "rule", "matrix": [T, T]}; in a
// .npy folder as rollout.npy [T, T] (removed on commit from a folder exported without it).
struct RolloutExport {
    Mat matrix;
    int layer = 0;
    RolloutOptions options;
};

// JSON text with two-space indents where arrays of plain values (matrix rows, token lists)
// stay on one line, so a matrix reads as a matrix. A string or key that is not valid UTF-8 is
// written repaired (dumpJson), never a throw.
std::string prettyJson(const nlohmann::json& j);

// Writes X.npy [T, d_model], Q.npy / K.npy [h, T, d_k], V.npy [h, T, d_v], scores.npy and
// weights.npy [h, T_q, T_k], head_output.npy [h, T_q, d_v], output.npy [T_q, d_out] and
// tokens.txt / key_tokens.txt (one label a line) into `dir`, creating it if needed. The files
// join `batch` (all or nothing with the rest of it); an X.npy left from an earlier export is
// removed on commit when this model has no X (explicit Q, K, V), so the folder never mixes two.
void exportNpyDir(FileBatch& batch, const std::string& dir, const Model& model, const Forward& forward,
                  const RolloutExport* rollout = nullptr);

// One head's weights with token headers: first row "query\key,<key tokens…>", then
// "<query token>,<weights…>". Fields are quoted as RFC 4180 needs.
std::string weightsCsv(const Model& model, const MatRef& weights);

// A model's own attention, every layer and head (causal, τ = 1, whatever the view's settings):
// {"model": {"name", "n_layer", "n_head", "n_embd"}, "sentence", "tokens": [labels],
//  "token_ids": [ids], "layers": [{"heads": [{"weights": [T, T]}]}],
//  "next_tokens": [{"id", "token", "prob"} × 10]}, streamed as writeExportJson is. With what-if
// edits the layers and next tokens are the edited pass's, and "what_if": {"edits": ["ablate 3.5",
// …], "computed_from_layer", "next_tokens_before", "next_tokens_after", "changes": [{"id", "token",
// "before", "after", "dlogprob"}]} (sorted by |dlogprob|) follows. A sentence or a
// folder name that is not valid UTF-8 is written with U+FFFD for each such byte; token_ids are
// the exact input.
void writeModelExportJson(ByteSink& out, const Scenario& scenario, const LoadedModel& loaded, const RolloutExport* rollout = nullptr);
// attentions.npy [layers, heads, T, T] ('<f4'), token_ids.npy [T] ('<i8'), tokens.txt (one label
// a line) and next_tokens.txt ("id<TAB>prob<TAB>label", ten lines) into `dir`, joining `batch`;
// with what-if edits, of the edited pass, and next_tokens_whatif.txt
// ("id<TAB>before<TAB>after<TAB>dlogprob<TAB>label", sorted by |dlogprob|).
// Files of a scenario's export (X.npy, weights.npy, …) left in the folder are removed on commit.
// With `one`, that layer's one head alone: attentions.npy [1, 1, T, T] (and kv_head.npy [1]).
// The maps are written a block of rows at a time, made on demand when the pass keeps none:
// memory does not grow with the file.
struct OneMap {
    int layer = 0, head = 0;
};
void exportModelNpyDir(FileBatch& batch, const std::string& dir, const LoadedModel& loaded, const RolloutExport* rollout = nullptr,
                       const OneMap* one = nullptr);

// Attention computed elsewhere (imported_attention.hpp), written back: attentions.npy [layers,
// heads, T_q, T_k] in the file's dtype ('<f4' or '<f2') holding the file's bytes as they are, and
// tokens.txt (the labels, one a line), joining `batch`. A 4-D .npy input round-trips bit for bit.
// A file of queries and keys: its maps made a block of rows at a time ('<f4'). With `one`, that
// layer's one head alone ([1, 1, T_q, T_k]). The maps are written as they lie: check them first.
// Files of other exports are removed on commit.
void exportImportedNpyDir(FileBatch& batch, const std::string& dir, const class ImportedAttention& imported,
                          const RolloutExport* rollout = nullptr, const OneMap* one = nullptr);

}  // namespace attnviz::core
