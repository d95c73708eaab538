// Scenario files: defaults, round trips, and errors that name the field.
#include "core/error.hpp"
#include "core/model.hpp"
#include "core/permutation.hpp"
#include "core/presets.hpp"
#include "core/scenario.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using namespace attnviz::core;

namespace {

// The message of the InputError that parsing and building `text` throws ("" if none).
std::string errorOf(const std::string& text) {
    try {
        const Scenario s = parseScenario(text, "s.json");
        try {
            const Model m = buildModel(s);
            buildSettings(s, m);
        } catch (const InputError& e) {
            throw e.within("s.json");
        }
    } catch (const InputError& e) {
        return e.message();
    }
    return "";
}

}  // namespace

TEST(Scenario, EmptyObjectIsTheDefaultSentence) {
    const Scenario s = parseScenario("{}", "s.json");
    const Model m = buildModel(s);
    EXPECT_EQ(m.queryTokens, (std::vector<std::string>{"the", "cat", "sat", "on", "the", "mat"}));
    EXPECT_EQ(m.dModel, 16);
    EXPECT_EQ(m.heads, 1);
    EXPECT_EQ(m.dk, 16);
    EXPECT_EQ(m.dv, 16);
    EXPECT_EQ(m.wo.size(), 0);
    const Settings st = buildSettings(s, m);
    EXPECT_EQ(st.temperature, 1.0f);
    EXPECT_TRUE(st.scaled);
    EXPECT_FALSE(st.causal);
}

TEST(Scenario, ErrorsNameTheField) {
    EXPECT_EQ(errorOf(R"({"colour": 1})").rfind("s.json: colour: unknown key", 0), 0u) << errorOf(R"({"colour": 1})");
    EXPECT_EQ(errorOf(R"({"d_model": 0})"), "s.json: d_model: must be at least 1, got 0");
    EXPECT_EQ(errorOf(R"({"d_model": -3})"), "s.json: d_model: must be at least 1, got -3");
    EXPECT_EQ(errorOf(R"({"d_model": 2.5})"), "s.json: d_model: expected a whole number, got 2.5");
    EXPECT_EQ(errorOf(R"({"heads": "two"})"), "s.json: heads: expected a whole number, got a string");
    EXPECT_EQ(errorOf(R"({"temperature": 0})"), "s.json: temperature: must be greater than 0, got 0");
    EXPECT_EQ(errorOf("{\"temperature\":\n 1e400}"), "s.json: malformed JSON at line 2, column 2: number 1e400 is out of range");
    EXPECT_EQ(errorOf(R"({"tokenizer": "bpe"})"), "s.json: tokenizer: expected \"word\" or \"char\", got \"bpe\"");
    EXPECT_EQ(errorOf(R"({"X": [[1, 2], [3]]})"), "s.json: X: ragged rows: row 1 has 1 values, row 0 has 2");
    EXPECT_EQ(errorOf(R"({"X": [[1, "a"]]})"), "s.json: X[0][1]: expected a number, got a string");
    EXPECT_EQ(errorOf(R"({"X": [[1, 2]], "W_Q": [[1, 0, 0]]})"),
              "s.json: W_Q: expected 2 x 2 (d_model x heads*d_k), got 1 x 3");
    EXPECT_EQ(errorOf(R"({"X": [[1, 2, 3]], "d_k": 2, "W_Q": "identity"})"),
              "s.json: W_Q: \"identity\" needs a square matrix, but the shape is 3 x 2 (d_model x heads*d_k)");
    EXPECT_EQ(errorOf(R"({"sentence": "   "})"), "s.json: sentence: no tokens: the text is empty or only white space");
    EXPECT_EQ(errorOf(R"({"tokens": []})"), "s.json: tokens: no tokens: the text is empty or only white space");
    EXPECT_EQ(errorOf(R"({"d_model": 10, "heads": 3})"), "s.json: d_k: d_model 10 is not divisible by 3 heads; give d_k");
    EXPECT_EQ(errorOf(R"({"tokens": ["a","b"], "swaps": [[0, 2]]})"),
              "s.json: swaps[0]: [0, 2] is out of range: positions go from 0 to 1");
    EXPECT_EQ(errorOf(R"({"Q": [[1, 0]], "K": [[1, 0, 0]], "V": [[1]]})"),
              "s.json: K: expected 2 columns (d_k, as Q), got 3");
    EXPECT_EQ(errorOf(R"({"Q": [[1, 0]]})"), "s.json: K: required when Q is given");
    EXPECT_EQ(errorOf(R"({"tokens": ["a","b"], "padding": [5]})"),
              "s.json: padding[0]: key position 5 is out of range (2 keys)");
    EXPECT_EQ(errorOf(R"({"tokens": ["a","b"], "mask": [[0, 1]]})"), "s.json: mask: expected 2 x 2 (queries x keys), got 1 x 2");
    EXPECT_EQ(errorOf(R"({"tokens": ["a"], "mask": [[2]]})"), "s.json: mask[0][0]: expected 0 (allowed) or 1 (blocked), got 2");
    EXPECT_EQ(errorOf(R"({"embedding": "onehot", "d_model": 2})"),
              "s.json: d_model: one-hot embedding needs at least 5 dimensions (one per distinct token), got 2");
    EXPECT_EQ(errorOf(R"([1, 2])"), "s.json: a scenario must be a JSON object, got an array");
}

