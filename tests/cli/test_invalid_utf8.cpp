// The command line given text that is not valid UTF-8 (a sentence, a model folder's name): its
// JSON, to a file or standard output, is valid UTF-8 that parses back, and the run succeeds.
#include "tests/cli/cli_harness.hpp"
#include "tests/tiny_gpt2.hpp"

#include <nlohmann/json.hpp>

namespace attnviz::app::clitest {
namespace {

using nlohmann::json;

const std::string kFffd = "\xEF\xBF\xBD";  // U+FFFD

class InvalidUtf8 : public Cli {
protected:
    // A tiny GPT-2 checkpoint in `dir` (created).
    static std::string checkpoint(const fs::path& dir) {
        fs::create_directories(dir);
        tinygpt2::writeCheckpoint(dir, tinygpt2::weights(5));
        return dir.string();
    }
};

TEST_F(InvalidUtf8, ModelExportToAFile) {
    const std::string model = checkpoint(path("tiny"));
    const CliRun run = runCli({"--model", model, "--sentence", "\xff\xfe", "--export", path("out.json").string()});
    ASSERT_EQ(run.code, 0) << run.err;
    EXPECT_EQ(run.err, "");
    const json j = json::parse(readFile(path("out.json")));  // throws on text that is not UTF-8
    EXPECT_EQ(j.at("sentence"), kFffd + kFffd);
    EXPECT_EQ(j.at("token_ids"), json::array({255, 254}));  // byte b is id b in the tiny vocabulary
}

TEST_F(InvalidUtf8, ModelExportToStandardOutput) {
    const std::string model = checkpoint(path("tiny"));
    const CliRun run = runCli({"--model", model, "--sentence", "\xff\xfe", "--export", "-"});
    ASSERT_EQ(run.code, 0) << run.err;
    EXPECT_EQ(run.err, "");
    const json j = json::parse(run.out);
    EXPECT_EQ(j.at("sentence"), kFffd + kFffd);
    EXPECT_EQ(j.at("token_ids"), json::array({255, 254}));
}

// The folder's last component is the model's name: repaired in the JSON, and the run, its .npy
// folder and the benchmark's line all succeed.
TEST_F(InvalidUtf8, ModelFolderNamedWithByteFf) {
    const std::string model = checkpoint(path("tiny\xff"));
    const CliRun run = runCli({"--model", model, "--sentence", "\xff the", "--export", "-", "--export-npy", path("npy").string()});
    ASSERT_EQ(run.code, 0) << run.err;
    const json j = json::parse(run.out);
    EXPECT_EQ(j.at("model").at("name"), "tiny" + kFffd);
    EXPECT_EQ(j.at("sentence"), kFffd + " the");
    // The text files hold labels, which are valid UTF-8 already: json parses only valid UTF-8.
    for (const char* name : {"tokens.txt", "next_tokens.txt"}) EXPECT_NO_THROW(json(readFile(path("npy") / name)).dump()) << name;

    const CliRun bench = runCli({"--model", model, "--sentence", " the", "--bench", "--bench-seconds", "0.01"});
    ASSERT_EQ(bench.code, 0) << bench.err;
    EXPECT_EQ(json::parse(bench.out).at("model"), "tiny" + kFffd);
}

}  // namespace
}  // namespace attnviz::app::clitest
