// A model folder whose tokenizer.json would run away: a split pattern that backtracks is refused
// within its text's budget, naming tokenizer.json and the field, and a pipeline nested deep is
// refused while the file is parsed; both as one error line with exit code 2.
#include "cli_harness.hpp"
#include "tests/tiny_llama.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

namespace attnviz::app {
namespace {

using namespace clitest;

class CliTokenizer : public Cli {
protected:
    std::string model(const nlohmann::json& preTokenizer) {
        const fs::path dir = path("llama");
        fs::create_directories(dir);
        const nlohmann::json c = tinyllama::config("llama", {{"max_position_embeddings", 8192}});
        tinyllama::writeCheckpoint(dir, c, tinyllama::weights(c, 4));
        nlohmann::json tokenizer = nlohmann::json::parse(tinyllama::tokenizerJson());
        tokenizer["pre_tokenizer"] = preTokenizer;
        writeFile(dir / "tokenizer.json", tokenizer.dump());
        return dir.string();
    }
};

TEST_F(CliTokenizer, ABacktrackingPatternIsRefusedNamingTheFile) {
    const nlohmann::json split = {
        {"type", "Split"}, {"pattern", {{"Regex", "(?:a|a){1,22}c|a"}}}, {"behavior", "Isolated"}, {"invert", false}};
    const nlohmann::json bytes = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}};
    const std::string dir = model({{"type", "Sequence"}, {"pretokenizers", {split, bytes}}});
    const std::string line = expectError(runCli({"--model", dir, "--sentence", std::string(5000, 'a'), "--export-stats", "-"}));
    const std::string where = (fs::path(dir) / "tokenizer.json").string() + ": pre_tokenizer.pretokenizers[0].pattern: backtracks: ";
    EXPECT_NE(line.find(where), std::string::npos) << line;
    // a short sentence is within its budget
    EXPECT_EQ(runCli({"--model", dir, "--sentence", "aaaa", "--export-stats", "-"}).code, 0);
}

TEST_F(CliTokenizer, APipelineNestedDeepIsRefusedWhileParsed) {
    nlohmann::json pre = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
    const std::string dir = model(pre);
    std::string text = testfs::readFile(fs::path(dir) / "tokenizer.json");
    std::string open, close;
    for (int d = 0; d < 10000; ++d) open += R"({"type": "Sequence", "pretokenizers": [)", close += "]}";
    const std::string key = "\"pre_tokenizer\":";
    const std::size_t at = text.find(key);
    ASSERT_NE(at, std::string::npos);
    text.insert(at + key.size(), open + R"({"type": "ByteLevel", "add_prefix_space": false, "use_regex": true})" + close + ",\"x\":");
    writeFile(fs::path(dir) / "tokenizer.json", text);
    EXPECT_EQ(expectError(runCli({"--model", dir, "--sentence", "a", "--export-stats", "-"})),
              "--model: " + (fs::path(dir) / "tokenizer.json").string() +
                  ": nested deeper than 64 levels of objects and lists; no file attnviz reads nests so deep");
}

}  // namespace
}  // namespace attnviz::app
