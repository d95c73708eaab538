// attnviz::app::runMain in-process: flags -> GuiRequest, exports to streams and files, and the
// one-line error format "attnviz: error: <where>: <what>" with exit code 2.
// The GUI is a fake launcher that records the request, so no window or display is needed.
#include "cli_harness.hpp"

#include "app/state/launch.hpp"
#include "core/attention/kernels.hpp"
#include "core/base/error.hpp"
#include "core/scenario/bench.hpp"
#include "core/scenario/model.hpp"
#include "core/scenario/presets.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

namespace attnviz::app {
namespace {

using namespace clitest;

// Three tokens by hand (seed 000 §39.2.1): X = [[1,0],[0,1],[1,1]], W_Q = W_K = I, W_V = diag(1, 2).
const char* kThreeTokens = R"({
  "tokens": ["p", "q", "r"],
  "X": [[1, 0], [0, 1], [1, 1]],
  "W_Q": "identity",
  "W_K": "identity",
  "W_V": [[1, 0], [0, 2]]
})";

// ---- the GUI hand-off -------------------------------------------------------------------

TEST_F(Cli, NoFlagsOpensTheDefaultPreset) {
    const CliRun run = runCli({});
    EXPECT_EQ(run.code, 0);
    EXPECT_EQ(run.guiCalls, 1);
    EXPECT_EQ(run.out, "");
    EXPECT_EQ(run.err, "");
    EXPECT_EQ(run.request.presetId, "default");
    EXPECT_EQ(run.request.scenarioPath, "");
    ASSERT_TRUE(run.request.scenario.sentence.has_value());
    EXPECT_EQ(*run.request.scenario.sentence, "the cat sat on the mat");
    EXPECT_FALSE(run.request.scenario.tokens.has_value());
    EXPECT_EQ(run.request.scenario.dModel, 16);
    EXPECT_EQ(run.request.scenario.heads, 4);
    EXPECT_EQ(run.request.scenario.seed, 1u);
    EXPECT_FALSE(run.request.scenario.causal);
    EXPECT_FLOAT_EQ(run.request.scenario.temperature, 1.0f);
    EXPECT_TRUE(run.request.scenario.scaled);
    EXPECT_TRUE(run.request.scenario.swaps.empty());
    EXPECT_EQ(run.request.width, 0);  // 0: the saved session's size, or the default
    EXPECT_EQ(run.request.height, 0);
    EXPECT_FALSE(run.request.head.has_value());
    EXPECT_FALSE(run.request.fresh);
    EXPECT_FALSE(run.request.explicitScenario);  // the saved session may be restored
}

TEST_F(Cli, ASentenceOfOnesOwnTitlesTheWindowAndTitleWins) {
    EXPECT_EQ(runCli({"--preset", "seed002-the-cat-sat", "--sentence", "a dog ran"}).request.scenario.name, "a dog ran");
    EXPECT_EQ(runCli({"--sentence", "a dog ran", "--title", "Figure 2"}).request.scenario.name, "Figure 2");
    EXPECT_EQ(runCli({"--preset", "seed002-the-cat-sat"}).request.scenario.name, core::loadPreset("seed002-the-cat-sat").name);
    // One line, at most 80 bytes, cut at a character.
    const std::string long_ =
        runCli({"--sentence", std::string(30, 'a') + "\n" + std::string(30, 'b') + "ééééééééééééé"}).request.scenario.name;
    EXPECT_EQ(long_, std::string(30, 'a') + "\\n" + std::string(30, 'b') + "ééééééééé…");  // 62 bytes and 9 é
}

TEST_F(Cli, LauncherExitCodeIsReturned) {
    std::ostringstream out, err;
    const char* argv[] = {"attnviz"};
    const int code = runMain(
        1, argv, [](const GuiRequest&) { return 7; }, out, err);
    EXPECT_EQ(code, 7);
}

TEST_F(Cli, PresetFlagOpensThatPreset) {
    const CliRun run = runCli({"--preset", "seed003-exam"});
    EXPECT_EQ(run.code, 0);
    ASSERT_EQ(run.guiCalls, 1);
    EXPECT_EQ(run.request.presetId, "seed003-exam");
    EXPECT_EQ(run.request.scenarioPath, "");
    EXPECT_EQ(run.request.scenario.name, "Exam: two queries, three keys");
    ASSERT_TRUE(run.request.scenario.q.has_value());
    EXPECT_EQ(run.request.scenario.q->rows(), 2);
    EXPECT_EQ(run.request.scenario.q->cols(), 3);
    ASSERT_TRUE(run.request.scenario.keyTokens.has_value());
    EXPECT_EQ(*run.request.scenario.keyTokens, (std::vector<std::string>{"k1", "k2", "k3"}));
}

