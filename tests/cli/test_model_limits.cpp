// Limits and settings that a model or the window must not pass over in silence: --max-tokens and
// --max-memory with --model, a --head or --layer the model does not have, a float flag's value
// too large for a float, and the scenario file named in the window's messages as on the command
// line. The window's side is the state it opens on (launchState, from the request the fake
// launcher records) and the state's background opening, without a window.
#include "cli_harness.hpp"

#include "app/state/actions.hpp"
#include "core/base/error.hpp"
#include "core/base/format.hpp"
#include "core/models/loaded_model.hpp"
#include "core/scenario/model.hpp"
#include "core/scenario/presets.hpp"
#include "tests/sized_gpt2.hpp"
#include "tests/tiny_gpt2.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace attnviz::app {
namespace {

using namespace clitest;
using IgnoredLimits = Cli;

// The message the window gives before it opens for the request the command line hands it, or ""
// when the window would open.
std::string windowError(const std::vector<std::string>& args) {
    const CliRun run = runCli(args);
    EXPECT_EQ(run.code, 0) << run.err;
    EXPECT_EQ(run.guiCalls, 1);
    std::string notice;
    try {
        launchState(run.request, RestoredSession{}, "", notice);
    } catch (const core::InputError& e) {
        return e.message();
    }
    return "";
}

// `args` without a window and with --export -, refused: the line, as the window's message is.
std::string exportError(std::vector<std::string> args) {
    args.insert(args.end(), {"--export", "-"});
    return expectError(runCli(args));
}

// Bytes a state showing a model holds for its sentence: the pass's store (each kept view, whose
// rows are the store's when the pass was run whole) and the shown layer's own matrices.
std::uint64_t heldBytes(const AppState& state) {
    const core::decoder::Run& run = *state.loaded.run;
    EXPECT_EQ(run.capacity(), run.tokens());
    std::uint64_t floats = static_cast<std::uint64_t>(run.final().size());
    for (int l = 0; l < run.layerCount(); ++l) {
        floats += static_cast<std::uint64_t>(run.input(l).size() + run.normed(l).size() + run.qkv(l).size());
        for (int h = 0; h < run.headCount(); ++h) floats += static_cast<std::uint64_t>(run.weights(l, h).size());
    }
    return 4 * floats + core::keptBytes(state.model, state.forward);
}

TEST_F(IgnoredLimits, MaxTokensHoldsAModelsSentenceAfterItsTokenizer) {
    tinygpt2::writeCheckpoint(m_dir, tinygpt2::weights(7));
    const std::vector<std::string> five = {"--model", m_dir.string(), "--sentence", "aaaaa"};  // one token a byte
    std::vector<std::string> over = five;
    over.insert(over.end(), {"--max-tokens", "4"});
    const std::string line = exportError(over);
    EXPECT_EQ(line, "--model: sentence: 5 tokens (read by the model's tokenizer) are over the limit of 4 (--max-tokens)");
    EXPECT_EQ(windowError(over), line);
    std::vector<std::string> within = five;
    within.insert(within.end(), {"--max-tokens", "5", "--export", "-"});
    EXPECT_EQ(runCli(within).code, 0);
    // the default: 32,768 tokens, a long document's (a scenario's length is held to it too)
    EXPECT_EQ(exportError({"--length", "32769"}), "preset default: length: 32769 tokens is over the limit of 32768");
}

TEST_F(IgnoredLimits, MaxMemoryCountsWhatAModelsPassAndItsShownLayerHold) {
    sizedgpt2::writeCheckpoint(m_dir, {});
    const std::string sentence(40, 'a');
    core::Scenario s;
    s.model = core::modelFolder(m_dir.string());
    s.sentence = sentence;
    s.causal = true;
    AppState state = makeState(s);
    recompute(state);
    const std::uint64_t held = heldBytes(state);
    const long long below = static_cast<long long>(held >> 20);  // whole MiB under what is held
    ASSERT_GE(below, 1);
    const std::vector<std::string> args = {"--model", m_dir.string(), "--sentence", sentence, "--max-memory", std::to_string(below)};
    const std::string line = exportError(args);
    EXPECT_EQ(line.rfind("--model: sentence: 40 tokens need about ", 0), 0u) << line;
    EXPECT_NE(line.find("over the limit of " + core::formatBytes(static_cast<std::uint64_t>(below) << 20) + " (--max-memory)"),
              std::string::npos)
        << line;
    EXPECT_EQ(windowError(args), line);
    // A limit with room to spare opens it: the count is of what is held, not a multiple of it.
    const long long spare = static_cast<long long>(std::ceil(1.5 * static_cast<double>(held) / (1 << 20)));
    EXPECT_EQ(runCli({"--model", m_dir.string(), "--sentence", sentence, "--max-memory", std::to_string(spare), "--export", "-"}).code, 0);
}

TEST_F(IgnoredLimits, AHeadOrLayerTheModelLacksIsRefusedInTheWindowAsOnTheCommandLine) {
    tinygpt2::writeCheckpoint(m_dir, tinygpt2::weights(7));
    const std::vector<std::string> model = {"--model", m_dir.string(), "--sentence", " the he"};
    for (const char* head : {"9", "2", "-2"}) {
        std::vector<std::string> args = model;
        args.insert(args.end(), {"--head", head});
        const std::string line = exportError(args);
        EXPECT_EQ(line, std::string("--head: head ") + head + " does not exist (the model has 2; -1 = mean)");
        args.insert(args.end(), {"--export-heatmap", path("map.png").string()});
        EXPECT_EQ(expectError(runCli(args)), line);
        args.resize(args.size() - 2);
        EXPECT_EQ(windowError(args), line) << head;
    }
    EXPECT_EQ(windowError({"--preset", "default", "--head", "4"}), "--head: head 4 does not exist (the model has 4; -1 = mean)");
    EXPECT_EQ(windowError({"--model", m_dir.string(), "--sentence", " the he", "--head", "1"}), "");
    EXPECT_EQ(windowError({"--model", m_dir.string(), "--sentence", " the he", "--head", "-1"}), "");
    std::vector<std::string> layer = model;
    layer.insert(layer.end(), {"--layer", "2"});
    const std::string line = exportError(layer);
    EXPECT_EQ(line, "--model: layer: 2 is outside this model's layers 0 … 1");
    EXPECT_EQ(windowError(layer), line);
}

TEST_F(IgnoredLimits, AFloatFlagsErrorQuotesTheTextGiven) {
    const std::vector<std::vector<std::string>> contexts = {
        {"--temperature"}, {"--positional", "rope", "--rope-base"}, {"--scale"}, {"--ui-scale"}, {"--bench", "--bench-seconds"}};
    for (std::vector<std::string> args : contexts) {
        const std::string flag = args.back();
        args.push_back("3.5e38");
        EXPECT_EQ(expectError(runCli(args)), flag + ": got '3.5e38', which is beyond the float range");
        args.back() = "-1e39";
        EXPECT_EQ(expectError(runCli(args)), flag + ": got '-1e39', which is beyond the float range");
        args.back() = "1e-300";
        EXPECT_EQ(expectError(runCli(args)), flag + ": got '1e-300', which is too close to 0 for a float");
        args.back() = "twelve";
        EXPECT_EQ(expectError(runCli(args)), flag + ": expected a number, got 'twelve'");
        args.back() = "1" + std::string(100000, '0');
        const std::string huge = expectError(runCli(args));
        EXPECT_EQ(huge.rfind(flag + ": got '1000", 0), 0u) << huge.substr(0, 200);
        EXPECT_LT(huge.size(), 200u);
        args.back() = "0x10p300";
        EXPECT_EQ(expectError(runCli(args)).rfind(flag + ": got '0x10p300'", 0), 0u);
    }
    EXPECT_EQ(expectError(runCli({"--temperature", "-0.5"})), "--temperature: must be greater than 0, got '-0.5'");
    EXPECT_EQ(expectError(runCli({"--temperature", "nan"})), "--temperature: expected a number, got 'nan'");
    EXPECT_EQ(expectError(runCli({"--positional", "rope", "--rope-base", "1"})), "--rope-base: must be greater than 1, got '1'");
    EXPECT_EQ(expectError(runCli({"--scale", "5"})), "--scale: expected a pixel scale from 1 to 4, got '5'");
    EXPECT_EQ(expectError(runCli({"--ui-scale", "0.25"})), "--ui-scale: expected a UI scale from 0.5 to 4, got '0.25'");
    EXPECT_EQ(expectError(runCli({"--bench", "--bench-seconds", "601"})), "--bench-seconds: expected 0 to 600 seconds, got '601'");
    // What was read before still is.
    EXPECT_FLOAT_EQ(runCli({"--temperature", "2.5e-1"}).request.scenario.temperature, 0.25f);
    EXPECT_FLOAT_EQ(runCli({"--positional", "rope", "--rope-base", "500"}).request.scenario.ropeBase, 500.0f);
    EXPECT_FLOAT_EQ(runCli({"--ui-scale", "1.5"}).request.uiScale, 1.5f);
    EXPECT_FLOAT_EQ(runCli({"--scale", "2"}).request.scale, 2.0f);
}

// A scenario file naming a model: its errors name the file, on the command line (buildFor's
// source) and in the window, opened at the start or from File → Open.
TEST_F(IgnoredLimits, TheWindowNamesTheScenarioFileAsTheCommandLineDoes) {
    const fs::path folder = path("gpt2");
    fs::create_directories(folder);
    tinygpt2::writeCheckpoint(folder, tinygpt2::weights(7));
    const fs::path file = path("story.json");
    writeFile(file, R"({"model": "gpt2", "sentence": " the he", "layer": 5})");
    const std::string line = exportError({"--scenario", file.string()});
    EXPECT_EQ(line, file.string() + ": layer: 5 is outside this model's layers 0 … 1");
    EXPECT_EQ(windowError({"--scenario", file.string()}), line);
    EXPECT_EQ(windowError({file.string()}), line);
    // From File → Open: the model opens on a worker thread; its error names the file too.
    AppState s = makeState(core::loadPreset("default"));
    const std::string before = s.scenario.name;
    ASSERT_TRUE(apply(s, action::LoadScenario{core::loadScenarioFile(file.string()), "", file.string(), true}));
    s.opening->wait();
    ASSERT_TRUE(adoptOpenedModel(s));
    EXPECT_EQ(s.error, line);
    EXPECT_EQ(s.scenario.name, before);
    // And with that model already open, where the file is loaded at once.
    core::Scenario open;
    open.model = core::modelFolder(folder.string());
    open.sentence = " the he";
    ASSERT_TRUE(apply(s, action::LoadScenario{open, "", "", false}));
    ASSERT_TRUE(s.loaded);
    EXPECT_FALSE(apply(s, action::LoadScenario{core::loadScenarioFile(file.string()), "", file.string(), true}));
    EXPECT_EQ(s.error, line);
    EXPECT_EQ(s.scenario.layer, 0);
}

}  // namespace
}  // namespace attnviz::app
