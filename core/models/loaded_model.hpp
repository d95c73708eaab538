// A scenario that names a model folder: the checkpoint opened, the sentence read by its
// tokenizer, the model's own forward pass (causal, τ = 1), and the selected layer's attention as
// a scenario model, which every view and export of a scenario then works on.
#pragma once

#include "core/models/decoder/decoder.hpp"
#include "core/scenario/model.hpp"
#include "core/scenario/scenario.hpp"

#include <memory>
#include <string>
#include <vector>

namespace attnviz::core {

struct LoadedModel {
    std::shared_ptr<const decoder::Checkpoint> checkpoint;  // null: the scenario names no model
    std::shared_ptr<const decoder::Run> run;                // every layer's every head, the next token's logits (with the what-if edits)
    std::shared_ptr<const decoder::Run> base;               // the same pass without the what-if edits (run itself when none)
    std::vector<std::string> labels;                        // the tokens as drawn, in text order
    std::size_t generated = 0;                              // the last this many tokens were generated (Scenario::generated)
    std::vector<decoder::NextToken> next;                   // the ten most likely next tokens at τ = 1 (their order at every τ)
    std::vector<std::string> nextLabels;                    // and their labels
    long long forwardPasses = 0, appendedPasses = 0;        // passes run for this state: whole, and over a kept prefix
    long long editedPasses = 0, editedLayers = 0;           // what-if passes run, and the layers they computed
    std::vector<decoder::NextTokenChange> nextChanges;      // with edits: the next tokens before (base) and after (run)
    // Whether the shown layer's heads are computed whole as a scenario's (every head's T × T
    // scores and weights: τ, the masks, the stages and the labs act on them); false when they do
    // not fit --max-memory beside the pass: the views then read that layer's maps from the pass,
    // made on demand (modelMemoryBytes with shownWhole false).
    bool shownWhole = true;

    bool edited() const { return run && !run->edits.empty(); }

    explicit operator bool() const { return checkpoint != nullptr; }
    int layers() const { return checkpoint ? checkpoint->config().nLayer : 0; }
};

// The families attnviz reads, by config.json's model_type: "gpt2" (core/models/gpt2/), "llama",
// "mistral", "qwen2", "qwen3" (core/models/llama/), and the encoders "bert", "roberta",
// "distilbert", "modernbert" (core/models/bert/).
// Opens a model folder with its family's reader. Throws InputError naming the file and the field
// (config.json's model_type when no family reads it), or Cancelled through `progress`.
std::shared_ptr<const decoder::Checkpoint> openCheckpoint(const std::string& folder, Progress* progress = nullptr);
// Looks for a model folder's files (config.json, the weights, a tokenizer) without reading them:
// throws InputError naming what is missing.
void checkModelFolder(const std::string& folder);

// The files of a model folder that a family may read and that are there: config.json,
// generation_config.json, the tokenizer's files, the shards' index and every .safetensors file
// (the shards are plain names in the folder). What an export must never write over.
std::vector<std::string> modelInputFiles(const std::string& folder);

// A model folder as a scenario names it: absolute, normal, without a trailing separator.
std::string modelFolder(const std::string& path);
// Its last component ("gpt2"), the name shown for the model.
std::string modelFolderName(const std::string& path);

// The scenario's what-if edits in order: its ablations, then its hidden tokens.
std::vector<decoder::Intervention> interventions(const Scenario& scenario);

// Opens scenario.model and runs it over scenario.sentence (the default sentence when none).
// `previous`: a model loaded before; its checkpoint is reused when the folder is the same, and
// its pass when the tokens are the same (or only positions after their common prefix are
// computed). With what-if edits (scenario.ablations, hiddenTokens) `run` is the edited pass
// (decoder::forwardEdited, reusing previous's edited pass's layers below the first edit that
// changed) and `base` the plain one. The pass keeps its maps or makes them on demand by size
// (passMapsFor with limits.keptMapsBytes; on demand too when keeping them would pass limits.maxBytes). Checks scenario.layer, and holds the sentence's tokens (as the model's tokenizer
// reads it) to limits.maxTokens and what its pass needs (modelMemoryBytes) to limits.maxBytes,
// before the pass allocates anything. Throws InputError naming the file and the field (a limit's
// message names its flag). `progress` counts the opening of a checkpoint and may stop it, or the
// pass (Cancelled).
LoadedModel loadModel(const Scenario& scenario, const LoadedModel* previous = nullptr, const Limits& limits = {},
                      Progress* progress = nullptr);

// Bytes every layer's every head's [T, T] weights take, kept.
std::uint64_t everyMapBytes(const decoder::Config& config, long long tokens);
// What a pass over T tokens keeps of its maps: every map while everyMapBytes ≤ keptMapsBytes
// (views read them at no cost), else only what they are made of (made on demand).
decoder::PassMaps passMapsFor(const decoder::Config& config, long long tokens, std::uint64_t keptMapsBytes);
// What loadModel's pass keeps under `limits`: passMapsFor with keptMapsBytes, on demand when
// keeping them would pass maxBytes (modelMemoryBytes), and Lean when then the shown layer's heads
// whole would take more than shownLayerBytes (shownLayerMapBytes) or pass maxBytes (the shown
// layer is then read from the pass: shownWhole false).
decoder::PassMaps passMapsWithin(const decoder::Config& config, long long tokens, const Limits& limits);
// Bytes of one layer's every head's T × T scores and weights: the shown layer computed whole.
std::uint64_t shownLayerMapBytes(const decoder::Config& config, long long tokens);
// Bytes a pass over T tokens keeps: its store (decoder::storeBytes): each layer's input, normed
// input (not Lean) and q|k|v, each row's log-sum-exp per head, with Kept every layer's every head's [T, T]
// weights, and the final rows [T, d].
std::uint64_t keptModelBytes(const decoder::Config& config, long long tokens, decoder::PassMaps maps = decoder::PassMaps::Kept);
// What --max-memory holds a sentence on a model to: the pass's kept matrices (keptModelBytes) and
// the shown layer's attention as a scenario's is counted (its X unless Lean, and weights, with the copies
// packed for the products), and with shownWhole its forward pass (forwardBytes: every head's
// T × T scores and weights); without, what the views read that layer with (a block of rows a
// thread, and a map pooled for the screen).
std::uint64_t modelMemoryBytes(const decoder::Config& config, long long tokens, decoder::PassMaps maps = decoder::PassMaps::Kept,
                               bool shownWhole = true);

// The selected layer's attention as a scenario model (decoder::layerModel) with the scenario's
// swaps applied to its input rows and labels when applySwaps.
Model buildModel(const Scenario& scenario, const LoadedModel& loaded, bool applySwaps, const Limits& limits = {});

}  // namespace attnviz::core
