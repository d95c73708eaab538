// A checkpoint's pass as the views and statistics of many heads read it: every layer × head of
// its weights (causal, τ = 1, each layer's sliding window), with the tokens' ids: its kept maps,
// or rows made on demand (decoder::mapWeightRows) when the pass keeps none.
#pragma once

#include "core/attention/attention_maps.hpp"
#include "core/models/decoder/decoder.hpp"

#include <string>
#include <vector>

namespace attnviz::core {

// Views `run`'s weights: [layers × heads] maps of [T, T]; keep `run` alive while they are
// read. labels: the keys' labels as drawn (may be empty).
AttentionMaps runMaps(const decoder::Run& run, const decoder::Config& config, std::vector<std::string> labels = {});

// The TokenKind bits of each of `ids` as `model`'s tokenizer reads it: a special token after the
// first position but the mask a separator, a token of punctuation alone punctuation.
std::vector<std::uint8_t> tokenKinds(const decoder::Checkpoint& model, const std::vector<int>& ids);
// The TokenKind bits labels alone give (a scenario's words, a file's tokens): punctuation.
std::vector<std::uint8_t> punctuationKinds(const std::vector<std::string>& labels);

}  // namespace attnviz::core