TEST_F(Cli, BenchPrintsOneJsonLineWithTheMatricesKept) {
    const CliRun run = runCli({"--preset", "default", "--bench", "--bench-seconds", "0.01"});
    ASSERT_EQ(run.code, 0) << run.err;
    EXPECT_EQ(run.guiCalls, 0);
    ASSERT_EQ(std::count(run.out.begin(), run.out.end(), '\n'), 1) << run.out;
    const nlohmann::json j = nlohmann::json::parse(run.out);
    EXPECT_EQ(j.at("T"), 6);
    EXPECT_EQ(j.at("heads"), 4);
    // Nothing is asserted about the times (bench/ and --bench are where they are read): the work
    // done is at least 5 and at most 200 forward passes, and the rate is the work over the time.
    for (const char* key : {"forward_ms", "softmax_ms", "visible_softmax_ms", "gflops", "sgemm_gflops"})
        EXPECT_TRUE(j.at(key).is_number()) << key;
    EXPECT_GE(j.at("runs").get<int>(), 5);
    EXPECT_LE(j.at("runs").get<int>(), 200);
    // The default demo: every matrix of its model and forward pass, as keptBytes counts them.
    const core::Model model = core::buildModel(core::loadPreset("default"));
    EXPECT_NEAR(j.at("gflops").get<double>() * j.at("forward_ms").get<double>() * 1e6, core::forwardFlops(model),
                1e-9 * core::forwardFlops(model));
    const core::Forward forward = core::runForward(model, core::buildSettings(core::loadPreset("default"), model));
    EXPECT_DOUBLE_EQ(j.at("kept_mib").get<double>(), static_cast<double>(core::keptBytes(model, forward)) / (1024.0 * 1024.0));
    // The instruction set the products ran on, the one this CPU and build give.
    EXPECT_EQ(j.at("kernels"), core::kernelIsaName(core::kernelIsa()));
    // The blocking derived from this CPU's caches, and the caches it came from.
    const core::KernelBlocking b = core::kernelBlocking();
    const nlohmann::json& blocking = j.at("blocking");
    EXPECT_EQ(blocking.at("depth").get<long>(), b.depth);
    EXPECT_EQ(blocking.at("columns").get<long>(), b.columns);
    EXPECT_EQ(blocking.at("keys").get<long>(), b.keys);
    EXPECT_EQ(blocking.at("narrow_depth").get<long>(), b.narrowDepth);
    EXPECT_EQ(blocking.at("l1_bytes").get<long>(), core::kernelCaches().l1.bytes);
    EXPECT_EQ(blocking.at("caches_from"), core::kernelCaches().source);
}

TEST_F(Cli, EveryPresetOpens) {
    for (const auto& id : core::presetIds()) {
        const CliRun run = runCli({"--preset", id});
        EXPECT_EQ(run.code, 0) << id << ": " << run.err;
        EXPECT_EQ(run.request.presetId, id);
    }
}

TEST_F(Cli, ScenarioFileOpensThatFile) {
    const fs::path file = path("three.json");
    writeFile(file, kThreeTokens);
    const CliRun run = runCli({"--scenario", file.string()});
    EXPECT_EQ(run.code, 0) << run.err;
    ASSERT_EQ(run.guiCalls, 1);
    EXPECT_EQ(run.request.scenarioPath, file.string());
    EXPECT_EQ(run.request.presetId, "");
    ASSERT_TRUE(run.request.scenario.tokens.has_value());
    EXPECT_EQ(*run.request.scenario.tokens, (std::vector<std::string>{"p", "q", "r"}));
    ASSERT_TRUE(run.request.scenario.x.has_value());
    EXPECT_EQ(run.request.scenario.x->rows(), 3);
    EXPECT_EQ(run.request.scenario.x->cols(), 2);
    EXPECT_FLOAT_EQ((*run.request.scenario.x)(2, 1), 1.0f);
    EXPECT_EQ(run.request.scenario.wq.kind, core::MatrixSpec::Kind::Identity);
    ASSERT_EQ(run.request.scenario.wv.kind, core::MatrixSpec::Kind::Explicit);
    EXPECT_FLOAT_EQ(run.request.scenario.wv.value(1, 1), 2.0f);
}

// A file manager opens a scenario with `attnviz FILE` (the desktop entry's Exec=attnviz %f).
TEST_F(Cli, PositionalFileOpensThatFile) {
    const fs::path file = path("three.attnviz.json");
    writeFile(file, kThreeTokens);
    const CliRun run = runCli({file.string()});
    EXPECT_EQ(run.code, 0) << run.err;
    ASSERT_EQ(run.guiCalls, 1);
    EXPECT_EQ(run.request.scenarioPath, file.string());
    EXPECT_EQ(run.request.source, file.string());
    EXPECT_EQ(run.request.presetId, "");
    EXPECT_TRUE(run.request.explicitScenario);  // the saved session does not replace it
    ASSERT_TRUE(run.request.scenario.tokens.has_value());
    EXPECT_EQ(*run.request.scenario.tokens, (std::vector<std::string>{"p", "q", "r"}));
}

TEST_F(Cli, PositionalFileTakesFlagsAndExports) {
    const fs::path file = path("three.attnviz.json");
    writeFile(file, kThreeTokens);
    const CliRun run = runCli({"--causal", file.string(), "--export", "-"});
    EXPECT_EQ(run.code, 0) << run.err;
    EXPECT_EQ(run.guiCalls, 0);
    const auto json = nlohmann::json::parse(run.out);
    EXPECT_EQ(json["tokens"], nlohmann::json::array({"p", "q", "r"}));
    EXPECT_EQ(json["heads"][0]["weights"][0][1], 0.0);  // the flag applies over the file
}

