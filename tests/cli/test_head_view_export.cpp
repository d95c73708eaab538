// --export-head-view: the lines in the SVG counted against the rule from the weights the same
// run exports as JSON, --head and --query narrowing them, the PNG's pixels, and bad flags.
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

// The lines the rule keeps, counted from the exported weights: every weight > 0 of a readable key
// up to 24 keys, else at most 8 a query and head. `causal`: keys after the query are not readable.
std::size_t expectedLines(const nlohmann::json& exported, const std::vector<int>& heads, const std::vector<int>& queries, bool causal) {
    std::size_t total = 0;
    for (const int h : heads) {
        const auto& w = exported["heads"][static_cast<std::size_t>(h)]["weights"];
        const std::size_t keys = w[0].size();
        for (const int q : queries) {
            std::size_t readable = 0;
            for (std::size_t j = 0; j < keys; ++j)
                if ((!causal || j <= static_cast<std::size_t>(q)) && w[static_cast<std::size_t>(q)][j].get<double>() > 0) ++readable;
            total += keys > 24 ? std::min<std::size_t>(readable, 8) : readable;
        }
    }
    return total;
}

std::vector<int> upTo(int n) {
    std::vector<int> all(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) all[static_cast<std::size_t>(i)] = i;
    return all;
}

TEST_F(Cli, HeadViewSvgDrawsTheLinesTheRuleKeeps) {
    const fs::path svg = path("head-view.svg"), json = path("weights.json");
    // 40 tokens: beyond 24, so the rule drops lines.
    const CliRun run =
        runCli({"--preset", "random-heads", "--length", "40", "--causal", "--export-head-view", svg.string(), "--export", json.string()});
    ASSERT_EQ(run.code, 0) << run.err;
    EXPECT_EQ(run.guiCalls, 0);
    const nlohmann::json exported = nlohmann::json::parse(readFile(json));
    const int heads = static_cast<int>(exported["heads"].size()), tokens = static_cast<int>(exported["tokens"].size());
    ASSERT_EQ(tokens, 40);
    const std::string s = readFile(svg);
    EXPECT_EQ(countOf(s, "<line "), expectedLines(exported, upTo(heads), upTo(tokens), true));
    EXPECT_NE(s.find("the 8 strongest keys of each query and head (T &gt; 24)"), std::string::npos);
    EXPECT_NE(s.find("Head view · "), std::string::npos);
    for (int h = 0; h < heads; ++h) EXPECT_NE(s.find(">head " + std::to_string(h + 1) + "<"), std::string::npos) << h;

    // One head, one query: that row's lines only, and the legend of that head alone.
    const CliRun one = runCli(
        {"--preset", "random-heads", "--length", "40", "--causal", "--head", "2", "--query", "30", "--export-head-view", svg.string()});
    ASSERT_EQ(one.code, 0) << one.err;
    const std::string t = readFile(svg);
    EXPECT_EQ(countOf(t, "<line "), expectedLines(exported, {2}, {30}, true));
    EXPECT_EQ(countOf(t, "<line "), 8u);
    EXPECT_NE(t.find("query 31 isolated"), std::string::npos);
    EXPECT_EQ(t.find(">head 1<"), std::string::npos);
}

TEST_F(Cli, HeadViewOfAShortSentenceDrawsEveryReadableLine) {
    const fs::path svg = path("short.svg"), json = path("short.json");
    const CliRun run = runCli({"--causal", "--export-head-view", svg.string(), "--export", json.string()});
    ASSERT_EQ(run.code, 0) << run.err;
    const nlohmann::json exported = nlohmann::json::parse(readFile(json));
    const int heads = static_cast<int>(exported["heads"].size()), tokens = static_cast<int>(exported["tokens"].size());
    const std::string s = readFile(svg);
    // Causal: T (T + 1) / 2 readable pairs a head, each with a weight above 0.
    EXPECT_EQ(countOf(s, "<line "), static_cast<std::size_t>(heads * tokens * (tokens + 1) / 2));
    EXPECT_EQ(countOf(s, "<line "), expectedLines(exported, upTo(heads), upTo(tokens), true));
    EXPECT_NE(s.find("every line"), std::string::npos);
}

TEST_F(Cli, HeadViewPngIsAnImageAndBadFlagsAreNamed) {
    const fs::path png = path("head-view.png");
    const CliRun run = runCli({"--causal", "--export-head-view", png.string()});
    ASSERT_EQ(run.code, 0) << run.err;
    const std::string bytes = readFile(png);
    ASSERT_GT(bytes.size(), 8u);
    EXPECT_EQ(bytes.substr(1, 3), "PNG");
    EXPECT_EQ(expectError(runCli({"--query", "6", "--export-head-view", png.string()})), "--query: expected 0 to 5 (6 queries), got 6");
    EXPECT_EQ(expectError(runCli({"--head", "9", "--export-head-view", png.string()})).rfind("--head: ", 0), 0u);
    EXPECT_EQ(expectError(runCli({"--export-head-view", path("hv.jpg").string()})).rfind(path("hv.jpg").string() + ": ", 0), 0u);
    EXPECT_EQ(expectError(runCli({"--export-head-view", png.string(), "--screenshot", path("s.png").string()})).rfind("--screenshot: ", 0),
              0u);
}

}  // namespace
}  // namespace attnviz::app
