// Limits and settings that a model or the window must not pass over in silence: --max-tokens and
// --max-memory with --model, a --head or --layer the model does not have, a float flag's value
// too large for a float, and the scenario file named in the window's messages as on the command
// line. The window's side is the state it opens on (launchState, from the request the fake
// launcher records) and the state's background opening, without a window.
#include "cli_harness.hpp"

#include "app/state/actions.hpp"
#include "core/base/error.hpp"
#include "core/models/loaded_model.hpp"
#include "core/scenario/presets.hpp"
#include "tests/tiny_gpt2.hpp"

#include <gtest/gtest.h>

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
