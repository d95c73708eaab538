// What a head does, in a few numbers, on the current input: the scores head detectors use to
// find previous-token, induction and sink heads among a model's hundreds.
//
// For one head's weights A [T_q, T_k] (row = query; a blocked key holds 0) under `settings`' mask:
//   entropy        mean over rows of −Σⱼ Aᵢⱼ ln Aᵢⱼ (nats);
//   entropyShare   mean over the rows that may read two keys or more of that entropy ÷ ln(keys
//                  the row may read): 1 = uniform over what it may see, 0 = one key;
//   distance       mean over rows of Σⱼ Aᵢⱼ |i − j|;
//   self, previous, next, first
//                  Aᵢᵢ, Aᵢ,ᵢ₋₁, Aᵢ,ᵢ₊₁ and Aᵢ,₀, each the mean over the rows that may read that key
//                  (next: an encoder's; a causal row never reads the key after it);
//   separator, punctuation
//                  Σⱼ Aᵢⱼ over the separator keys (special tokens after the first: [SEP]) and over
//                  the punctuation keys (AttentionMaps::kinds), the mean over every row: where
//                  Clark et al. (2019) found BERT's heads park their attention ([SEP], ". ,");
//                  0 when the maps know no token kinds;
//   firstK         Σ_{j<k} Aᵢⱼ, the mass on the first k keys (k = HeadStatsOptions::firstTokens;
//                  StreamingLLM's attention sinks are the first 4 tokens), the mean over the rows
//                  after them (i ≥ k; a row that may not read them counts 0);
//   duplicate, induction
//                  Σ A∘P / Σ A (TransformerLens's detect_head, "mul"), with token ids t:
//                  duplicate P[i, j] = 1 iff tᵢ = tⱼ and j < i;
//                  induction P[i, j] = 1 iff tⱼ₋₁ = tᵢ and 1 ≤ j ≤ i.
//
// Leaving out the first key (HeadStatsOptions::skipFirstKey): each row's weights over keys j ≥ 1
// renormalised to sum 1, A′ᵢⱼ = Aᵢⱼ / Σ_{k≥1} Aᵢₖ, and every statistic above computed on A′ over
// the rows that may read a key j ≥ 1 and put weight on one (rows that may read only key 0 are
// left out, and so are the means' rows): the keys a row may read no longer count key 0, the
// previous key of row 1 is gone, `first` is the weight on key 1, the first key kept, and `firstK`
// the mass on keys 1 … k over the rows i ≥ k + 1. So a
// head that parks its mass on the first token (an attention sink) shows what it does with the rest.
#pragma once

#include "core/attention/attention.hpp"
#include "core/attention/attention_maps.hpp"
#include "core/attention/head_profile.hpp"
#include "core/base/matrix.hpp"
#include "core/base/progress.hpp"

#include <algorithm>
#include <string>
#include <vector>

namespace attnviz::core {

struct HeadStats {
    double entropy = 0, entropyShare = 0, distance = 0;
    double self = 0, previous = 0, first = 0;
    double duplicate = 0, induction = 0;
    double firstK = 0;
    double next = 0, separator = 0, punctuation = 0;
};

struct HeadStatsOptions {
    bool skipFirstKey = false;  // the statistics of each row's weights over keys j ≥ 1, renormalised (above)
    int firstTokens = 4;        // k of firstK (at least 1)
};

// The rule the statistics were computed under, in one sentence, for exports and tables.
std::string headStatsRule(const HeadStatsOptions& options);

// weights: [T_q, T_k]; ids: the T_k tokens' ids (queries are keys' first T_q), or empty when
// there are none (duplicate and induction are then 0); kinds: the keys' TokenKind bits, or empty
// (separator and punctuation are then 0).
HeadStats headStats(const MatRef& weights, const std::vector<int>& ids, const Settings& settings, const HeadStatsOptions& options = {},
                    const std::vector<std::uint8_t>& kinds = {});

// Every head's statistics, [layers × heads] layer-major (AttentionMaps::index), heads in parallel.
std::vector<HeadStats> allHeadStats(const AttentionMaps& maps, const HeadStatsOptions& options = {});

// One sweep over every head's map: each map read once, a block of rows at a time when the maps
// are made on demand (never whole: memory of a block, not of a map), for its statistics, those
// over every key beside them (everyKey), its thumbnails (factor > 0: BlockPooler's means and
// maxima, equal to poolBlocks') and its profile (head_profile.hpp: by distance and the first k
// tokens across positions, k = stats.firstTokens). Heads in parallel; `progress` counts the blocks and stops the
// sweep (Cancelled) at the next block once asked.
struct HeadSweepOptions {
    HeadStatsOptions stats;
    bool everyKey = false;               // also every head's statistics without options (HeadSweep::everyKey)
    int factor = 0;                      // the thumbnails' pooling factor; 0: none
    bool profiles = false;               // also every head's profile (HeadSweep::profiles)
    std::size_t blockFloats = 1u << 22;  // floats of one block of rows a thread makes at once (16 MiB)
    Progress* progress = nullptr;
};
// Thumbnails at most this many texels a side (a few dozen: 1,200 tiles of GPT-2 XL stay small),
// and the pooling factor that keeps maps of that many queries and keys within it.
inline constexpr int kThumbnailTexels = 48;
inline int thumbnailFactor(Eigen::Index queries, Eigen::Index keys) {
    const Eigen::Index longest = std::max<Eigen::Index>({1, queries, keys});
    return static_cast<int>((longest + kThumbnailTexels - 1) / kThumbnailTexels);
}
struct HeadSweep {
    std::vector<HeadStats> stats, everyKey;  // [layers × heads], layer-major; everyKey empty unless asked
    Eigen::Index side = 0, sideKeys = 0;     // a thumbnail's texels: side × sideKeys
    std::vector<float> means, maxima;        // [layers × heads] thumbnails, each side × sideKeys
    ProfileBins bins;                        // the profiles' bins (when asked)
    std::vector<HeadProfile> profiles;       // [layers × heads]; empty unless asked
};
HeadSweep sweepHeads(const AttentionMaps& maps, const HeadSweepOptions& options);

// The sink metric of Gu et al. (ICLR 2025, "When Attention Sink Emerges"): the share of heads
// whose mean attention to the first token (HeadStats::first, without skipFirstKey) exceeds eps.
double sinkShare(const std::vector<HeadStats>& heads, double eps = 0.3);

}  // namespace attnviz::core
