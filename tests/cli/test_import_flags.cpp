// --attention and --tokens-file in-process: the request the window gets, the flags refused with
// them, --layer's range, and the exports of one layer against the file's own numbers.
#include "cli_harness.hpp"
#include "core/io/npy.hpp"

#include <gtest/gtest.h>

using namespace attnviz;
using namespace attnviz::app;
using namespace attnviz::app::clitest;

namespace {

class CliImport : public Cli {
protected:
    // [2, 2, 3, 3] causal maps: head 0 uniform over the keys it may read, head 1 on the previous key.
    std::string write() {
        writeSmallImport(path("a.npy"));
        return path("a.npy").string();
    }
};

TEST_F(CliImport, OpensTheWindowOnTheFile) {
    const std::string file = write();
    testfs::writeFile(path("words.txt"), "x\ny\nz\n");
    const CliRun run = runCli({"--attention", file, "--tokens-file", path("words.txt").string(), "--layer", "1"});
    ASSERT_EQ(run.code, 0) << run.err;
    ASSERT_EQ(run.guiCalls, 1);
    EXPECT_EQ(run.request.scenario.attention, file);
    EXPECT_EQ(run.request.scenario.tokensFile, path("words.txt").string());
    EXPECT_EQ(run.request.scenario.layer, 1);
    EXPECT_EQ(run.request.scenario.name, "a.npy");
    EXPECT_TRUE(run.request.explicitScenario);
}

TEST_F(CliImport, CsvOfOneHeadIsTheFilesMap) {
    const std::string file = write();
    testfs::writeFile(path("tokens.txt"), "a\nb\nc\n");
    const CliRun run = runCli({"--attention", file, "--layer", "1", "--head", "1", "--export-csv", "-"});
    ASSERT_EQ(run.code, 0) << run.err;
    EXPECT_EQ(splitLines(run.out), (std::vector<std::string>{"query\\key,a,b,c", "a,1,0,0", "b,1,0,0", "c,0,1,0"}));
}

TEST_F(CliImport, FlagsThatEditTheMapsAreRefused) {
    const std::string file = write();
    EXPECT_EQ(expectError(runCli({"--attention", file, "--sentence", "hi"})),
              "--sentence: not with --attention: the imported maps are fixed");
    EXPECT_EQ(expectError(runCli({"--attention", file, "--temperature", "2"})),
              "--temperature: not with --attention: the imported maps are fixed");
    EXPECT_EQ(expectError(runCli({"--attention", file, "--model", path("m").string()})),
              "--attention: give one input: --attention or --model, not both");
    EXPECT_EQ(expectError(runCli({"--attention", file, "--preset", "default"})),
              "--attention: give one input: --attention or --preset, not both");
    EXPECT_EQ(expectError(runCli({"--tokens-file", path("t.txt").string()})),
              "--tokens-file: names the tokens of --attention's maps; give --attention FILE too");
    EXPECT_EQ(expectError(runCli({"--attention", file, "--export-stats", "-", "--induction-test"})),
              "--induction-test: runs a checkpoint on random tokens; imported attention has no model behind it");
    EXPECT_EQ(expectError(runCli({"--attention", file, "--export", "-"})),
              "--export: imported maps are written back by --export-npy (attentions.npy), not as JSON");
    EXPECT_EQ(expectError(runCli({"--attention", file, "--layer", "2", "--export-csv", "-"})),
              "--attention: layer: 2 is not a layer of " + file + " (0 … 1)");
    // a scenario's layer is its field, not a flag the user never gave
    testfs::writeFile(path("s.json"), R"({"attention": ")" + file + R"(", "layer": 5})");
    EXPECT_EQ(expectError(runCli({"--scenario", path("s.json").string(), "--export-csv", "-"})),
              path("s.json").string() + ": layer: 5 is not a layer of " + file + " (0 … 1)");
    EXPECT_EQ(expectError(runCli({"--attention", file, "--layer", "99999999999", "--export-csv", "-"})),
              "--layer: expected a whole number from 0 to 4096, got '99999999999'");
    EXPECT_EQ(expectError(runCli({"--attention", path("none.npy").string(), "--export-csv", "-"})),
              path("none.npy").string() + ": no such file");
    testfs::writeFile(path("tokens.txt"), "a\nb\n");
    EXPECT_EQ(expectError(runCli({"--attention", file, "--export-csv", "-"})),
              path("tokens.txt").string() + ": has 2 tokens (one a line), the maps in " + file + " have 3 keys");
}

// An import laid out as usual, tokens.txt beside it: the model view of every layer is drawn (the
// file reopened for it is the one already open, whatever the tokens option found).
TEST_F(CliImport, TheModelViewOfAnImportWithTokensBesideIt) {
    const std::string file = write();
    testfs::writeFile(path("tokens.txt"), "x\ny\nz\n");
    const std::string out = path("mv.svg").string();
    const CliRun run = runCli({"--attention", file, "--export-model-view", out});
    EXPECT_EQ(run.code, 0) << run.err;
    EXPECT_NE(testfs::readFile(out).find("<svg"), std::string::npos);
}

}  // namespace