TEST_F(Cli, PositionalFileAfterSwapIsTheFileNotASwap) {
    const fs::path file = path("three.attnviz.json");
    writeFile(file, kThreeTokens);
    const CliRun run = runCli({"--swap", "0,2", file.string(), "--swap", "0,1"});
    EXPECT_EQ(run.code, 0) << run.err;
    ASSERT_EQ(run.guiCalls, 1);
    EXPECT_EQ(run.request.scenarioPath, file.string());
    EXPECT_EQ(run.request.scenario.swaps, (std::vector<std::pair<int, int>>{{0, 2}, {0, 1}}));
}

TEST_F(Cli, PositionalFileWithScenarioOrPresetIsRefused) {
    const fs::path file = path("three.attnviz.json");
    writeFile(file, kThreeTokens);
    EXPECT_EQ(expectError(runCli({file.string(), "--scenario", file.string()})),
              "--scenario: give the scenario file once, as FILE or with --scenario, not both");
    EXPECT_EQ(expectError(runCli({file.string(), "--preset", "default"})), "--preset: give either a scenario FILE or --preset, not both");
    EXPECT_EQ(expectError(runCli({""})), "FILE: expected a path, got an empty one");
    const std::string two = expectError(runCli({file.string(), file.string()}));
    EXPECT_NE(two.find(file.string()), std::string::npos) << two;  // the second one is named as unexpected
}

TEST_F(Cli, MissingPositionalFileIsOneLine) {
    const fs::path missing = path("missing.attnviz.json");
    const std::string line = expectError(runCli({missing.string()}));
    EXPECT_EQ(line.rfind(missing.string() + ": ", 0), 0u) << line;
}

TEST_F(Cli, WindowFlagsReachTheRequest) {
    const CliRun run = runCli(
        {"--size", "800x600", "--scale", "2", "--head", "-1", "--fresh", "--screenshot", path("shot.png").string(), "--panel", "heatmap"});
    EXPECT_EQ(run.code, 0) << run.err;
    ASSERT_EQ(run.guiCalls, 1);
    EXPECT_EQ(run.request.width, 800);
    EXPECT_EQ(run.request.height, 600);
    EXPECT_FLOAT_EQ(run.request.scale, 2.0f);
    EXPECT_EQ(run.request.head, -1);
    EXPECT_TRUE(run.request.fresh);
    EXPECT_EQ(run.request.screenshot, path("shot.png").string());
    EXPECT_EQ(run.request.panel, "heatmap");
}

TEST_F(Cli, LabFlagReachesTheRequestAndIsChecked) {
    const CliRun run = runCli({"--lab", "linear"});
    EXPECT_EQ(run.code, 0) << run.err;
    ASSERT_EQ(run.guiCalls, 1);
    EXPECT_EQ(run.request.lab, "linear");
    EXPECT_EQ(expectError(runCli({"--lab", "fourier"})), "--lab: expected linear, cost, train or flash, got 'fourier'");
}

TEST_F(Cli, LessonFlagParsesTheLessonBeforeTheWindowOpens) {
    const CliRun run = runCli({"--lesson", "attention"});
    EXPECT_EQ(run.code, 0) << run.err;
    ASSERT_EQ(run.guiCalls, 1);
    ASSERT_TRUE(run.request.lesson);
    EXPECT_EQ(run.request.lesson->steps.size(), 9u);
    const CliRun bad = runCli({"--lesson", "no-such-lesson"});
    EXPECT_EQ(bad.guiCalls, 0);
    EXPECT_EQ(expectError(bad), "--lesson: 'no-such-lesson' is neither a lesson (attention) nor an existing file");
}

// What a lecturer sets up, for a screenshot: the query, the stage, the lesson's step, small
// multiples, and a lab's run; each checked before the window opens.
TEST_F(Cli, ViewAndLabRunFlagsReachTheRequestAndAreChecked) {
    const CliRun run = runCli({"--lesson", "attention", "--lesson-step", "3", "--query", "2", "--stage", "7", "--small-multiples"});
    EXPECT_EQ(run.code, 0) << run.err;
    ASSERT_EQ(run.guiCalls, 1);
    EXPECT_EQ(run.request.lessonStep, 3);
    EXPECT_EQ(run.request.query, 2);
    EXPECT_EQ(run.request.stage, 7);
    EXPECT_TRUE(run.request.smallMultiples);
    const CliRun train = runCli({"--train-steps", "120"});
    EXPECT_EQ(train.request.trainSteps, 120);
    EXPECT_EQ(train.request.lab, "train");
    const CliRun measure = runCli({"--measure"});
    EXPECT_TRUE(measure.request.measure);
    EXPECT_EQ(measure.request.lab, "cost");
    EXPECT_EQ(expectError(runCli({"--lesson-step", "1"})), "--lesson-step: needs --lesson");
    EXPECT_EQ(expectError(runCli({"--lesson", "attention", "--lesson-step", "9"})),
              "--lesson-step: expected 0 to 8 (the lesson has 9 steps), got 9");
    EXPECT_EQ(expectError(runCli({"--query", "-1"})), "--query: expected 0 or more, got -1");
    EXPECT_EQ(expectError(runCli({"--stage", "9"})), "--stage: expected 0 to 8, got 9");
    EXPECT_EQ(expectError(runCli({"--train-steps", "5"})), "--train-steps: expected 10 to 5000, got 5");
    EXPECT_EQ(expectError(runCli({"--train-steps", "50", "--lab", "cost"})), "--train-steps: trains in the train lab, not --lab cost");
    EXPECT_EQ(expectError(runCli({"--measure", "--train-steps", "50"})), "--measure: one lab at a time: give --measure or --train-steps");
    EXPECT_EQ(expectError(runCli({"--measure", "--lab", "linear"})), "--measure: measures in the cost lab, not --lab linear");
}

