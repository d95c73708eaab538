// The retrieval test (Wu et al. 2024, "Retrieval head mechanistically explains long-context
// factuality": a retrieval head copies from far back in a long context what is asked for again).
// For each length L and depth d: a segment of N random ordinary token ids is written at depth d
// of a filler of other random ordinary ids (none of the segment's, so that its first copy is the
// only one to read back) and again at the end (after the family's BOS when the
// tokenizer puts one first):
//   ids = [BOS] f … f  s₀ … s_{N−1}  f … f  s₀ … s_{N−1}            T = L
//                      ↑ p = offset + round(d · (L − offset − 2N))        ↑ L − N
// A head's score at (L, d) is the mean of A[L − N + k, p + k + 1] over the repeat's N queries: the
// attention from each repeated token to the key after its first copy (the token to copy next), as
// the induction test reads the second of two copies; its top-1 share is Wu et al.'s criterion, the
// part of those queries whose largest weight is on that key. Each pass keeps no map
// (decoder::PassMaps::Lean): the repeat's rows are made from the kept q, k and log-sum-exp.
#pragma once

#include "core/base/progress.hpp"
#include "core/models/decoder/decoder.hpp"

#include <cstdint>
#include <vector>

namespace attnviz::core {

struct RetrievalSettings {
    std::vector<int> lengths = {1024, 2048, 4096, 8192};   // tokens of each pass, BOS and both copies included
    std::vector<double> depths = {0, 0.25, 0.5, 0.75, 1};  // where the first copy starts in the filler, 0 … 1
    int segment = 16;                                      // N, the tokens copied
    std::uint64_t seed = 0;
};

// The lengths and depths a test may have at most (each pass is a forward pass of up to L tokens).
inline constexpr int kMaxRetrievalCells = 64;
inline constexpr int kMaxRetrievalSegment = 4096;  // tokens copied at most

// One pass of the test: its ids and where the first copy starts.
struct RetrievalCase {
    int length = 0;
    double depth = 0;
    int first = 0;  // p: the first copy's first position
    std::vector<int> ids;
};

// The scores, [lengths × depths × layers × heads], length-major then depth, layer and head.
struct RetrievalScores {
    RetrievalSettings settings;
    int layers = 0, heads = 0;
    std::vector<double> mass;  // mean weight from the repeat's queries to the key after their first copy
    std::vector<double> top1;  // share of those queries whose largest weight is on that key

    std::size_t index(std::size_t length, std::size_t depth, int layer, int head) const;
    // The mean of `scores` over every length and depth, for head `head` (layer × heads + head), and
    // for every head [layers × heads], layer-major.
    double headMean(const std::vector<double>& scores, std::size_t head) const;
    std::vector<double> headMeans(const std::vector<double>& scores) const;
};

// Throws InputError ("retrieval test", or the field) unless the settings fit the model: N ≥ 2; 1 …
// kMaxRetrievalCells lengths and depths; N ≤ kMaxRetrievalSegment; each length within the model's positions and long enough
// for the BOS and two copies; each depth in [0, 1].
void checkRetrievalSettings(const decoder::Checkpoint& model, const RetrievalSettings& settings);
// The pass at lengths[length] and depths[depth], drawn from Prng::stream(seed, "retrieval L D"):
// the same for the same settings, a fresh segment and filler in every cell.
RetrievalCase retrievalCase(const decoder::Checkpoint& model, const RetrievalSettings& settings, std::size_t length, std::size_t depth);
// Runs every cell's pass and scores every head. Counts the tokens of its passes through
// `progress` (may stop it between passes and layers: Cancelled).
RetrievalScores retrievalScores(const decoder::Checkpoint& model, const RetrievalSettings& settings, Progress* progress = nullptr);

}  // namespace attnviz::core