TEST(Scenario, MalformedJsonNamesLineAndColumn) {
    const std::string msg = errorOf("{\n  \"d_model\": 4,\n  \"heads\" 2\n}");
    EXPECT_EQ(msg.rfind("s.json: malformed JSON at line 3", 0), 0u) << msg;
    EXPECT_EQ(errorOf("{\"d_model\": ").rfind("s.json: malformed JSON at line 1", 0), 0u);
}

TEST(Scenario, AbsurdSizesAreRefusedBeforeAllocating) {
    const std::string msg = errorOf(R"({"d_model": 1000000000})");
    EXPECT_EQ(msg, "s.json: d_model: 1000000000 is over the limit of 16384");
    Scenario s;
    s.tokens = std::vector<std::string>(8000, "x");
    s.heads = 64;
    s.dModel = 64;
    try {
        buildModel(s);
        FAIL() << "expected a memory refusal";
    } catch (const InputError& e) {
        EXPECT_NE(e.message().find("this needs about"), std::string::npos) << e.message();
        EXPECT_NE(e.message().find("GiB"), std::string::npos) << e.message();
    }
}

TEST(Scenario, RoundTripThroughJson) {
    for (const std::string& id : presetIds()) {
        SCOPED_TRACE(id);
        const Scenario a = loadPreset(id);
        const Scenario b = scenarioFromJson(scenarioToJson(a));
        const Model ma = buildModel(a), mb = buildModel(b);
        EXPECT_EQ(ma.queryTokens, mb.queryTokens);
        EXPECT_EQ(ma.keyTokens, mb.keyTokens);
        const Forward fa = runForward(ma, buildSettings(a, ma)), fb = runForward(mb, buildSettings(b, mb));
        EXPECT_EQ(fa.output, fb.output);
        EXPECT_EQ(a.name, b.name);
        EXPECT_EQ(a.swaps, b.swaps);
    }
}

TEST(Scenario, IdentityAndExplicitWeights) {
    const Scenario s = parseScenario(R"({"X": [[1,2],[3,4]], "W_Q": "identity", "W_K": [[1,0],[0,1]],
                                         "W_V": [[2,0],[0,2]], "W_O": "identity"})", "s");
    const Model m = buildModel(s);
    EXPECT_EQ(m.wq, Mat::Identity(2, 2));
    EXPECT_EQ(m.wv(0, 0), 2.0f);
    EXPECT_EQ(m.wo, Mat::Identity(2, 2));
    EXPECT_EQ(m.queryTokens, (std::vector<std::string>{"x1", "x2"}));
}

TEST(Scenario, CrossAttentionLabels) {
    const Model m = buildModel(loadPreset("seed003-exam"));
    EXPECT_TRUE(m.explicitQkv);
    EXPECT_EQ(m.keyTokens, (std::vector<std::string>{"k1", "k2", "k3"}));
    EXPECT_THROW(buildModel(parseScenario(R"({"Q": [[1]], "K": [[1],[2]], "V": [[1],[2]], "swaps": [[0, 1]]})", "s")),
                 InputError);
}

TEST(Scenario, PositionalEncodingIsAddedNotConcatenated) {
    const Scenario s = parseScenario(R"({"sentence": "a b c", "d_model": 6, "positional": "sinusoidal"})", "s");
    const Model m = buildModel(s);
    EXPECT_EQ(m.x.cols(), 6);
    EXPECT_EQ(m.x, m.embeddings + sinusoidalEncoding(3, 6));
}

TEST(Scenario, OutputProjectionAppliesToExplicitQkv) {
    const Scenario s = parseScenario(R"({"Q": [[1, 0], [0, 1]], "K": [[1, 0], [0, 1]], "V": [[1, 2], [3, 4]],
                                         "W_O": [[10, 0, 1], [0, 10, 1]]})", "s");
    const Model m = buildModel(s);
    const Forward f = runForward(m, buildSettings(s, m));
    ASSERT_EQ(f.output.cols(), 3);
    EXPECT_LT(maxAbsDiff(f.output, f.heads[0].output * s.wo.value), 1e-5f);
    EXPECT_NEAR(f.output(0, 0), 16.605f, 1e-3f);  // numpy: A V W_O
    EXPECT_EQ(errorOf(R"({"Q": [[1]], "K": [[1]], "V": [[1, 2]], "W_O": [[1]]})"),
              "s.json: W_O: expected 2 x 1 (d_v x d_out), got 1 x 1");
}

TEST(Scenario, TemperatureBelowFloatRangeIsNamed) {
    EXPECT_EQ(errorOf(R"({"temperature": 1e-46})"), "s.json: temperature: 1e-46 is too close to 0 for a float (smallest: 1.4e-45)");
}
