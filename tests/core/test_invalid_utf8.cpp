// Text that is not valid UTF-8 (a sentence from the command line, a folder's name) in the JSON
// attnviz writes: always valid UTF-8, each byte that is not part of a whole character written as
// U+FFFD.
#include "core/base/error.hpp"
#include "core/base/files.hpp"
#include "core/io/export.hpp"
#include "core/models/loaded_model.hpp"
#include "core/scenario/model.hpp"
#include "core/scenario/scenario.hpp"
#include "tests/test_folder.hpp"
#include "tests/tiny_gpt2.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace attnviz::core {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// U+FFFD, written out here rather than by the repair under test.
const std::string kFffd = "\xEF\xBF\xBD";

class InvalidUtf8 : public testfs::TestFolder {
protected:
    // A model's export as JSON text, from a tiny checkpoint in `dir`.
    static std::string modelExport(const fs::path& dir, const std::string& sentence) {
        tinygpt2::writeCheckpoint(dir, tinygpt2::weights(3));
        Scenario s;
        s.model = dir.string();
        s.sentence = sentence;
        s.causal = true;
        const LoadedModel loaded = loadModel(s);
        StringSink sink;
        writeModelExportJson(sink, s, loaded);
        return sink.text;
    }
};

TEST_F(InvalidUtf8, ModelExportOfAnInvalidSentenceIsValidJson) {
    const std::string text = modelExport(m_dir, "\xff\xfe");
    const json j = json::parse(text);  // nlohmann refuses text that is not valid UTF-8
    EXPECT_EQ(j.at("sentence"), kFffd + kFffd);
    // The exact input is in the ids: the tiny vocabulary gives byte b the id b.
    EXPECT_EQ(j.at("token_ids"), json::array({255, 254}));
    EXPECT_EQ(j.at("tokens"), json::array({"⟨FF⟩", "⟨FE⟩"}));  // byte tokens as their bytes
}

TEST_F(InvalidUtf8, ModelFolderNamedWithByteFfIsRepairedInTheExport) {
    const fs::path dir = m_dir / "tiny\xff";
    ASSERT_TRUE(fs::create_directories(dir));
    const json j = json::parse(modelExport(dir, " the"));
    EXPECT_EQ(j.at("model").at("name"), "tiny" + kFffd);
    EXPECT_EQ(j.at("sentence"), " the");
}

// Explicit tokens beside explicit Q, K, V are labels as given: every export writes them as they
// are drawn, valid UTF-8, the JSON and the text files and the CSV alike.
TEST_F(InvalidUtf8, ScenarioExportsOfExplicitTokens) {
    Scenario s;
    s.q = Mat{{1.0f, 0.0f}, {0.0f, 1.0f}};
    s.k = *s.q;
    s.v = *s.q;
    s.tokens = std::vector<std::string>{"\xff", "b"};
    s.keyTokens = std::vector<std::string>{"k\xfe", "l"};
    const Model model = buildModel(s);
    const Forward forward = runForward(model, buildSettings(s, model));
    StringSink sink;
    writeExportJson(sink, model, forward);
    const json j = json::parse(sink.text);
    EXPECT_EQ(j.at("tokens"), json::array({kFffd, "b"}));
    EXPECT_EQ(j.at("key_tokens"), json::array({"k" + kFffd, "l"}));

    const std::string csv = weightsCsv(model, forward.heads[0].weights);
    EXPECT_EQ(csv.substr(0, csv.find('\n')), "query\\key,k" + kFffd + ",l");
    EXPECT_EQ(csv.substr(csv.find('\n') + 1, 4), kFffd + ",");
    FileBatch batch;
    exportNpyDir(batch, path("npy").string(), model, forward);
    batch.commit();
    EXPECT_EQ(testfs::readFile(path("npy") / "tokens.txt"), kFffd + "\nb\n");
    EXPECT_EQ(testfs::readFile(path("npy") / "key_tokens.txt"), "k" + kFffd + "\nl\n");
}

// Every JSON writer goes through the same dump: a key or a value that is not UTF-8 is repaired,
// never a throw (nlohmann's dump() throws type_error 316).
TEST_F(InvalidUtf8, PrettyJsonRepairsKeysAndValues) {
    const json j = {{"k\xff", "v\xfe"}, {"list", {"ok", "\xc3"}}};
    const json back = json::parse(prettyJson(j));
    EXPECT_EQ(back.at("k" + kFffd), "v" + kFffd);
    EXPECT_EQ(back.at("list"), json::array({"ok", kFffd}));
}

}  // namespace
}  // namespace attnviz::core
