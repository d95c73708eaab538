// Text that is not valid UTF-8 (a sentence from the command line, a folder's name) in the JSON
// attnviz writes: always valid UTF-8, each byte that is not part of a whole character written as
// U+FFFD, and where a saved scenario must restore the same input, its exact bytes beside it.
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
    // A message of InputError, or "(no error)".
    static std::string parseError(const json& j) {
        try {
            parseScenario(j.dump(), "s.json");
        } catch (const InputError& e) {
            return e.message();
        }
        return "(no error)";
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

// A scenario as the app saves it: the text repaired, the exact bytes beside it as hex, and the
// bytes preferred when it is read back.
TEST_F(InvalidUtf8, SavedScenarioRestoresTheExactBytes) {
    Scenario s;
    s.name = "name \xff";
    s.description = "caf\xc3";                                    // half of 'é'
    s.sentence = "a \xff\xfe b\xe2\x82";                          // two bytes, then a character cut short
    s.keyTokens = std::vector<std::string>{"k", "\xed\xa0\x80"};  // a surrogate is not UTF-8
    const std::string text = prettyJson(scenarioToJson(s));
    const json j = json::parse(text);
    EXPECT_EQ(j.at("name"), "name " + kFffd);
    EXPECT_EQ(j.at("name_bytes"), "6e616d6520ff");
    EXPECT_EQ(j.at("description"), "caf" + kFffd);
    EXPECT_EQ(j.at("description_bytes"), "636166c3");
    EXPECT_EQ(j.at("sentence"), "a " + kFffd + kFffd + " b" + kFffd + kFffd);
    EXPECT_EQ(j.at("sentence_bytes"), "6120fffe2062e282");
    EXPECT_EQ(j.at("key_tokens"), json::array({"k", kFffd + kFffd + kFffd}));
    EXPECT_EQ(j.at("key_tokens_bytes"), json::array({"6b", "eda080"}));
    const Scenario back = parseScenario(text, "s.json");
    EXPECT_EQ(back.name, s.name);
    EXPECT_EQ(back.description, s.description);
    EXPECT_EQ(back.sentence, s.sentence);
    EXPECT_EQ(back.keyTokens, s.keyTokens);
    EXPECT_EQ(scenarioToJson(scenarioFromJson(j)), j);

    // Explicit tokens, and a model folder whose name holds 0xFF.
    Scenario t;
    t.tokens = std::vector<std::string>{"\xff", kFffd, "x"};  // a byte and the character it is shown as stay two tokens
    const json tj = json::parse(prettyJson(scenarioToJson(t)));
    EXPECT_EQ(tj.at("tokens"), json::array({kFffd, kFffd, "x"}));
    EXPECT_EQ(tj.at("tokens_bytes"), json::array({"ff", "efbfbd", "78"}));
    EXPECT_EQ(parseScenario(tj.dump(), "t.json").tokens, t.tokens);
    Scenario m;
    m.model = "/models/tiny\xff";
    m.sentence = "\xff";
    const json mj = json::parse(prettyJson(scenarioToJson(m)));
    EXPECT_EQ(mj.at("model_bytes"), "2f6d6f64656c732f74696e79ff");
    EXPECT_EQ(parseScenario(mj.dump(), "m.json").model, m.model);
    EXPECT_EQ(parseScenario(mj.dump(), "m.json").sentence, m.sentence);

    // Valid text is written as before, with nothing beside it.
    s = Scenario{};
    s.name = "caf\xc3\xa9 " + kFffd;
    s.sentence = "the cat";
    const json valid = scenarioToJson(s);
    EXPECT_EQ(valid.at("name"), s.name);
    EXPECT_FALSE(valid.contains("name_bytes"));
    EXPECT_FALSE(valid.contains("sentence_bytes"));
}

// The bytes must be what the text beside them shows: a file edited by hand in one place and not
// the other is an error naming the key, as is anything that is not hex or has no text beside it.
TEST_F(InvalidUtf8, BytesBesideTheTextAreChecked) {
    EXPECT_EQ(
        parseError({{"sentence", "hello"}, {"sentence_bytes", "fffe"}}),
        "s.json: sentence_bytes: these bytes are shown as '" + kFffd + kFffd + "', not as the sentence beside them (edit or remove one)");
    EXPECT_EQ(parseError({{"sentence", kFffd}, {"sentence_bytes", "fg"}}),
              "s.json: sentence_bytes: expected the text's bytes as hex, two digits a byte");
    EXPECT_EQ(parseError({{"sentence", kFffd}, {"sentence_bytes", "f"}}),
              "s.json: sentence_bytes: expected the text's bytes as hex, two digits a byte");
    EXPECT_EQ(parseError({{"sentence_bytes", "ff"}}), "s.json: sentence_bytes: only beside sentence");
    EXPECT_EQ(parseError({{"sentence", kFffd}, {"sentence_bytes", 255}}), "s.json: sentence_bytes: expected a string, got an integer");
    EXPECT_EQ(parseError({{"tokens", {"a", "b"}}, {"tokens_bytes", {"61"}}}),
              "s.json: tokens_bytes: has 1 item, tokens has 2 (one for each)");
    EXPECT_EQ(parseError({{"tokens", {"a", kFffd}}, {"tokens_bytes", {"61", "fe"}}}), "(no error)");
    // Upper-case hex reads too.
    EXPECT_EQ(parseScenario(json({{"sentence", kFffd}, {"sentence_bytes", "FF"}}).dump(), "s.json").sentence, "\xff");
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
