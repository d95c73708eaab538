// --export-qk-map: the SVG draws every query and key of the head once, the JSON's points and the
// selected query's lines agree with the same run's weights, the PNG is an image, and bad flags.
#include "cli_harness.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>
#include <vector>

namespace attnviz::app {
namespace {

using namespace clitest;

std::size_t countOf(const std::string& text, const std::string& needle) {
    std::size_t n = 0;
    for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) ++n;
    return n;
}

TEST_F(Cli, QkMapSvgDrawsEveryQueryAndKeyOnce) {
    const fs::path svg = path("qk.svg"), json = path("qk.json"), weights = path("w.json");
    const std::vector<std::string> common = {"--preset", "random-heads", "--length", "60", "--causal", "--head", "1", "--query", "50"};
    std::vector<std::string> a = common, b = common;
    a.insert(a.end(), {"--export-qk-map", svg.string(), "--export", weights.string()});
    b.insert(b.end(), {"--export-qk-map", json.string()});
    const CliRun run = runCli(a);
    ASSERT_EQ(run.code, 0) << run.err;
    ASSERT_EQ(runCli(b).code, 0);
    const std::string s = readFile(svg);
    const std::size_t queriesAt = s.find("<g id=\"queries\">"), keysAt = s.find("<g id=\"keys\">");
    ASSERT_NE(queriesAt, std::string::npos);
    ASSERT_NE(keysAt, std::string::npos);
    EXPECT_EQ(countOf(s, "<polygon "), 60u);
    EXPECT_EQ(countOf(s.substr(keysAt, queriesAt - keysAt), "<rect "), 60u);
    EXPECT_EQ(countOf(s, "<line "), 8u);  // query 51 to its 8 strongest keys
    EXPECT_NE(s.find("Query–key map · "), std::string::npos);
    // The JSON: a point per query and key; the lines are the query's largest weights in the export.
    const nlohmann::json j = nlohmann::json::parse(readFile(json)), w = nlohmann::json::parse(readFile(weights));
    ASSERT_EQ(j["queries"].size(), 60u);
    ASSERT_EQ(j["keys"].size(), 60u);
    EXPECT_EQ(j["query"].get<int>(), 50);
    const auto& row = w["heads"][1]["weights"][50];
    std::vector<int> order(60);
    for (int i = 0; i < 60; ++i) order[static_cast<std::size_t>(i)] = i;
    std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return row[x].get<double>() > row[y].get<double>(); });
    order.resize(8);
    EXPECT_EQ(j["strongest"].get<std::vector<int>>(), order);
    const double pc1 = j["explained"][0].get<double>(), pc2 = j["explained"][1].get<double>();
    EXPECT_GT(pc1, 0.0);
    EXPECT_GE(pc1, pc2);
    EXPECT_LE(pc1 + pc2, 1.0 + 1e-9);
}

TEST_F(Cli, QkMapPngIsAnImageAndBadFlagsAreNamed) {
    const fs::path png = path("qk.png");
    const CliRun run = runCli({"--head", "0", "--export-qk-map", png.string()});
    ASSERT_EQ(run.code, 0) << run.err;
    const std::string bytes = readFile(png);
    ASSERT_GT(bytes.size(), 8u);
    EXPECT_EQ(bytes.substr(1, 3), "PNG");
    EXPECT_EQ(expectError(runCli({"--export-qk-map", png.string()})).rfind("--export-qk-map: ", 0), 0u);
    EXPECT_EQ(expectError(runCli({"--head", "-1", "--export-qk-map", png.string()})).rfind("--export-qk-map: ", 0), 0u);
    EXPECT_EQ(expectError(runCli({"--head", "0", "--query", "6", "--export-qk-map", png.string()})),
              "--query: expected 0 to 5 (6 queries), got 6");
    EXPECT_EQ(expectError(runCli({"--head", "0", "--export-qk-map", path("qk.jpg").string()})).rfind(path("qk.jpg").string() + ": ", 0),
              0u);
    EXPECT_EQ(expectError(runCli({"--head", "0", "--export-qk-map", png.string(), "--screenshot", path("s.png").string()}))
                  .rfind("--screenshot: ", 0),
              0u);
}

}  // namespace
}  // namespace attnviz::app