// The per-query bars and the heads grid as figures: the query and head asked for, the causal
// mask's keys drawn as masked, every head with their mean, the title the window has.
TEST_F(Cli, ExportBarsAndHeadsDrawWhatTheFlagsAsk) {
    const fs::path bars = path("bars.svg"), heads = path("heads.svg");
    const CliRun run =
        runCli({"--causal", "--query", "2", "--head", "1", "--export-bars", bars.string(), "--export-heads", heads.string()});
    ASSERT_EQ(run.code, 0) << run.err;
    EXPECT_EQ(run.guiCalls, 0);
    const std::string b = readFile(bars), h = readFile(heads);
    EXPECT_NE(b.find("head 2 of"), std::string::npos);
    EXPECT_NE(b.find(">query 3 &quot;"), std::string::npos) << "query 2, counted from 1 as the window does";
    EXPECT_NE(b.find("masked key (no weight)"), std::string::npos);
    EXPECT_NE(h.find(" · all "), std::string::npos);
    EXPECT_NE(h.find(">mean<"), std::string::npos);
    EXPECT_EQ(expectError(runCli({"--query", "6", "--export-bars", bars.string()})), "--query: expected 0 to 5 (6 queries), got 6");
    EXPECT_EQ(expectError(runCli({"--export-heads", path("heads.jpg").string()})).rfind(path("heads.jpg").string() + ": ", 0), 0u);
}

// Each head's profile from a scenario: the figure, and the curves as CSV by hand on a causal
// window of 3 over 6 tokens (pairs at distance 0, 1, 2: 6, 5, 4; none past the window).
TEST_F(Cli, DistanceProfilesExportAndRefuseOtherTypes) {
    const fs::path svg = path("distance.svg"), csv = path("distance.csv");
    const std::vector<std::string> scenario = {"--sentence", "a b c d e f", "--causal", "--window", "3", "--head", "1"};
    std::vector<std::string> a = scenario;
    a.insert(a.end(), {"--export-distance", svg.string()});
    ASSERT_EQ(runCli(a).code, 0);
    const std::string figure = readFile(svg);
    EXPECT_NE(figure.find("Attention by distance"), std::string::npos);
    EXPECT_NE(figure.find("window 3"), std::string::npos);
    a = scenario;
    a.insert(a.end(), {"--export-distance", csv.string()});
    const CliRun run = runCli(a);
    ASSERT_EQ(run.code, 0) << run.err;
    const std::vector<std::string> lines = splitLines(readFile(csv));
    ASSERT_GE(lines.size(), 2u);
    EXPECT_EQ(lines[0], "layer,head,curve,from,to,value,count");
    EXPECT_NE(std::find(lines.begin(), lines.end(), "0,1,distance,3,3,0,0"), lines.end());  // distance 3: outside the window
    int distance = 0;
    for (const std::string& line : lines)
        if (line.rfind("0,1,uniform,", 0) == 0) {
            ++distance;
            const std::string count = line.substr(line.rfind(',') + 1);
            EXPECT_EQ(count, distance == 1 ? "6" : distance == 2 ? "5" : distance == 3 ? "4" : "0") << line;
        }
    EXPECT_EQ(distance, 6);  // distances 0 … 5, each its own bin
    EXPECT_EQ(expectError(runCli({"--export-distance", path("d.jpg").string()})),
              path("d.jpg").string() + ": unknown type; use .png, .svg, .csv or .json");
}

// ---- flag overrides ---------------------------------------------------------------------

TEST_F(Cli, SentenceReplacesTokens) {
    const fs::path file = path("tokens.json");
    writeFile(file, R"({"tokens": ["x", "y"], "d_model": 4})");
    const CliRun run = runCli({"--scenario", file.string(), "--sentence", "dogs chase cats"});
    EXPECT_EQ(run.code, 0) << run.err;
    ASSERT_TRUE(run.request.scenario.sentence.has_value());
    EXPECT_EQ(*run.request.scenario.sentence, "dogs chase cats");
    EXPECT_FALSE(run.request.scenario.tokens.has_value());
    EXPECT_EQ(run.request.scenario.dModel, 4);
}

TEST_F(Cli, TokensReplaceTheSentence) {
    const CliRun run = runCli({"--tokens", "a,b,c"});
    EXPECT_EQ(run.code, 0) << run.err;
    ASSERT_TRUE(run.request.scenario.tokens.has_value());
    EXPECT_EQ(*run.request.scenario.tokens, (std::vector<std::string>{"a", "b", "c"}));
    EXPECT_FALSE(run.request.scenario.sentence.has_value());
}

