#include "core/io/stats_export.hpp"

#include "core/base/format.hpp"
#include "core/base/json_text.hpp"
#include "core/io/export.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <utility>

namespace attnviz::core {
namespace {

constexpr const char* kSinkRule =
    "the share of heads whose mean weight on the first key (over the rows that may read it, every key counted) exceeds epsilon "
    "(Gu et al., 2025)";
constexpr const char* kInductionRule =
    "mean of A[i, i - repeat + 1] over the second copy's queries of random tokens repeated twice (after the BOS when the "
    "tokenizer puts one first), averaged over the batch";
constexpr const char* kRetrievalRule =
    "mean of A[L - N + k, p + k + 1] over the N queries of a random segment written at p = offset + round(depth * (L - offset - 2N)) "
    "in a filler of random tokens and again at the end of L tokens (after the BOS when the tokenizer puts one first: offset 1); "
    "top1: the share of those queries whose largest weight is on that key (Wu et al., 2024); the columns average every length "
    "and depth";

// The columns after layer, head and kv_head, and each head's values for them.
std::vector<std::string> valueColumns(const StatsTable& t) {
    std::vector<std::string> c = {"entropy", "entropy_share", "distance", "self", "previous", "first", "first_k", "duplicate", "induction"};
    if (t.next) c.emplace_back("next");
    if (t.kinds) c.insert(c.end(), {"separator", "punctuation"});
    if (t.induction) c.emplace_back("induction_test");
    if (t.retrieval) c.insert(c.end(), {"retrieval_test", "retrieval_top1"});
    return c;
}

// The index of (layer, head) in the [layers × heads] lists.
std::size_t indexOf(const StatsTable& t, int layer, int head) {
    return static_cast<std::size_t>(layer) * static_cast<std::size_t>(t.heads) + static_cast<std::size_t>(head);
}

std::vector<double> values(const StatsTable& t, std::size_t k) {
    const HeadStats& s = t.stats[k];
    std::vector<double> v = {s.entropy, s.entropyShare, s.distance, s.self, s.previous, s.first, s.firstK, s.duplicate, s.induction};
    if (t.next) v.push_back(s.next);
    if (t.kinds) v.insert(v.end(), {s.separator, s.punctuation});
    if (t.induction) v.push_back(t.inductionTest[k]);
    if (t.retrieval) v.insert(v.end(), {t.retrieval->headMean(t.retrieval->mass, k), t.retrieval->headMean(t.retrieval->top1, k)});
    return v;
}

// One head's retrieval scores: [[the score at each depth] for each length].
nlohmann::json retrievalGrid(const RetrievalScores& r, int layer, int head) {
    nlohmann::json grid = nlohmann::json::array();
    for (std::size_t li = 0; li < r.settings.lengths.size(); ++li) {
        nlohmann::json row = nlohmann::json::array();
        for (std::size_t di = 0; di < r.settings.depths.size(); ++di) row.push_back(r.mass[r.index(li, di, layer, head)]);
        grid.push_back(std::move(row));
    }
    return grid;
}

}  // namespace

StatsTable statsTable(const AttentionMaps& maps, const HeadStatsOptions& options, double sinkEpsilon, std::string source) {
    StatsTable t;
    t.source = std::move(source);
    t.layers = maps.layers;
    t.heads = maps.heads;
    t.firstLayer = maps.firstLayer;
    t.tokens = maps.keys;
    t.kvHead = maps.kvHead;
    t.options = options;
    t.next = std::any_of(maps.settings.begin(), maps.settings.end(), [](const Settings& s) { return !s.causal; });
    t.kinds = !maps.kinds.empty();
    // One sweep over the maps (each made once when made on demand), with every key's statistics
    // beside them for the sink share when the first key is left out.
    HeadSweep sweep = sweepHeads(maps, {.stats = options, .everyKey = options.skipFirstKey});
    t.stats = std::move(sweep.stats);
    t.sinkEpsilon = sinkEpsilon;
    t.sink = sinkShare(options.skipFirstKey ? sweep.everyKey : t.stats, sinkEpsilon);
    return t;
}

std::string statsCsv(const StatsTable& t) {
    std::string out = t.kvHead.empty() ? "layer,head" : "layer,head,kv_head";
    for (const std::string& c : valueColumns(t)) out += "," + c;
    out += "\n";
    for (int l = 0; l < t.layers; ++l)
        for (int h = 0; h < t.heads; ++h) {
            out += std::to_string(t.firstLayer + l) + "," + std::to_string(h);
            if (!t.kvHead.empty()) out += "," + std::to_string(t.kvHead[static_cast<std::size_t>(h)]);
            for (const double v : values(t, indexOf(t, l, h))) out += "," + formatNumber(v);
            out += "\n";
        }
    return out;
}

std::string statsJson(const StatsTable& t) {
    nlohmann::json j = nlohmann::json::object();
    putText(j, "source", t.source);
    j["tokens"] = t.tokens;
    j["layer_count"] = t.layers;
    j["head_count"] = t.heads;
    j["first_key_left_out"] = t.options.skipFirstKey;
    j["rule"] = headStatsRule(t.options);
    j["first_k"] = {{"k", t.options.firstTokens},
                    {"rule", t.options.skipFirstKey ? "mean over the rows i >= k + 1 of the mass on keys 1 ... k (renormalised rows)"
                                                    : "mean over the rows i >= k of the mass on keys 0 ... k - 1"}};
    j["sink"] = {{"epsilon", t.sinkEpsilon}, {"share", t.sink}, {"rule", kSinkRule}};
    if (t.kinds)
        j["token_kinds"] = {{"rule",
                             "separator: the mean over rows of the mass on special tokens after the first, the mask aside ([SEP], "
                             "</s>); punctuation: on tokens of Unicode punctuation alone (Clark et al., 2019)"}};
    if (t.induction)
        j["induction_test"] = {
            {"repeat", t.induction->repeat}, {"batch", t.induction->batch}, {"seed", t.induction->seed}, {"rule", kInductionRule}};
    if (t.retrieval)
        j["retrieval_test"] = {{"lengths", t.retrieval->settings.lengths},
                               {"depths", t.retrieval->settings.depths},
                               {"segment", t.retrieval->settings.segment},
                               {"seed", t.retrieval->settings.seed},
                               {"rule", kRetrievalRule}};
    const std::vector<std::string> columns = valueColumns(t);
    j["columns"] = columns;
    nlohmann::json heads = nlohmann::json::array();
    for (int l = 0; l < t.layers; ++l)
        for (int h = 0; h < t.heads; ++h) {
            nlohmann::json row = {{"layer", t.firstLayer + l}, {"head", h}};
            if (!t.kvHead.empty()) row["kv_head"] = t.kvHead[static_cast<std::size_t>(h)];
            const std::vector<double> v = values(t, indexOf(t, l, h));
            for (std::size_t c = 0; c < columns.size(); ++c) row[columns[c]] = v[c];
            if (t.retrieval) row["retrieval_grid"] = retrievalGrid(*t.retrieval, l, h);
            heads.push_back(std::move(row));
        }
    j["heads"] = std::move(heads);
    return prettyJson(j) + "\n";
}

}  // namespace attnviz::core
