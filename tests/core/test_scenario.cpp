// Scenario files: defaults, round trips, and errors that name the field.
#include "core/attention/permutation.hpp"
#include "core/base/error.hpp"
#include "core/scenario/model.hpp"
#include "core/scenario/presets.hpp"
#include "core/scenario/scenario.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <thread>

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

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

// The message of the InputError that `f` throws ("" if none).
template <class F>
std::string thrownBy(F f) {
    try {
        f();
    } catch (const InputError& e) {
        return e.message();
    }
    return "";
}

// Bytes this process has read so far, through read() and the like (/proc/self/io's rchar);
// 0 where the kernel does not say.
std::uint64_t bytesRead() {
    std::ifstream io("/proc/self/io");
    std::string key;
    std::uint64_t value = 0;
    while (io >> key >> value)
        if (key == "rchar:") return value;
    return 0;
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
              "s.json: W_Q: expected 2 x 2 (d_model x heads*d_k), got 1 x 3: 1 row, but X has 2 columns (d_model)");
    EXPECT_EQ(errorOf(R"({"X": [[1, 2, 3]], "d_k": 2, "W_Q": "identity"})"),
              "s.json: W_Q: \"identity\" needs a square matrix, but the shape is 3 x 2 (d_model x heads*d_k)");
    EXPECT_EQ(errorOf(R"({"sentence": "   "})"), "s.json: sentence: no tokens: the text is empty or only white space");
    EXPECT_EQ(errorOf(R"({"tokens": []})"), "s.json: tokens: no tokens: the text is empty or only white space");
    EXPECT_EQ(errorOf(R"({"d_model": 10, "heads": 3})"), "s.json: d_k: d_model 10 is not divisible by 3 heads; give d_k");
    EXPECT_EQ(errorOf(R"({"tokens": ["a","b"], "swaps": [[0, 2]]})"), "s.json: swaps[0]: [0, 2] is out of range: positions go from 0 to 1");
    EXPECT_EQ(errorOf(R"({"Q": [[1, 0]], "K": [[1, 0, 0]], "V": [[1]]})"), "s.json: K: expected 2 columns (d_k, as Q), got 3");
    EXPECT_EQ(errorOf(R"({"Q": [[1, 0]]})"), "s.json: K: required when Q is given");
    EXPECT_EQ(errorOf(R"({"tokens": ["a","b"], "padding": [5]})"), "s.json: padding[0]: key position 5 is out of range (2 keys)");
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
                                         "W_V": [[2,0],[0,2]], "W_O": "identity"})",
                                     "s");
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
    EXPECT_THROW(buildModel(parseScenario(R"({"Q": [[1]], "K": [[1],[2]], "V": [[1],[2]], "swaps": [[0, 1]]})", "s")), InputError);
}

TEST(Scenario, PositionalEncodingIsAddedNotConcatenated) {
    const Scenario s = parseScenario(R"({"sentence": "a b c", "d_model": 6, "positional": "sinusoidal"})", "s");
    const Model m = buildModel(s);
    EXPECT_EQ(m.x.cols(), 6);
    EXPECT_EQ(m.x, m.embeddings + sinusoidalEncoding(3, 6));
}

TEST(Scenario, OutputProjectionAppliesToExplicitQkv) {
    const Scenario s = parseScenario(R"({"Q": [[1, 0], [0, 1]], "K": [[1, 0], [0, 1]], "V": [[1, 2], [3, 4]],
                                         "W_O": [[10, 0, 1], [0, 10, 1]]})",
                                     "s");
    const Model m = buildModel(s);
    const Forward f = runForward(m, buildSettings(s, m));
    ASSERT_EQ(f.output.cols(), 3);
    EXPECT_LT(maxAbsDiff(f.output, f.heads[0].output * s.wo.value), 1e-5f);
    EXPECT_NEAR(f.output(0, 0), 16.605f, 1e-3f);  // numpy: A V W_O
    EXPECT_EQ(errorOf(R"({"Q": [[1]], "K": [[1]], "V": [[1, 2]], "W_O": [[1]]})"), "s.json: W_O: expected 2 x 1 (d_v x d_out), got 1 x 1");
}

TEST(Scenario, TemperatureBelowFloatRangeIsNamed) {
    EXPECT_EQ(errorOf(R"({"temperature": 1e-46})"), "s.json: temperature: 1e-46 is too close to 0 for a float (smallest: 1.4e-45)");
}