TEST_F(Cli, NumericAndSwitchOverrides) {
    const CliRun run = runCli({"--d-model", "8", "--heads", "2", "--temperature", "0.5", "--causal", "--unscaled", "--swap", "0,2",
                               "--swap", "1,3", "--seed", "42"});
    EXPECT_EQ(run.code, 0) << run.err;
    ASSERT_EQ(run.guiCalls, 1);
    const core::Scenario& s = run.request.scenario;
    EXPECT_EQ(s.dModel, 8);
    EXPECT_EQ(s.heads, 2);
    EXPECT_FALSE(s.dk.has_value());
    EXPECT_FLOAT_EQ(s.temperature, 0.5f);
    EXPECT_TRUE(s.causal);
    EXPECT_FALSE(s.scaled);
    EXPECT_EQ(s.seed, 42u);
    EXPECT_EQ(s.swaps, (std::vector<std::pair<int, int>>{{0, 2}, {1, 3}}));
    // The untouched parts still come from the default preset.
    ASSERT_TRUE(s.sentence.has_value());
    EXPECT_EQ(*s.sentence, "the cat sat on the mat");
}

TEST_F(Cli, NoCausalTurnsAPresetsMaskOff) {
    const CliRun before = runCli({"--preset", "seed004-causal"});
    EXPECT_TRUE(before.request.scenario.causal);
    const CliRun run = runCli({"--preset", "seed004-causal", "--no-causal"});
    EXPECT_EQ(run.code, 0) << run.err;
    ASSERT_EQ(run.guiCalls, 1);
    EXPECT_FALSE(run.request.scenario.causal);
}

TEST_F(Cli, SwapFlagsReplaceTheFilesSwaps) {
    const CliRun run = runCli({"--preset", "seed004-swap", "--swap", "1,3"});
    EXPECT_EQ(run.code, 0) << run.err;
    EXPECT_EQ(run.request.scenario.swaps, (std::vector<std::pair<int, int>>{{1, 3}}));
}

TEST_F(Cli, OverridesChangeTheExportedNumbers) {
    // Temperature 0.5 on seed 000's three tokens: logits are scores * 2 / √2.
    const fs::path file = path("three.json");
    writeFile(file, kThreeTokens);
    const CliRun run = runCli({"--scenario", file.string(), "--temperature", "0.5", "--causal", "--export", "-"});
    ASSERT_EQ(run.code, 0) << run.err;
    const auto j = nlohmann::json::parse(run.out);
    const auto& w = j["heads"][0]["weights"];
    // Row 0 reads only key 0; row 1 reads keys 0, 1 with scores 0, 1.
    EXPECT_FLOAT_EQ(w[0][0].get<float>(), 1.0f);
    EXPECT_FLOAT_EQ(w[0][1].get<float>(), 0.0f);
    const double c = 1.0 / (std::sqrt(2.0) * 0.5);
    EXPECT_NEAR(w[1][1].get<double>(), 1.0 / (1.0 + std::exp(-c)), 1e-6);
    EXPECT_FLOAT_EQ(w[1][2].get<float>(), 0.0f);
}

// ---- errors: one line, exit 2 -----------------------------------------------------------

TEST_F(Cli, UnknownPresetListsTheKnownOnes) {
    const CliRun run = runCli({"--preset", "no-such-preset"});
    const std::string line = expectError(run);
    EXPECT_EQ(line.rfind("--preset: unknown preset 'no-such-preset' (known: ", 0), 0u) << line;
    // Every id, or as many as one line holds and where the rest are.
    const bool all = line.find("more: attnviz --list-presets)") == std::string::npos;
    std::size_t listed = 0;
    for (const auto& id : core::presetIds()) listed += line.find(id) != std::string::npos;
    if (all) EXPECT_EQ(listed, core::presetIds().size()) << line;
    else EXPECT_GE(listed, 10u) << line;
    // A typo's neighbours.
    const std::string typo = expectError(runCli({"--preset", "seed002-the-cat"}));
    EXPECT_EQ(typo,
              "--preset: unknown preset 'seed002-the-cat' (did you mean: seed002-the-cat-sat, seed002-v-equals-k, seed002-wq-equals-wk)");
}

TEST_F(Cli, TemperatureZeroIsRefused) {
    const std::string line = expectError(runCli({"--temperature", "0"}));
    EXPECT_EQ(line, "--temperature: must be greater than 0, got '0'");
}

TEST_F(Cli, NegativeTemperatureIsRefused) {
    const std::string line = expectError(runCli({"--temperature", "-1", "--export", "-"}));
    EXPECT_EQ(line.rfind("--temperature: must be greater than 0", 0), 0u) << line;
}

TEST_F(Cli, SwapWithOnePositionIsRefused) {
    const std::string line = expectError(runCli({"--swap", "1"}));
    EXPECT_EQ(line, "--swap: expected two positions I,J (e.g. --swap 0,2), got '1'");
}

TEST_F(Cli, SwapWithJunkIsRefused) {
    const std::string line = expectError(runCli({"--swap", "0,2x"}));
    EXPECT_EQ(line, "--swap: expected two positions I,J (e.g. --swap 0,2), got '0,2x'");
}

TEST_F(Cli, SwapOutOfRangeIsRefusedOnExport) {
    const CliRun run = runCli({"--tokens", "a,b,c,d", "--swap", "0,99", "--export", "-"});
    const std::string line = expectError(run);
    EXPECT_NE(line.find("swaps[0]"), std::string::npos) << line;
    EXPECT_NE(line.find("[0, 99] is out of range: positions go from 0 to 3"), std::string::npos) << line;
}

