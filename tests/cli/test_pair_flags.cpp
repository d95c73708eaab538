// --pair and --pair-filter: an encoder's sentence pair on the command line. The export holds the
// pair's token types; the exported heatmap shows the filter's block; a pair given to a decoder or a
// filter without a pair is one line and exit 2. The pair's numbers against numpy:
// tests/oracle/test_bert_model.py.
#include "cli_harness.hpp"

#include "tests/tiny_bert.hpp"
#include "tests/tiny_gpt2.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace attnviz::app {
namespace {

using namespace clitest;

class PairCli : public Cli {
protected:
    void SetUp() override {
        Cli::SetUp();
        fs::create_directories(m_dir / "bert");
        tinybert::writeCheckpoint(m_dir / "bert", tinybert::weights(2));
        bert = {"--model", (m_dir / "bert").string(), "--sentence", "the cat sat", "--pair", "a dog ran"};
    }
    std::vector<std::string> with(std::vector<std::string> more) const {
        std::vector<std::string> args = bert;
        args.insert(args.end(), more.begin(), more.end());
        return args;
    }
    std::vector<std::string> bert;
};

std::size_t count(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
}

TEST_F(PairCli, TheExportHoldsThePairAndItsTokenTypes) {
    const CliRun run = runCli(with({"--export", "-"}));
    ASSERT_EQ(run.code, 0) << run.err;
    const nlohmann::json j = nlohmann::json::parse(run.out);
    EXPECT_EQ(j["pair"], "a dog ran");
    EXPECT_EQ(j["token_ids"], nlohmann::json::array({2, 5, 6, 7, 3, 11, 14, 15, 3}));
    EXPECT_EQ(j["token_types"], nlohmann::json::array({0, 0, 0, 0, 0, 1, 1, 1, 1}));
    EXPECT_EQ(j["model"]["causal"], false);
    EXPECT_EQ(j["predicted_position"], nullptr);  // no [MASK]: nothing predicted
    EXPECT_EQ(j["next_tokens"], nlohmann::json::array());
}

TEST_F(PairCli, TheExportedHeatmapShowsTheFiltersBlock) {
    const auto svg = [&](const std::string& filter) {
        const std::string out = (m_dir / (filter + ".svg")).string();
        const CliRun run = runCli(with({"--pair-filter", filter, "--export-heatmap", out}));
        EXPECT_EQ(run.code, 0) << run.err;
        return testfs::readFile(out);
    };
    const std::string all = svg("all"), ab = svg("A-B"), ba = svg("B-A");
    // [CLS] labels a row and a column of the whole map; A → B keeps it as a row, B → A as a column.
    EXPECT_EQ(count(all, ">[CLS]<"), 2u);
    EXPECT_EQ(count(ab, ">[CLS]<"), 1u);
    EXPECT_EQ(count(ba, ">[CLS]<"), 1u);
    EXPECT_NE(ab.find("A → B"), std::string::npos);
    EXPECT_EQ(all.find("A → B"), std::string::npos);
    // dog is in B: a column of A → B, a row of B → A, both in the whole map.
    EXPECT_EQ(count(all, ">dog<"), 2u);
    EXPECT_EQ(count(ab, ">dog<"), 1u);
}

TEST_F(PairCli, TheExportedHeadViewDrawsTheFiltersLinesAlone) {
    const auto svg = [&](const std::string& filter) {
        const std::string out = (m_dir / ("heads-" + filter + ".svg")).string();
        const CliRun run = runCli(with({"--pair-filter", filter, "--export-head-view", out}));
        EXPECT_EQ(run.code, 0) << run.err;
        return testfs::readFile(out);
    };
    const std::string all = svg("all"), aa = svg("A-A"), ab = svg("A-B"), ba = svg("B-A"), bb = svg("B-B");
    // Every line is in one block: the four blocks' lines are the whole map's.
    const std::size_t lines = count(all, "<line");
    EXPECT_GT(count(ab, "<line"), 0u);
    EXPECT_LT(count(ab, "<line"), lines);
    EXPECT_EQ(count(aa, "<line") + count(ab, "<line") + count(ba, "<line") + count(bb, "<line"), lines);
    EXPECT_NE(ab.find("A → B"), std::string::npos);
}

TEST_F(PairCli, APairWhereThereIsNoneIsOneLine) {
    EXPECT_EQ(expectError(runCli(with({"--pair-filter", "A-C", "--export", "-"}))),
              "--pair-filter: 'A-C' is not one of all, A-A, A-B, B-A, B-B");
    EXPECT_EQ(expectError(runCli({"--model", (m_dir / "bert").string(), "--pair-filter", "A-B", "--export", "-"})),
              "--pair-filter: needs a sentence pair: give --pair TEXT");
    EXPECT_EQ(expectError(runCli({"--preset", "default", "--pair", "b", "--export", "-"})),
              "--pair: only with --model (or a scenario naming one): an encoder reads a sentence pair");
    fs::create_directories(m_dir / "gpt2");
    tinygpt2::writeCheckpoint(m_dir / "gpt2", tinygpt2::weights(1));
    EXPECT_EQ(expectError(runCli({"--model", (m_dir / "gpt2").string(), "--pair", "b", "--export", "-"})),
              "--model: pair: this model reads one text (its tokenizer has no template for a sentence pair)");
}

}  // namespace
}  // namespace attnviz::app
