// The induction test of a checkpoint's heads: repeated random tokens, and how much each head
// attends from a token's second copy to the token after its first copy.
#pragma once

#include "core/base/progress.hpp"
#include "core/models/decoder/decoder.hpp"

#include <cstdint>
#include <vector>

namespace attnviz::core {

struct InductionSettings {
    int repeat = 50;
    int batch = 10;
    std::uint64_t seed = 0;
};

// Runs the checkpoint on `batch` sequences of `repeat` random token ids repeated twice (the family's BOS first
// when it has one) and scores each head by the mean of A[i, i − repeat + 1] over the second copy's queries, averaged
// over the batch: [layers × heads], layer-major. Counts its passes through `progress` (may stop it: Cancelled).
std::vector<double> inductionScores(const decoder::Checkpoint& model, const InductionSettings& settings, Progress* progress = nullptr);

}  // namespace attnviz::core