TEST_F(Cli, MissingScenarioFileIsNamed) {
    const fs::path missing = path("missing.json");
    const std::string line = expectError(runCli({"--scenario", missing.string()}));
    EXPECT_EQ(line, missing.string() + ": no such file");
}

TEST_F(Cli, DirectoryAsScenarioIsNamed) {
    const std::string line = expectError(runCli({"--scenario", m_dir.string()}));
    EXPECT_EQ(line, m_dir.string() + ": is a directory, expected a file");
}

TEST_F(Cli, BadFieldInScenarioNamesFileAndField) {
    const fs::path file = path("ragged.json");
    writeFile(file, R"({"X": [[1, 2], [3]], "W_Q": "identity"})");
    const std::string line = expectError(runCli({"--scenario", file.string()}));
    EXPECT_EQ(line, file.string() + ": X: ragged rows: row 1 has 1 values, row 0 has 2");
}

TEST_F(Cli, ShapeErrorNamesFileAndFieldOnExport) {
    const fs::path file = path("shape.json");
    writeFile(file, R"({"X": [[1, 2], [3, 4]], "W_Q": [[1, 0, 0], [0, 1, 0], [0, 0, 1]]})");
    const std::string line = expectError(runCli({"--scenario", file.string(), "--export", "-"}));
    EXPECT_EQ(line.rfind(file.string() + ": W_Q: expected 2 x 2", 0), 0u) << line;
}

TEST_F(Cli, ScenarioAndPresetTogetherAreRefused) {
    const fs::path file = path("three.json");
    writeFile(file, kThreeTokens);
    const std::string line = expectError(runCli({"--scenario", file.string(), "--preset", "default"}));
    EXPECT_EQ(line, "--preset: give either --scenario or --preset, not both");
}

// --zoom and --zoom-at: the window opens on the heatmap zoomed in, centred on a query and key
// (held inside the map at its edges, as a drag holds it); each refusal one line.
TEST_F(Cli, ZoomOpensTheHeatmapZoomedInOnACell) {
    std::string notice;
    const auto viewOf = [&](const std::vector<std::string>& args) {
        const CliRun run = runCli(args);
        EXPECT_EQ(run.code, 0);
        return launchState(run.request, RestoredSession{}, "", notice).view;
    };
    // 40 tokens: zoom 4 shows 10 × 10 cells; centred on query 25, key 12 (fractions 25.5 / 40, 12.5 / 40)
    ViewState v = viewOf({"--preset", "random-heads", "--length", "40", "--zoom", "4", "--zoom-at", "25,12"});
    EXPECT_FLOAT_EQ(v.zoom, 4.0f);
    EXPECT_FLOAT_EQ(v.panY, 25.5f / 40.0f);
    EXPECT_FLOAT_EQ(v.panX, 12.5f / 40.0f);
    v = viewOf({"--preset", "random-heads", "--length", "40", "--zoom", "4", "--zoom-at", "39,0"});  // the corner: as far as it goes
    EXPECT_FLOAT_EQ(v.panY, 1.0f - 0.125f);
    EXPECT_FLOAT_EQ(v.panX, 0.125f);
    v = viewOf({"--preset", "random-heads", "--length", "40", "--zoom", "2"});  // the centre
    EXPECT_FLOAT_EQ(v.zoom, 2.0f);
    EXPECT_FLOAT_EQ(v.panX, 0.5f);
    EXPECT_EQ(expectError(runCli({"--zoom", "0.5"})), "--zoom: expected a zoom from 1 to 512, got '0.5'");
    EXPECT_EQ(expectError(runCli({"--zoom", "600"})), "--zoom: expected a zoom from 1 to 512, got '600'");
    EXPECT_EQ(expectError(runCli({"--zoom-at", "1,2"})), "--zoom-at: centres the zoomed heatmap; give --zoom Z too");
    EXPECT_EQ(expectError(runCli({"--zoom", "2", "--zoom-at", "12"})), "--zoom-at: expected a query and a key, Q,K, got '12'");
    const CliRun past = runCli({"--preset", "random-heads", "--length", "40", "--zoom", "2", "--zoom-at", "3,40"});
    ASSERT_EQ(past.code, 0);
    try {
        launchState(past.request, RestoredSession{}, "", notice);
        ADD_FAILURE() << "a key past the map was taken";
    } catch (const core::InputError& e) {
        EXPECT_EQ(e.message(), "--zoom-at: expected a query from 0 to 39 and a key from 0 to 39, got 3,40");
    }
}

TEST_F(Cli, TinyWindowSizeIsRefused) {
    const std::string line = expectError(runCli({"--size", "10x10"}));
    EXPECT_EQ(line, "--size: expected WIDTHxHEIGHT between 200x150 and 16384x16384, got '10x10'");
}

TEST_F(Cli, MalformedSizeIsRefused) {
    const std::string line = expectError(runCli({"--size", "800by600"}));
    EXPECT_EQ(line.rfind("--size: ", 0), 0u) << line;
    EXPECT_NE(line.find("'800by600'"), std::string::npos) << line;
}

TEST_F(Cli, MissingHeadIsRefusedForCsv) {
    const fs::path csv = path("weights.csv");
    const std::string line = expectError(runCli({"--preset", "seed000-three-tokens", "--head", "7", "--export-csv", csv.string()}));
    EXPECT_EQ(line, "--head: head 7 does not exist (the model has 1; -1 = mean)");
    EXPECT_FALSE(fs::exists(csv));
}

