// Every head's statistics as a table (--export-stats): CSV, one row per head, or JSON with the
// model-level numbers beside them (the sink share at its ε, the rule the statistics were made
// under, the token count, whether the first key was left out, the induction and retrieval tests' settings).
#pragma once

#include "core/attention/attention_maps.hpp"
#include "core/attention/head_stats.hpp"
#include "core/models/induction.hpp"
#include "core/models/retrieval.hpp"

#include <optional>
#include <string>
#include <vector>

namespace attnviz::core {

struct StatsTable {
    std::string source;  // what the maps are of: the model's folder name, or the scenario's name
    int layers = 0, heads = 0, firstLayer = 0;
    long long tokens = 0;
    std::vector<int> kvHead;  // per query head (grouped-query); empty: its own
    HeadStatsOptions options;
    std::vector<HeadStats> stats;        // [layers × heads], under `options`
    double sinkEpsilon = 0.3, sink = 0;  // sinkShare of the statistics with every key, at sinkEpsilon
    std::optional<InductionSettings> induction;
    std::vector<double> inductionTest;         // [layers × heads] inductionScores, when `induction`
    std::optional<RetrievalScores> retrieval;  // the retrieval test's, when asked for
    bool next = false;                         // some layer reads keys after its queries (an encoder's): the next-token column
    bool kinds = false;                        // the maps know their tokens' kinds: the separator and punctuation columns
};

// The statistics of `maps` under `options`, and the sink share of those with every key (the
// share of heads whose mean weight on the first token exceeds sinkEpsilon).
StatsTable statsTable(const AttentionMaps& maps, const HeadStatsOptions& options, double sinkEpsilon, std::string source);

// "layer,head[,kv_head],entropy,entropy_share,distance,self,previous,first,first_k,duplicate,
// induction[,next][,separator,punctuation][,induction_test][,retrieval_test,retrieval_top1]" then
// one row per head (the retrieval test's
// columns each head's mean over the test's lengths and depths), layer-major; kv_head for grouped-query models only;
// numbers as their shortest round-trip text.
std::string statsCsv(const StatsTable& table);
// {"source", "tokens", "layer_count", "head_count", "first_key_left_out", "rule", "sink": {"epsilon",
//  "share", "rule"}, ["induction_test": {"repeat", "batch", "seed", "rule"}], ["retrieval_test":
//  {"lengths", "depths", "segment", "seed", "rule"}], "columns": [...], "heads": [{"layer", "head",
//  ["kv_head"], "entropy", …, ["retrieval_grid": [[the score at each depth] for each length]]}]}
std::string statsJson(const StatsTable& table);

}  // namespace attnviz::core