// Parsing costs about the text and its numbers: the matrices' numbers go straight into floats
// (counted), everything else into a JSON tree of bounded size; and a file over the size limit is
// refused without being read past it.
TEST(ScenarioFile, ParsingAScenarioIsBounded) {
    namespace fs = std::filesystem;
    const std::string tooLarge = ": larger than 256 MiB, the most a scenario file may be (is it the right file?)";
    const bool counted = bytesRead() > 0;
    // 1. A regular file over the limit: refused from its size, unread.
    const fs::path dir = fs::temp_directory_path() / ("attnviz_bounded_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const fs::path big = dir / "big.json";
    std::ofstream(big).put(' ');
    fs::resize_file(big, kMaxScenarioFileBytes + 1);  // sparse: no disk, no page cache
    std::uint64_t before = bytesRead();
    EXPECT_EQ(thrownBy([&] { loadScenarioFile(big.string()); }), big.string() + tooLarge);
    if (counted) {
        EXPECT_LT(bytesRead() - before, 4096u) << "bytes read from a file refused by its size";
    }
    fs::remove_all(dir);

    // 2. A device that never ends: read to one byte past the limit, not a block further.
    before = bytesRead();
    EXPECT_EQ(thrownBy([] { loadScenarioFile("/dev/zero"); }), "/dev/zero" + tooLarge);
    if (counted) {
        EXPECT_LE(bytesRead() - before, kMaxScenarioFileBytes + 1 + 4096);
    }

    // 3. A pipe whose writer never stops (--scenario <(yes)): the same, and the writer is left
    //    with at most what the pipe holds.
    int ends[2];
    ASSERT_EQ(::pipe(ends), 0);
    const auto capacity = static_cast<std::uint64_t>(::fcntl(ends[1], F_GETPIPE_SZ));
    std::atomic<std::uint64_t> written{0};
    std::thread writer([&] {
        sigset_t pipeSignal;
        sigemptyset(&pipeSignal);
        sigaddset(&pipeSignal, SIGPIPE);
        pthread_sigmask(SIG_BLOCK, &pipeSignal, nullptr);  // EPIPE when the readers are gone, not a signal
        const std::string chunk(1 << 16, ' ');
        for (ssize_t n; (n = ::write(ends[1], chunk.data(), chunk.size())) > 0;) written += static_cast<std::uint64_t>(n);
        ::close(ends[1]);
    });
    const std::string fd = "/dev/fd/" + std::to_string(ends[0]);
    before = bytesRead();
    EXPECT_EQ(thrownBy([&] { loadScenarioFile(fd); }), fd + tooLarge);
    const std::uint64_t read = bytesRead() - before;
    ::close(ends[0]);  // the last reader: the writer's next write fails
    writer.join();
    if (counted) {
        EXPECT_LE(read, kMaxScenarioFileBytes + 1 + 4096);
    }
    EXPECT_GT(written.load(), kMaxScenarioFileBytes);
    EXPECT_LE(written.load(), kMaxScenarioFileBytes + 1 + capacity);

    // 4. An X of 200,000 numbers is 200,000 floats; the tree holds the object, name and W_Q.
    nlohmann::json j = {{"name", "big"}, {"W_Q", "identity"}, {"X", nlohmann::json::array()}};
    for (int r = 0; r < 1000; ++r) {
        std::vector<double> row(200);
        for (int c = 0; c < 200; ++c) row[static_cast<std::size_t>(c)] = 0.001 * (r * 200 + c);
        j["X"].push_back(row);
    }
    ScenarioParseCounts counts;
    const Scenario s = parseScenario(j.dump(), "s.json", &counts);
    EXPECT_EQ(counts.matrixNumbers, 200000u);
    EXPECT_EQ(counts.jsonValues, 3u);
    ASSERT_TRUE(s.x.has_value());
    EXPECT_EQ(s.x->rows(), 1000);
    EXPECT_EQ(s.x->cols(), 200);
    EXPECT_EQ((*s.x)(999, 199), static_cast<float>(0.001 * 199999));
    EXPECT_EQ(*s.x, scenarioFromJson(j).x.value());

    // 5. The tree is bounded: a list no scenario needs is refused while it is read; an unknown
    //    key's value is skipped unread, whatever its size.
    std::string tokens = R"({"tokens": [)";
    for (std::size_t n = 0; n < kMaxScenarioJsonValues; ++n) tokens += n ? ",\"a\"" : "\"a\"";
    EXPECT_EQ(thrownBy([&] { parseScenario(tokens + "]}", "s.json"); }),
              "s.json: tokens: more than 1048576 values outside the matrices; no scenario holds that many (is it the right file?)");
    EXPECT_EQ(thrownBy([&] { parseScenario(R"({"name": )" + std::string(1500000, '[') + std::string(1500000, ']') + "}", "s.json"); }),
              "s.json: name: nested deeper than 64 levels of objects and lists; no file attnviz reads nests so deep");
    std::string wide = R"({"name": [)";
    for (std::size_t n = 0; n < kMaxScenarioJsonValues; ++n) wide += n ? ",[]" : "[]";
    EXPECT_EQ(thrownBy([&] { parseScenario(wide + "]}", "s.json"); }),
              "s.json: name: more than 1048576 values outside the matrices; no scenario holds that many (is it the right file?)");
    std::string unknown = R"({"colour": [)";
    for (std::size_t n = 0; n < kMaxScenarioJsonValues; ++n) unknown += n ? ",1" : "1";
    EXPECT_EQ(thrownBy([&] { parseScenario(unknown + "]}", "s.json"); }).rfind("s.json: colour: unknown key", 0), 0u);
}

// The matrices parseScenario reads from the parser's events are the ones scenarioFromJson reads
// from a tree, and so is every error, in the same order.
TEST(ScenarioFile, ParsedMatricesMatchTheJsonTree) {
    const char* cases[] = {
        R"({"X": [[1, 2], [3, 4]], "W_Q": "identity", "W_K": [[1, 0], [0, 1]], "W_V": [[2, 0], [0, 2]], "W_O": "none"})",
        R"({"Q": [[1, 0]], "K": [[1, 0]], "V": [[-0.0, 3.5e-45, 1e-45, 3.4028234e38]], "W_O": null})",
        R"({"tokens": ["a", "b"], "mask": [[0, 1], [1, 0]], "padding": [1], "swaps": [[0, 1]]})",
        R"({"X": [[1], [2]], "X": [[5, 6]]})",
        R"({"X": [[1], [2]], "X": "random"})",
        R"({"X": "random", "X": [[7]]})",
        R"({"X": []})",
        R"({"X": [[]]})",
        R"({"X": [1, 2]})",
        R"({"X": [[1, 2], 3]})",
        R"({"X": [[1, 2], [3]]})",
        R"({"X": [[1, "a"]]})",
        R"({"X": [[1, [2, [3]]], [1, 2]]})",
        R"({"X": [[1, {"a": [1]}]]})",
        R"({"X": [{"a": 1}]})",
        R"({"X": [[1, 2], [3, "a", 5]]})",
        R"({"X": [[1, 2], [3, "a"], [1]]})",
        R"({"X": [[1e39]]})",
        R"({"X": [[1e-46]]})",
        R"({"X": [[null, true]]})",
        R"({"X": "abc"})",
        R"({"X": {"rows": 2}})",
        R"({"mask": [[2]]})",
        R"({"W_Q": "zero"})",
        R"({"X": [[1, "a"]], "colour": [[1]]})",
        R"({"zz": [[[[1]]]], "X": [[1, "a"]]})",
        R"({"X": [[1, 2]], "W_Q": [[1, 2], [3, "x"]], "temperature": 0})",
        R"({"temperature": 0, "X": [[1, 2], [3]]})",
        R"([[1, 2]])",
        R"({"name": {"nested": [[1, 2]]}})",
    };
    for (const char* text : cases) {
        SCOPED_TRACE(text);
        std::string viaTree, viaEvents;
        nlohmann::json fromTree, fromEvents;
        try {
            fromTree = scenarioToJson(scenarioFromJson(nlohmann::json::parse(text)));
        } catch (const InputError& e) {
            viaTree = e.within("s.json").message();
        }
        try {
            fromEvents = scenarioToJson(parseScenario(text, "s.json"));
        } catch (const InputError& e) {
            viaEvents = e.message();
        }
        EXPECT_EQ(viaEvents, viaTree);
        EXPECT_EQ(fromEvents, fromTree);
    }
}
