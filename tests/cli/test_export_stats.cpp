// --export-stats, --induction-test, --retrieval-test, --sink-epsilon and --skip-first-key: the table written for a
// scenario's heads and for a model's every layer × head (CSV and JSON), the numbers against the
// engine's on the same pass, and every refusal as one line with exit 2. The numbers against an
// independent numpy implementation: tests/oracle/test_head_stats.py.
#include "cli_harness.hpp"

#include "app/state/launch.hpp"
#include "app/state/model_test_job.hpp"
#include "core/attention/head_stats.hpp"
#include "core/base/error.hpp"
#include "core/models/induction.hpp"
#include "core/models/loaded_model.hpp"
#include "core/models/retrieval.hpp"
#include "core/models/run_maps.hpp"
#include "core/scenario/model.hpp"
#include "core/scenario/presets.hpp"
#include "tests/sized_gpt2.hpp"
#include "tests/tiny_gpt2.hpp"
#include "tests/tiny_llama.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <thread>

namespace attnviz::app {
namespace {

using namespace clitest;

constexpr const char* kHeader =
    "layer,head,entropy,entropy_share,distance,self,previous,first,first_k,duplicate,induction,separator,punctuation";

std::vector<double> fields(const std::string& line) {
    std::vector<double> out;
    std::stringstream in(line);
    for (std::string f; std::getline(in, f, ',');) out.push_back(std::strtod(f.c_str(), nullptr));
    return out;
}

void expectRow(const std::vector<double>& row, int layer, int head, const core::HeadStats& s) {
    ASSERT_EQ(row.size(), 13u);
    EXPECT_EQ(row[0], layer);
    EXPECT_EQ(row[1], head);
    const double want[] = {s.entropy, s.entropyShare, s.distance,  s.self,      s.previous,   s.first,
                           s.firstK,  s.duplicate,    s.induction, s.separator, s.punctuation};
    for (int c = 0; c < 11; ++c) EXPECT_DOUBLE_EQ(row[static_cast<std::size_t>(c + 2)], want[c]) << "column " << c;
}

TEST_F(Cli, ExportStatsOfAScenarioAsCsvOnStandardOutput) {
    const CliRun run = runCli({"--preset", "seed002-the-cat-sat", "--causal", "--export-stats", "-"});
    ASSERT_EQ(run.code, 0) << run.err;
    EXPECT_EQ(run.guiCalls, 0);
    // The same pass through the engine: its heads' statistics, the tokens' ids from their labels.
    core::Scenario scenario = core::loadPreset("seed002-the-cat-sat");
    scenario.causal = true;
    const core::Model model = core::buildModel(scenario);
    const core::Settings settings = core::buildSettings(scenario, model);
    const core::Forward forward = core::runForward(model, settings);
    const std::vector<std::string> lines = splitLines(run.out);
    ASSERT_EQ(lines.size(), forward.heads.size() + 1);
    EXPECT_EQ(lines[0], kHeader);
    for (std::size_t h = 0; h < forward.heads.size(); ++h)
        expectRow(fields(lines[h + 1]), 0, static_cast<int>(h),
                  core::headStats(forward.heads[h].weights, core::idsOfLabels(model.keyTokens), settings, {},
                                  core::punctuationKinds(model.keyTokens)));
}

TEST_F(Cli, ExportStatsOfAModelEveryLayerAndHeadWithTheInductionTest) {
    tinygpt2::writeCheckpoint(m_dir, tinygpt2::weights(7));
    const std::string csv = path("stats.csv").string(), json = path("stats.json").string();
    const std::vector<std::string> model = {"--model", m_dir.string(), "--sentence", " the cat the cat"};
    std::vector<std::string> args = model;
    for (const char* a : {"--export-stats", csv.c_str(), "--induction-test", "--sink-epsilon", "0.25"}) args.emplace_back(a);
    ASSERT_EQ(runCli(args).code, 0);
    // The model's own pass, every layer × head.
    const auto checkpoint = core::openCheckpoint(m_dir.string());
    const std::vector<int> ids = checkpoint->tokenizer().encode(" the cat the cat");
    const core::decoder::Run pass = core::decoder::forward(*checkpoint, ids);
    core::AttentionMaps maps = core::runMaps(pass, checkpoint->config());
    maps.kinds = core::tokenKinds(*checkpoint, ids);
    const std::vector<core::HeadStats> stats = core::allHeadStats(maps);
    // The test on 8 tokens twice: the tiny model reads 16 positions.
    const std::vector<double> induction = core::inductionScores(*checkpoint, {.repeat = 8, .batch = 10, .seed = 0});
    const std::vector<std::string> lines = splitLines(readFile(csv));
    ASSERT_EQ(lines.size(), 1u + tinygpt2::kLayers * tinygpt2::kHeads);
    EXPECT_EQ(lines[0], std::string(kHeader) + ",induction_test");
    for (int l = 0; l < tinygpt2::kLayers; ++l)
        for (int h = 0; h < tinygpt2::kHeads; ++h) {
            const std::size_t k = static_cast<std::size_t>(l * tinygpt2::kHeads + h);
            std::vector<double> row = fields(lines[k + 1]);
            ASSERT_EQ(row.size(), 14u);
            EXPECT_DOUBLE_EQ(row.back(), induction[k]);
            row.pop_back();
            expectRow(row, l, h, stats[k]);
        }
    // JSON: the same numbers and the model-level ones.
    args = model;
    for (const char* a : {"--export-stats", json.c_str(), "--skip-first-key", "--sink-epsilon", "0.25"}) args.emplace_back(a);
    ASSERT_EQ(runCli(args).code, 0);
    const nlohmann::json j = nlohmann::json::parse(readFile(json));
    EXPECT_EQ(j["tokens"], ids.size());
    EXPECT_EQ(j["layer_count"], tinygpt2::kLayers);
    EXPECT_EQ(j["head_count"], tinygpt2::kHeads);
    EXPECT_EQ(j["first_key_left_out"], true);
    EXPECT_EQ(j["rule"], core::headStatsRule({.skipFirstKey = true}));
    EXPECT_DOUBLE_EQ(j["sink"]["epsilon"].get<double>(), 0.25);
    EXPECT_DOUBLE_EQ(j["sink"]["share"].get<double>(), core::sinkShare(stats, 0.25));  // every key counted
    EXPECT_FALSE(j.contains("induction_test"));
    const std::vector<core::HeadStats> skipped = core::allHeadStats(core::runMaps(pass, checkpoint->config()), {.skipFirstKey = true});
    ASSERT_EQ(j["heads"].size(), skipped.size());
    for (std::size_t k = 0; k < skipped.size(); ++k) {
        EXPECT_EQ(j["heads"][k]["layer"], k / tinygpt2::kHeads);
        EXPECT_DOUBLE_EQ(j["heads"][k]["first"].get<double>(), skipped[k].first);
        EXPECT_DOUBLE_EQ(j["heads"][k]["entropy"].get<double>(), skipped[k].entropy);
        EXPECT_DOUBLE_EQ(j["heads"][k]["induction"].get<double>(), skipped[k].induction);
    }
}

TEST_F(Cli, ExportStatsWithTheRetrievalTest) {
    const nlohmann::json c = tinyllama::config();
    tinyllama::writeCheckpoint(m_dir, c, tinyllama::weights(c, 4));
    const std::string csv = path("stats.csv").string(), json = path("stats.json").string();
    const std::vector<std::string> model = {"--model", m_dir.string(), "--sentence", "abcab"};
    // Without --retrieval-lengths: the default lengths the model reads (64 positions: 64 alone).
    std::vector<std::string> args = model;
    for (const char* a : {"--export-stats", csv.c_str(), "--retrieval-test", "--retrieval-segment", "5"}) args.emplace_back(a);
    ASSERT_EQ(runCli(args).code, 0);
    const auto checkpoint = core::openCheckpoint(m_dir.string());
    const core::RetrievalScores whole = core::retrievalScores(*checkpoint, {.lengths = {64}, .segment = 5});
    const std::vector<double> mass = whole.headMeans(whole.mass), top1 = whole.headMeans(whole.top1);
    const std::vector<std::string> lines = splitLines(readFile(csv));
    ASSERT_EQ(lines.size(), 1u + tinyllama::kLayers * tinyllama::kHeads);
    EXPECT_EQ(lines[0],
              "layer,head,kv_head,entropy,entropy_share,distance,self,previous,first,first_k,duplicate,induction,separator,"
              "punctuation,retrieval_test,retrieval_top1");
    for (std::size_t k = 0; k < mass.size(); ++k) {
        const std::vector<double> row = fields(lines[k + 1]);
        ASSERT_EQ(row.size(), 16u);
        EXPECT_DOUBLE_EQ(row[14], mass[k]);
        EXPECT_DOUBLE_EQ(row[15], top1[k]);
    }
    // JSON: the settings and each head's depth × length grid.
    args = model;
    for (const char* a :
         {"--export-stats", json.c_str(), "--retrieval-test", "--retrieval-lengths", "40,64", "--retrieval-depths", "0,0.5"})
        args.emplace_back(a);
    ASSERT_EQ(runCli(args).code, 0);
    const core::RetrievalScores two = core::retrievalScores(*checkpoint, {.lengths = {40, 64}, .depths = {0, 0.5}});
    const nlohmann::json j = nlohmann::json::parse(readFile(json));
    EXPECT_EQ(j["retrieval_test"]["lengths"], nlohmann::json({40, 64}));
    EXPECT_EQ(j["retrieval_test"]["depths"], nlohmann::json({0.0, 0.5}));
    EXPECT_EQ(j["retrieval_test"]["segment"], 16);
    ASSERT_EQ(j["heads"].size(), static_cast<std::size_t>(tinyllama::kLayers * tinyllama::kHeads));
    const nlohmann::json& last = j["heads"].back();
    const int l = tinyllama::kLayers - 1, h = tinyllama::kHeads - 1;
    for (std::size_t li = 0; li < 2; ++li)
        for (std::size_t di = 0; di < 2; ++di)
            EXPECT_DOUBLE_EQ(last["retrieval_grid"][li][di].get<double>(), two.mass[two.index(li, di, l, h)]);
    EXPECT_DOUBLE_EQ(last["retrieval_test"].get<double>(), two.headMeans(two.mass).back());
    // Refusals, each before any pass.
    const auto refused = [&](std::vector<std::string> extra) {
        std::vector<std::string> a = model;
        a.insert(a.end(), extra.begin(), extra.end());
        return expectError(runCli(a));
    };
    EXPECT_EQ(refused({"--export-stats", csv, "--retrieval-test", "--retrieval-lengths", "40,65"}),
              "--retrieval-lengths: a length of 65 tokens is over 64, the most the model's positions and --max-tokens allow");
    EXPECT_EQ(refused({"--export-stats", csv, "--retrieval-test", "--retrieval-lengths", "40,,64"}),
              "--retrieval-lengths: expected a whole number from 1 to 2147483647, got ''");
    EXPECT_EQ(refused({"--export-stats", csv, "--retrieval-test", "--retrieval-depths", "0,2"}),
              "--retrieval-depths: expected depths from 0 to 1, got '2'");
    EXPECT_EQ(refused({"--export-stats", csv, "--retrieval-test", "--retrieval-segment", "1"}),
              "--retrieval-segment: expected a whole number from 2 to 4096, got '1'");
    EXPECT_EQ(refused({"--export-stats", csv, "--retrieval-lengths", "40"}),
              "--retrieval-lengths: sets the retrieval test; give --retrieval-test too");
    EXPECT_EQ(refused({"--retrieval-test"}),
              "--retrieval-test: goes with --export-stats (the head statistics it writes) or --screenshot (the window runs it first); "
              "give one of them");
    EXPECT_EQ(refused({"--export-stats", csv, "--retrieval-test", "--retrieval-lengths", "20", "--retrieval-segment", "11"}),
              "retrieval test: a length of 20 tokens cannot hold two copies of 11 (at least 22)");
    EXPECT_EQ(expectError(runCli({"--preset", "default", "--export-stats", "-", "--retrieval-test"})),
              "--retrieval-test: runs a checkpoint on random token ids; a scenario has no vocabulary to draw from (give --model DIR)");
}

// --induction-test and --retrieval-test with --screenshot: the window starts both at once through
// the action layer (a screenshot then waits for their end), the retrieval test's default lengths
// cut to what the model reads, as for --export-stats; its scores are the core's on the same settings.
TEST_F(Cli, TheWindowRunsTheTestsItIsAskedFor) {
    const nlohmann::json c = tinyllama::config();
    tinyllama::writeCheckpoint(m_dir, c, tinyllama::weights(c, 4));
    const std::string shot = path("shot.png").string();
    const CliRun run = runCli({"--model", m_dir.string(), "--sentence", "abcab", "--induction-test", "--retrieval-test",
                               "--retrieval-depths", "0,1", "--retrieval-segment", "5", "--screenshot", shot});
    ASSERT_EQ(run.code, 0);
    ASSERT_EQ(run.guiCalls, 1);
    EXPECT_TRUE(run.request.inductionTest);
    ASSERT_TRUE(run.request.retrieval.has_value());
    EXPECT_FALSE(run.request.retrievalLengthsGiven);
    std::string notice;
    AppState state = launchState(run.request, RestoredSession{}, "", notice);
    EXPECT_TRUE(state.induction->running() || state.induction->snapshot().scores);
    for (int i = 0; i < 4000 && (state.retrieval->running() || state.induction->running()); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    const RetrievalSnapshot retrieval = state.retrieval->snapshot();
    ASSERT_TRUE(retrieval.scores.has_value()) << retrieval.error;
    const auto checkpoint = core::openCheckpoint(m_dir.string());
    const core::RetrievalScores want = core::retrievalScores(*checkpoint, {.lengths = {64}, .depths = {0, 1}, .segment = 5});
    EXPECT_EQ(retrieval.scores->settings.lengths, std::vector<int>{64});  // 1,024 … 8,192 cut to the model's 64 positions
    EXPECT_EQ(retrieval.scores->mass, want.mass);
    const InductionSnapshot induction = state.induction->snapshot();
    ASSERT_TRUE(induction.scores.has_value()) << induction.error;
    // 50 tokens twice need 100 positions: the model's 64 (its tokenizer puts no BOS first) hold 32
    // twice, as --export-stats runs it.
    ASSERT_EQ(core::bosOffset(*checkpoint), 0);
    EXPECT_EQ(*induction.scores, core::inductionScores(*checkpoint, {.repeat = 32}));
    // Given lengths are taken as they are, and checked against the model when the test starts.
    const CliRun over =
        runCli({"--model", m_dir.string(), "--sentence", "abcab", "--retrieval-test", "--retrieval-lengths", "65", "--screenshot", shot});
    ASSERT_EQ(over.code, 0);
    EXPECT_TRUE(over.request.retrievalLengthsGiven);
    try {
        launchState(over.request, RestoredSession{}, "", notice);
        ADD_FAILURE() << "a retrieval test past the model's positions started";
    } catch (const core::InputError& e) {
        EXPECT_NE(e.message().find("65"), std::string::npos) << e.message();
    }
    // A scenario has no model to run them on: one line.
    const CliRun scenario = runCli({"--preset", "default", "--retrieval-test", "--screenshot", shot});
    ASSERT_EQ(scenario.code, 0);
    try {
        launchState(scenario.request, RestoredSession{}, "", notice);
        ADD_FAILURE() << "a retrieval test started on a scenario";
    } catch (const core::InputError& e) {
        EXPECT_EQ(e.message(), "retrieval test: needs a model (open one with --model or File → Open model folder)");
    }
}

TEST_F(Cli, SkipFirstKeyReachesTheWindow) {
    EXPECT_TRUE(runCli({"--preset", "default", "--skip-first-key"}).request.skipFirstKey);
    EXPECT_FALSE(runCli({"--preset", "default"}).request.skipFirstKey);
}

TEST_F(Cli, ExportStatsRefusals) {
    EXPECT_EQ(expectError(runCli({"--preset", "default", "--export-stats", "-", "--induction-test"})),
              "--induction-test: runs a checkpoint on random token ids; a scenario has no vocabulary to draw from (give --model DIR)");
    EXPECT_EQ(expectError(runCli({"--preset", "default", "--induction-test"})),
              "--induction-test: goes with --export-stats (the head statistics it writes) or --screenshot (the window runs it "
              "first); give one of them");
    EXPECT_EQ(expectError(runCli({"--preset", "default", "--sink-epsilon", "0.5"})),
              "--sink-epsilon: goes with --export-stats (the head statistics it writes); give --export-stats OUT");
    for (const char* bad : {"0", "1", "-0.2", "1.5"})
        EXPECT_EQ(expectError(runCli({"--preset", "default", "--export-stats", "-", "--sink-epsilon", bad})),
                  std::string("--sink-epsilon: expected a weight between 0 and 1 (exclusive), got '") + bad + "'");
    EXPECT_EQ(expectError(runCli({"--preset", "default", "--export-stats", "-", "--sink-epsilon", "much"})),
              "--sink-epsilon: expected a number, got 'much'");
    const std::string txt = path("stats.txt").string();
    EXPECT_EQ(expectError(runCli({"--preset", "default", "--export-stats", txt})),
              "--export-stats " + txt + ": expected a .csv or .json file, or '-' for CSV on standard output");
    EXPECT_FALSE(fs::exists(txt));
    EXPECT_EQ(expectError(runCli({"--preset", "default", "--export-stats", "-", "--export-csv", "-"})),
              "--export-stats: standard output is already taken by --export-csv");
    EXPECT_EQ(
        expectError(runCli({"--preset", "default", "--export-stats", path("a.csv").string(), "--screenshot", path("a.png").string()})),
        "--screenshot: renders the window; it cannot be combined with --export* (run twice)");
    // A model too short for the test: 2 positions hold one token twice.
    sizedgpt2::writeCheckpoint(m_dir, {.layers = 1, .heads = 2, .embd = 8, .positions = 3});
    const std::string out = path("s.csv").string();
    writeFile(out, "old");
    EXPECT_EQ(expectError(runCli({"--model", m_dir.string(), "--sentence", "ab", "--export-stats", out, "--induction-test"})),
              "--induction-test: the model reads 3 positions; the test needs 4 or more (2 random tokens, twice)");
    EXPECT_EQ(readFile(out), "old");  // all or nothing: the old file stays
    // With a BOS in front, 4 positions are one short: the refusal says 5, after the BOS.
    const fs::path llama = path("llama");
    const nlohmann::json c = tinyllama::config("llama", {{"max_position_embeddings", 4}});
    fs::create_directories(llama);
    tinyllama::writeCheckpoint(llama, c, tinyllama::weights(c, 3));
    writeFile(llama / "tokenizer.json", tinyllama::tokenizerJsonWithBos());
    EXPECT_EQ(expectError(runCli({"--model", llama.string(), "--sentence", "ab", "--export-stats", out, "--induction-test"})),
              "--induction-test: the model reads 4 positions; the test needs 5 or more (2 random tokens, twice, after the BOS)");
}

}  // namespace
}  // namespace attnviz::app