TEST_F(Cli, ZeroDModelIsRefused) {
    const std::string line = expectError(runCli({"--d-model", "0"}));
    EXPECT_EQ(line, "--d-model: must be at least 1, got 0");
}

TEST_F(Cli, UnknownFlagIsOneLine) {
    const std::string line = expectError(runCli({"--bogus-flag"}));
    EXPECT_NE(line.find("--bogus-flag"), std::string::npos) << line;
}

// ---- exports ----------------------------------------------------------------------------

TEST_F(Cli, ExportJsonToStdout) {
    const CliRun run = runCli({"--export", "-"});
    ASSERT_EQ(run.code, 0) << run.err;
    EXPECT_EQ(run.guiCalls, 0);
    EXPECT_EQ(run.err, "");
    const auto j = nlohmann::json::parse(run.out);
    for (const char* key : {"tokens", "X", "heads", "output"}) EXPECT_TRUE(j.contains(key)) << key;
    EXPECT_EQ(j["tokens"].get<std::vector<std::string>>(), (std::vector<std::string>{"the", "cat", "sat", "on", "the", "mat"}));
    ASSERT_EQ(j["X"].size(), 6u);
    EXPECT_EQ(j["X"][0].size(), 16u);
    ASSERT_EQ(j["heads"].size(), 4u);
    for (const auto& head : j["heads"]) {
        ASSERT_EQ(head["Q"].size(), 6u);
        EXPECT_EQ(head["Q"][0].size(), 4u);  // d_k = 16 / 4
        ASSERT_EQ(head["weights"].size(), 6u);
        for (const auto& row : head["weights"]) {
            ASSERT_EQ(row.size(), 6u);
            double sum = 0.0;
            for (const auto& w : row) sum += w.get<double>();
            EXPECT_NEAR(sum, 1.0, 1e-5);
        }
    }
    ASSERT_EQ(j["output"].size(), 6u);
    EXPECT_EQ(j["output"][0].size(), 16u);  // concat of 4 heads x d_v 4, no W_O
}

TEST_F(Cli, ExportJsonMatchesTheSeedsPrintedNumbers) {
    // Seed 000 §39.2.1: A = [[0.401 0.198 0.401] [0.198 0.401 0.401] [0.248 0.248 0.503]],
    // A V = [[0.802 1.198] [0.599 1.604] [0.752 1.503]].
    const CliRun run = runCli({"--preset", "seed000-three-tokens", "--export", "-"});
    ASSERT_EQ(run.code, 0) << run.err;
    const auto j = nlohmann::json::parse(run.out);
    const double a[3][3] = {{0.401, 0.198, 0.401}, {0.198, 0.401, 0.401}, {0.248, 0.248, 0.503}};
    const double y[3][2] = {{0.802, 1.198}, {0.599, 1.604}, {0.752, 1.503}};
    for (int r = 0; r < 3; ++r) {
        for (int c = 0; c < 3; ++c) EXPECT_NEAR(j["heads"][0]["weights"][r][c].get<double>(), a[r][c], 1.5e-3);
        for (int c = 0; c < 2; ++c) EXPECT_NEAR(j["output"][r][c].get<double>(), y[r][c], 1.5e-3);
    }
}

TEST_F(Cli, ExportCsvHasTokenHeaders) {
    const CliRun run = runCli({"--export-csv", "-"});
    ASSERT_EQ(run.code, 0) << run.err;
    const auto lines = splitLines(run.out);
    ASSERT_EQ(lines.size(), 7u);
    EXPECT_EQ(lines[0], "query\\key,the,cat,sat,on,the,mat");
    const std::vector<std::string> rows = {"the", "cat", "sat", "on", "the", "mat"};
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const std::string& line = lines[i + 1];
        EXPECT_EQ(line.substr(0, line.find(',')), rows[i]);
        EXPECT_EQ(std::count(line.begin(), line.end(), ','), 6) << line;
        double sum = 0.0;
        std::istringstream fields(line.substr(line.find(',') + 1));
        for (std::string f; std::getline(fields, f, ',');) sum += std::stod(f);
        EXPECT_NEAR(sum, 1.0, 1e-5) << line;
    }
}

TEST_F(Cli, ExportCsvMeanHead) {
    const CliRun mean = runCli({"--export-csv", "-", "--head", "-1"});
    const CliRun head0 = runCli({"--export-csv", "-", "--head", "0"});
    ASSERT_EQ(mean.code, 0) << mean.err;
    ASSERT_EQ(head0.code, 0) << head0.err;
    EXPECT_EQ(splitLines(mean.out)[0], splitLines(head0.out)[0]);
    EXPECT_NE(mean.out, head0.out);  // four random heads do not all agree
}

TEST_F(Cli, ExportIntoMissingFolderFailsAndLeavesNothing) {
    const fs::path out = path("no-such-folder") / "out.json";
    const std::string line = expectError(runCli({"--export", out.string()}));
    EXPECT_EQ(line.rfind(out.string() + ": ", 0), 0u) << line;
    EXPECT_NE(line.find("does not exist"), std::string::npos) << line;
    EXPECT_FALSE(fs::exists(path("no-such-folder")));
    EXPECT_TRUE(listDir().empty());
}

