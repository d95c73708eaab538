// The statistics table (core/io/stats_export.hpp): CSV's header and rows, kv_head for grouped
// heads only, the sink share of every key whatever the option, and JSON's model-level fields.
#include "core/io/stats_export.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <tuple>

namespace attnviz::core {
namespace {

// One layer of two heads over 3 tokens, causal: a sink head and a previous-token head.
struct TwoHeads {
    Mat sink = Mat::Zero(3, 3), previous = Mat::Zero(3, 3);
    AttentionMaps maps;
    TwoHeads() {
        sink.col(0).setOnes();
        previous(0, 0) = 1, previous(1, 0) = 1, previous(2, 1) = 1;
        maps.layers = 1, maps.heads = 2, maps.queries = maps.keys = 3, maps.firstLayer = 4;
        maps.ids = {1, 2, 1};
        Settings s;
        s.causal = true;
        maps.settings = {s};
        maps.weights = [this](int, int head) { return MatRef(head == 0 ? sink : previous); };
    }
};

TEST(StatsExport, CsvRowsPerHead) {
    TwoHeads t;
    const StatsTable table = statsTable(t.maps, {}, 0.3, "two");
    EXPECT_EQ(statsCsv(table),
              "layer,head,entropy,entropy_share,distance,self,previous,first,first_k,duplicate,induction\n"
              "4,0,0,0,1,0.3333333333333333,0.5,1,0,0.3333333333333333,0\n"
              "4,1,0,0,0.6666666666666666,0.3333333333333333,1,0.6666666666666666,0,0,0.3333333333333333\n");
    // first_k by hand: 3 tokens have no row after the first 4 (0). With k = 1, rows 1 and 2: the
    // sink head's 1 and 1, the previous-token head's 1 (row 1 on key 0) and 0; with k = 2, row 2
    // alone: 1 on keys 0 and 1 for both.
    for (const auto& [k, sinkHead, previousHead] : {std::tuple{1, 1.0, 0.5}, std::tuple{2, 1.0, 1.0}}) {
        const StatsTable first = statsTable(t.maps, {.skipFirstKey = false, .firstTokens = k}, 0.3, "two");
        EXPECT_DOUBLE_EQ(first.stats[0].firstK, sinkHead) << k;
        EXPECT_DOUBLE_EQ(first.stats[1].firstK, previousHead) << k;
    }
    // Grouped-query heads name their kv head; the induction test adds its column.
    t.maps.kvHead = {0, 0};
    StatsTable grouped = statsTable(t.maps, {}, 0.3, "two");
    grouped.induction = InductionSettings{};
    grouped.inductionTest = {0.25, 0.5};
    const std::string csv = statsCsv(grouped);
    EXPECT_EQ(csv.substr(0, csv.find('\n')),
              "layer,head,kv_head,entropy,entropy_share,distance,self,previous,first,first_k,duplicate,induction,induction_test");
    EXPECT_NE(csv.find("\n4,1,0,0,0,"), std::string::npos);
    EXPECT_EQ(csv.substr(csv.size() - 5), ",0.5\n");
}

TEST(StatsExport, JsonCarriesTheRuleAndTheSinkShareOfEveryKey) {
    TwoHeads t;
    const StatsTable table = statsTable(t.maps, {.skipFirstKey = true}, 0.5, "two");
    const nlohmann::json j = nlohmann::json::parse(statsJson(table));
    EXPECT_EQ(j["source"], "two");
    EXPECT_EQ(j["tokens"], 3);
    EXPECT_EQ(j["first_key_left_out"], true);
    EXPECT_EQ(j["rule"], headStatsRule({.skipFirstKey = true}));
    // Every key counted: the sink head's first is 1, the previous head's 2/3, both over 0.5. With
    // the first key left out, `first` (key 1) would be 0 and 1: a share of 1/2.
    EXPECT_DOUBLE_EQ(j["sink"]["share"].get<double>(), 1.0);
    EXPECT_DOUBLE_EQ(j["sink"]["epsilon"].get<double>(), 0.5);
    EXPECT_EQ(j["layer_count"], 1);
    EXPECT_EQ(j["head_count"], 2);
    ASSERT_EQ(j["heads"].size(), 2u);
    EXPECT_EQ(j["heads"][1]["layer"], 4);
    EXPECT_DOUBLE_EQ(j["heads"][0]["first"].get<double>(), table.stats[0].first);
    EXPECT_FALSE(j.contains("induction_test"));
}

}  // namespace
}  // namespace attnviz::core
