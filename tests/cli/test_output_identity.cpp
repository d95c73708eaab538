// Outputs told apart from the run's inputs and from each other by what they name, not by their
// spelling: a model folder's files, an imported file and its tokens, a scenario and a lesson are
// never written over, through a link or `..` too; two flags naming one new file are refused; and
// a run that fails leaves no folder it made.
#include "cli_harness.hpp"
#include "core/base/files.hpp"
#include "core/io/npy.hpp"
#include "tests/tiny_gpt2.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace attnviz::app {
namespace {

using namespace clitest;

class CliOutputs : public Cli {
protected:
    // A [2, 2, 3, 3] import beside its tokens.txt.
    std::string writeImport() {
        fs::create_directories(path("in"));
        writeSmallImport(path("in") / "attentions.npy");
        writeFile(path("in") / "tokens.txt", "a\nb\nc\n");
        return (path("in") / "attentions.npy").string();
    }
};

TEST(FileIdentity, NamesOfOneFileAreOneIdentity) {
    const fs::path dir = fs::temp_directory_path() / ("attnviz-identity-" + std::to_string(::getpid()));
    fs::create_directories(dir / "sub");
    writeFile(dir / "a.txt", "x");
    fs::create_symlink(dir / "a.txt", dir / "link.txt");
    fs::create_symlink(dir / "sub", dir / "sublink");
    EXPECT_TRUE(core::sameFile((dir / "a.txt").string(), (dir / "link.txt").string()));
    EXPECT_TRUE(core::sameFile((dir / "a.txt").string(), (dir / "sub" / ".." / "a.txt").string()));
    // files not made yet: the same folder and name, however spelt
    EXPECT_TRUE(core::sameFile((dir / "new.json").string(), (dir / "sub" / ".." / "." / "new.json").string()));
    EXPECT_TRUE(core::sameFile((dir / "sub" / "new.json").string(), (dir / "sublink" / "new.json").string()));
    EXPECT_FALSE(core::sameFile((dir / "new.json").string(), (dir / "sub" / "new.json").string()));
    EXPECT_FALSE(core::sameFile((dir / "a.txt").string(), (dir / "new.json").string()));
    fs::remove_all(dir);
}

TEST_F(CliOutputs, AModelsOwnFilesAreNeverWrittenOver) {
    const fs::path model = path("gpt2");
    fs::create_directories(model);
    tinygpt2::writeCheckpoint(model, tinygpt2::weights(3));
    fs::create_symlink(model / "config.json", path("link.json"));
    std::vector<std::pair<std::string, fs::path>> files;
    for (const char* name : {"config.json", "vocab.json", "merges.txt", "model.safetensors"}) files.emplace_back(name, model / name);
    const std::string config = readFile(model / "config.json");
    const auto tryExport = [&](const char* flag, const std::string& out) {
        return expectError(runCli({"--model", model.string(), "--sentence", "hi there", flag, out}));
    };
    // every output flag, each input, by its own name, through `..` and through a link
    for (const char* flag : {"--export", "--export-csv", "--export-stats"}) {
        EXPECT_EQ(tryExport(flag, (model / "config.json").string()),
                  std::string(flag) + " " + (model / "config.json").string() + ": is the model's config.json; write elsewhere");
        EXPECT_EQ(
            tryExport(flag, (model / ".." / "gpt2" / "vocab.json").string()),
            std::string(flag) + " " + (model / ".." / "gpt2" / "vocab.json").string() + ": is the model's vocab.json; write elsewhere");
        EXPECT_EQ(tryExport(flag, path("link.json").string()),
                  std::string(flag) + " " + path("link.json").string() + ": is the model's config.json; write elsewhere");
    }
    EXPECT_EQ(tryExport("--export-heatmap", (model / "model.safetensors").string()),
              "--export-heatmap " + (model / "model.safetensors").string() + ": is the model's model.safetensors; write elsewhere");
    for (const auto& [name, file] : files) EXPECT_TRUE(fs::is_regular_file(file)) << name;
    EXPECT_EQ(readFile(model / "config.json"), config);
    EXPECT_EQ(runCli({"--model", model.string(), "--sentence", "hi there", "--export-stats", "-"}).code, 0);  // still opens
}

TEST_F(CliOutputs, AnImportAndItsTokensAreNeverWrittenOverOrRemoved) {
    const std::string file = writeImport();
    const std::string bytes = readFile(file), tokens = readFile(path("in") / "tokens.txt");
    EXPECT_EQ(expectError(runCli({"--attention", file, "--export-stats", (path("in") / "tokens.txt").string()})),
              "--export-stats " + (path("in") / "tokens.txt").string() + ": is the tokens of the imported attention; write elsewhere");
    EXPECT_EQ(expectError(runCli({"--attention", file, "--export-csv", file})),
              "--export-csv " + file + ": is the imported attention; write elsewhere");
    // the .npy folder export writes attentions.npy and tokens.txt: into the import's own folder, refused
    EXPECT_EQ(expectError(runCli({"--attention", file, "--export-npy", path("in").string()})),
              (path("in") / "attentions.npy").string() + ": is the imported attention, an input of this run; write elsewhere");
    EXPECT_EQ(readFile(file), bytes);
    EXPECT_EQ(readFile(path("in") / "tokens.txt"), tokens);
    // a file the export would remove from a folder it reuses is an input too
    fs::create_directories(path("w"));
    const std::string weights = (path("w") / "weights.npy").string();
    fs::copy_file(file, weights, fs::copy_options::overwrite_existing);
    EXPECT_EQ(expectError(runCli({"--attention", weights, "--export-npy", path("w").string()})),
              weights + ": is the imported attention, an input of this run; write elsewhere");
    EXPECT_EQ(readFile(weights), bytes);
}

TEST_F(CliOutputs, TwoFlagsNamingOneNewFileAreRefusedBeforeAnyWrite) {
    const fs::path here = fs::current_path();
    fs::current_path(m_dir);
    const CliRun run = runCli({"--export-stats", "x.json", "--export", "./x.json"});
    const CliRun viaSub = runCli({"--export-csv", "x.csv", "--export-stats", "sub/../x.csv"});
    fs::current_path(here);
    EXPECT_EQ(expectError(run), "--export-stats: the same file as --export");
    EXPECT_EQ(expectError(viaSub), "--export-stats: the same file as --export-csv");
    EXPECT_TRUE(listDir().empty());
}

TEST_F(CliOutputs, AFailedRunRemovesTheFolderItMade) {
    const fs::path made = path("newdir") / "deeper";
    EXPECT_EQ(expectError(runCli({"--export-npy", made.string(), "--export-csv", "/nonexistent/x.csv"})),
              "/nonexistent/x.csv: folder /nonexistent does not exist");
    EXPECT_TRUE(listDir().empty());
    // a folder that was there before stays, with what it held
    fs::create_directories(path("kept"));
    writeFile(path("kept") / "note.txt", "mine");
    EXPECT_EQ(expectError(runCli({"--export-npy", path("kept").string(), "--export-csv", "/nonexistent/x.csv"})),
              "/nonexistent/x.csv: folder /nonexistent does not exist");
    EXPECT_EQ(readFile(path("kept") / "note.txt"), "mine");
    EXPECT_EQ(std::distance(fs::directory_iterator(path("kept")), fs::directory_iterator()), 1);
    ASSERT_EQ(runCli({"--export-npy", made.string()}).code, 0);
    EXPECT_TRUE(fs::is_regular_file(made / "weights.npy"));
}

}  // namespace
}  // namespace attnviz::app