TEST_F(Cli, ExportToAFileMatchesStdout) {
    const fs::path out = path("out.json");
    const CliRun run = runCli({"--export", out.string()});
    ASSERT_EQ(run.code, 0) << run.err;
    EXPECT_EQ(run.out, "");
    EXPECT_EQ(readFile(out), runCli({"--export", "-"}).out);
    EXPECT_EQ(listDir(), std::vector<fs::path>{"out.json"});  // no temporary file left beside it
}

TEST_F(Cli, ExportReplacesAnExistingFileFully) {
    const fs::path out = path("out.json");
    writeFile(out, std::string(1 << 20, 'x'));  // longer than the export: no tail may survive
    const CliRun run = runCli({"--preset", "seed000-three-tokens", "--export", out.string()});
    ASSERT_EQ(run.code, 0) << run.err;
    const std::string text = readFile(out);
    EXPECT_EQ(text.find('x'), std::string::npos);
    EXPECT_EQ(text, runCli({"--preset", "seed000-three-tokens", "--export", "-"}).out);
    EXPECT_TRUE(nlohmann::json::accept(text));
    EXPECT_EQ(listDir(), std::vector<fs::path>{"out.json"});
}

TEST_F(Cli, FailedExportLeavesAnExistingFileByteIdentical) {
    const fs::path out = path("out.json");
    const std::string before = "{\"keep\": \"me\"}\n";
    writeFile(out, before);
    const fs::path bad = path("bad.json");
    writeFile(bad, R"({"tokens": ["a", "b"], "colour": "red"})");
    const std::string line = expectError(runCli({"--scenario", bad.string(), "--export", out.string()}));
    EXPECT_EQ(line.rfind(bad.string() + ": colour: unknown key", 0), 0u) << line;
    EXPECT_EQ(readFile(out), before);

    // A scenario that parses but fails when the model is built.
    writeFile(bad, R"({"tokens": ["a", "b"], "padding": [5]})");
    const std::string line2 = expectError(runCli({"--scenario", bad.string(), "--export", out.string()}));
    EXPECT_EQ(line2.rfind(bad.string() + ": padding[0]: ", 0), 0u) << line2;
    EXPECT_EQ(readFile(out), before);

    // A missing CSV head is found before anything is written.
    const std::string line3 = expectError(runCli({"--export", out.string(), "--export-csv", "-", "--head", "9"}));
    EXPECT_EQ(line3.rfind("--head: ", 0), 0u) << line3;
    EXPECT_EQ(readFile(out), before);
    EXPECT_EQ(listDir().size(), 2u);
}

TEST_F(Cli, ExportNpyWritesEveryFile) {
    const fs::path dir = path("npy") / "nested";
    const CliRun run = runCli({"--preset", "seed000-three-tokens", "--export-npy", dir.string()});
    ASSERT_EQ(run.code, 0) << run.err;
    for (const char* name :
         {"X.npy", "Q.npy", "K.npy", "V.npy", "scores.npy", "weights.npy", "head_output.npy", "output.npy", "tokens.txt", "key_tokens.txt"})
        EXPECT_TRUE(fs::is_regular_file(dir / name)) << name;
    EXPECT_EQ(readFile(dir / "tokens.txt"), "[1,0]\n[0,1]\n[1,1]\n");
    EXPECT_EQ(readFile(dir / "Q.npy").substr(0, 6), "\x93NUMPY");
}

// ---- information flags ------------------------------------------------------------------

TEST_F(Cli, ListPresetsNamesEveryPreset) {
    const CliRun run = runCli({"--list-presets"});
    EXPECT_EQ(run.code, 0);
    EXPECT_EQ(run.guiCalls, 0);
    EXPECT_EQ(run.err, "");
    const auto lines = splitLines(run.out);
    const auto ids = core::presetIds();
    ASSERT_EQ(lines.size(), ids.size());
    ASSERT_FALSE(ids.empty());
    for (std::size_t i = 0; i < ids.size(); ++i) {
        EXPECT_EQ(lines[i].rfind(ids[i] + "  ", 0), 0u) << lines[i];
        EXPECT_NE(lines[i].find(core::loadPreset(ids[i]).name), std::string::npos) << lines[i];
    }
    EXPECT_NE(std::find(ids.begin(), ids.end(), "default"), ids.end());
}

TEST_F(Cli, HelpExitsZero) {
    const CliRun run = runCli({"--help"});
    EXPECT_EQ(run.code, 0);
    EXPECT_EQ(run.guiCalls, 0);
    EXPECT_EQ(run.err, "");
    for (const char* flag : {"--scenario", "--preset", "--export", "--export-csv", "--swap", "--temperature"})
        EXPECT_NE(run.out.find(flag), std::string::npos) << flag;
}

TEST_F(Cli, VersionExitsZero) {
    const CliRun run = runCli({"--version"});
    EXPECT_EQ(run.code, 0);
    EXPECT_EQ(run.out, "attnviz " ATTNVIZ_PROJECT_VERSION "\n");  // the version in CMakeLists.txt
    EXPECT_EQ(run.guiCalls, 0);
}

TEST(CliErrorLine, HasThePrefix) { EXPECT_EQ(errorLine("--x: bad"), "attnviz: error: --x: bad"); }

}  // namespace
}  // namespace attnviz::app
