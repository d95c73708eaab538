// The induction test of TransformerLens / ARENA ("In-context learning and induction heads",
// Olsson et al. 2022): a head that, at a token seen before, attends to the token that followed
// it last time is an induction head. Each of `batch` sequences is `repeat` random token ids
// (uniform over the tokenizer's ordinary tokens: no special, BOS or end-of-text id, and no id
// without a token) written twice, after the family's BOS when the tokenizer puts one first:
//   ids = [BOS] r₀ … r_{N−1} r₀ … r_{N−1}                  T = 2N (+ 1 with a BOS)
// and a head's score is the mean of A[i, i − N + 1] over the second copy's N queries i (the key
// after the first copy's same token), averaged over the batch.
#pragma once

#include "core/base/progress.hpp"
#include "core/models/decoder/decoder.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace attnviz::core {

struct InductionSettings {
    int repeat = 50;
    int batch = 10;
    std::uint64_t seed = 0;
};

// The ids a test draws from: every id the embeddings and the tokenizer both have that is not
// special, the BOS or the end of text, ascending. Throws InputError naming `test` when there is none.
std::vector<int> ordinaryTokens(const decoder::Checkpoint& model, const std::string& test);
// The first position of a drawn sequence: 1 when the tokenizer puts a BOS first, else 0.
int bosOffset(const decoder::Checkpoint& model);

// The batch's sequences, each [T] as above, drawn from Prng::stream(seed, "induction"). Throws
// InputError when the settings are out of range (repeat ≥ 2, batch ≥ 1, T within the model's
// positions) or the tokenizer has no ordinary token.
std::vector<std::vector<int>> inductionSequences(const decoder::Checkpoint& model, const InductionSettings& settings);

// Runs the checkpoint on `batch` sequences of `repeat` random token ids repeated twice (the family's BOS first
// when it has one) and scores each head by the mean of A[i, i − repeat + 1] over the second copy's queries, averaged
// over the batch: [layers × heads], layer-major. Counts its passes through `progress` (may stop it: Cancelled).
std::vector<double> inductionScores(const decoder::Checkpoint& model, const InductionSettings& settings, Progress* progress = nullptr);

}  // namespace attnviz::core
