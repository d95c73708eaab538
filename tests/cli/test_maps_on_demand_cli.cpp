// --keep-maps: a model's pass keeps every map while they are small enough, else makes each on
// demand from its kept q, k and log-sum-exp. Every export of every layer written from a pass that
// keeps no maps equals the one written from a pass that keeps them (to float rounding); --bench
// names the strategy; the window's state types at the end and runs what-if passes on demand too.
#include "cli_harness.hpp"

#include "app/state/actions.hpp"
#include "app/state/head_summary.hpp"
#include "app/state/source.hpp"
#include "app/state/what_if.hpp"
#include "core/models/loaded_model.hpp"
#include "tests/render/figure_checks.hpp"
#include "tests/tiny_llama.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <span>

namespace attnviz::app {
namespace {

using namespace clitest;

const std::string kSentence = "the cat sat on the mat. the cat sat on the mat. the dog";

class KeepMaps : public Cli {
protected:
    void SetUp() override {
        Cli::SetUp();
        fs::create_directories(m_dir / "model");
        const nlohmann::json c = tinyllama::config("mistral", {{"sliding_window", 12}});
        tinyllama::writeCheckpoint(m_dir / "model", c, tinyllama::weights(c, 5));
    }
    std::vector<std::string> model() const { return {"--model", (m_dir / "model").string(), "--sentence", kSentence}; }
};

std::vector<float> npyFloats(const std::string& bytes) {
    const std::size_t header = static_cast<unsigned char>(bytes[8]) + 256U * static_cast<unsigned char>(bytes[9]) + 10;
    std::vector<float> out((bytes.size() - header) / sizeof(float));
    std::memcpy(out.data(), bytes.data() + header, out.size() * sizeof(float));
    return out;
}

std::vector<long long> npyShape(const std::string& bytes) {
    return core::parseNpyHeader(std::as_bytes(std::span(bytes.data(), bytes.size())), "attentions.npy").shape;
}

std::vector<double> csvNumbers(const std::string& text) {
    std::vector<double> out;
    for (const std::string& line : splitLines(text)) {
        std::stringstream in(line);
        for (std::string f; std::getline(in, f, ',');) {
            char* end = nullptr;
            const double v = std::strtod(f.c_str(), &end);
            if (end != f.c_str()) out.push_back(v);
        }
    }
    return out;
}

TEST_F(KeepMaps, EveryExportOfAPassThatKeepsNoMapsIsThatOfOneThatDoes) {
    const auto exports = [&](const std::string& tag, const std::vector<std::string>& extra) {
        std::vector<std::string> args = model();
        args.insert(args.end(), extra.begin(), extra.end());
        args.insert(args.end(), {"--export-npy", path(tag + "-npy").string(), "--export-stats", path(tag + ".csv").string(),
                                 "--export-model-view", path(tag + "-model.png").string(), "--export", path(tag + ".json").string()});
        const CliRun run = runCli(args);
        ASSERT_EQ(run.code, 0) << run.err;
    };
    exports("kept", {});
    exports("made", {"--keep-maps", "0"});
    const std::vector<float> kept = npyFloats(readFile(path("kept-npy") / "attentions.npy"));
    const std::vector<float> made = npyFloats(readFile(path("made-npy") / "attentions.npy"));
    ASSERT_EQ(made.size(), kept.size());
    const auto t = static_cast<std::size_t>(tinyllama::kLayers * tinyllama::kHeads);
    ASSERT_GT(kept.size(), t * 40 * 40);
    float gap = 0;
    for (std::size_t k = 0; k < kept.size(); ++k) gap = std::max(gap, std::abs(made[k] - kept[k]));
    EXPECT_LT(gap, 2e-7f);
    EXPECT_GT(*std::max_element(kept.begin(), kept.end()), 0.3f);
    const std::vector<double> a = csvNumbers(readFile(path("kept.csv"))), b = csvNumbers(readFile(path("made.csv")));
    ASSERT_EQ(a.size(), b.size());
    ASSERT_GE(a.size(), t * 10);  // every head's row, and the lines around them
    for (std::size_t k = 0; k < a.size(); ++k) EXPECT_NEAR(b[k], a[k], 2e-5 * (1 + std::abs(a[k]))) << k;
    const nlohmann::json ja = nlohmann::json::parse(readFile(path("kept.json"))), jb = nlohmann::json::parse(readFile(path("made.json")));
    EXPECT_EQ(ja.at("tokens"), jb.at("tokens"));
    EXPECT_EQ(ja.at("next_tokens"), jb.at("next_tokens"));
    const nlohmann::json& wa = ja.at("layers").at(1).at("heads").at(3).at("weights");
    const nlohmann::json& wb = jb.at("layers").at(1).at("heads").at(3).at("weights");
    ASSERT_EQ(wa.size(), wb.size());
    for (std::size_t i = 0; i < wa.size(); ++i)
        for (std::size_t j = 0; j < wa[i].size(); ++j) EXPECT_NEAR(wb[i][j].get<double>(), wa[i][j].get<double>(), 1.01e-4);
    // The model view's figure: the same pixels, but for a colour one step of the map away where a
    // thumbnail's value sits on the edge between two (the values agree to float rounding).
    const figurecheck::Image pa = figurecheck::decodePng(readFile(path("kept-model.png")));
    const figurecheck::Image pb = figurecheck::decodePng(readFile(path("made-model.png")));
    ASSERT_EQ(pb.width, pa.width);
    ASSERT_EQ(pb.height, pa.height);
    ASSERT_GT(pa.width, 100);
    int largest = 0;
    std::size_t differ = 0;
    for (std::size_t k = 0; k < pa.rgba.size(); ++k) {
        const int d = std::abs(static_cast<int>(pa.rgba[k]) - static_cast<int>(pb.rgba[k]));
        largest = std::max(largest, d);
        differ += d > 0 ? 1 : 0;
    }
    EXPECT_LE(largest, 8);
    EXPECT_LT(differ, pa.rgba.size() / 1000);
}

TEST_F(KeepMaps, OneHeadsMapIsWrittenAloneAndEveryMapPastTheLimitIsRefused) {
    std::vector<std::string> every = model();
    every.insert(every.end(), {"--export-npy", path("every").string()});
    ASSERT_EQ(runCli(every).code, 0);
    std::vector<std::string> one = model();
    one.insert(one.end(), {"--keep-maps", "0", "--layer", "1", "--head", "3", "--export-npy", path("one").string()});
    const CliRun run = runCli(one);
    ASSERT_EQ(run.code, 0) << run.err;
    const std::string file = readFile(path("one") / "attentions.npy");
    const std::vector<float> all = npyFloats(readFile(path("every") / "attentions.npy")), head = npyFloats(file);
    const auto t = static_cast<std::size_t>(std::lround(std::sqrt(static_cast<double>(head.size()))));
    ASSERT_GT(t, 30u);
    ASSERT_EQ(npyShape(file), (std::vector<long long>{1, 1, static_cast<long long>(t), static_cast<long long>(t)}));
    ASSERT_EQ(all.size(), tinyllama::kLayers * tinyllama::kHeads * t * t);
    ASSERT_EQ(head.size(), t * t);
    const std::size_t at = (1 * tinyllama::kHeads + 3) * t * t;  // layer 1, head 3 of [layers, heads, T, T]
    float gap = 0;
    for (std::size_t k = 0; k < head.size(); ++k) gap = std::max(gap, std::abs(head[k] - all[at + k]));
    EXPECT_LT(gap, 2e-7f);
    const std::string kv = readFile(path("one") / "kv_head.npy");
    ASSERT_GE(kv.size(), 8u);
    EXPECT_EQ(kv[kv.size() - 8], 1);  // query head 3 reads kv head 1 (4 heads over 2)
    EXPECT_EQ(readFile(path("one") / "tokens.txt"), readFile(path("every") / "tokens.txt"));

    // Eight layers over 400 tokens: every map is 20 MiB, the pass that makes them on demand and
    // the shown layer a quarter of that.
    const nlohmann::json c = tinyllama::config("llama", {{"num_hidden_layers", 8}, {"max_position_embeddings", 512}});
    fs::create_directories(m_dir / "deep-model");
    tinyllama::writeCheckpoint(m_dir / "deep-model", c, tinyllama::weights(c, 5));
    const std::vector<std::string> deep = {"--model", (m_dir / "deep-model").string(), "--sentence", std::string(400, 'a'), "--max-memory",
                                           "12"};
    std::vector<std::string> args = deep;
    args.insert(args.end(), {"--export-npy", path("deep").string(), "--layer", "7", "--head", "0"});
    const CliRun small = runCli(args);
    ASSERT_EQ(small.code, 0) << small.err;
    EXPECT_EQ(npyShape(readFile(path("deep") / "attentions.npy")), (std::vector<long long>{1, 1, 400, 400}));
    fs::remove_all(path("deep"));
    for (const std::vector<std::string>& asked :
         {std::vector<std::string>{"--export-npy", path("deep").string()}, std::vector<std::string>{"--export", path("deep.json").string()},
          std::vector<std::string>{"--export-npy", path("deep").string(), "--head", "-1"}}) {
        args = deep;
        args.insert(args.end(), asked.begin(), asked.end());
        const std::string line = expectError(runCli(args));
        EXPECT_EQ(line, asked[0] +
                            ": every map of every layer is 19.5 MiB (8 layers x 4 heads x 400 x 400 floats), over the limit of "
                            "12.0 MiB (--max-memory); --export-npy DIR --layer L --head H writes one head's");
        EXPECT_FALSE(fs::exists(path("deep")));
        EXPECT_FALSE(fs::exists(path("deep.json")));
    }
}

TEST_F(KeepMaps, BenchNamesTheStrategyAndTheFlagIsChecked) {
    for (const bool keep : {true, false}) {
        std::vector<std::string> args = model();
        args.insert(args.end(), {"--bench", "--bench-seconds", "0.01"});
        if (!keep) args.insert(args.end(), {"--keep-maps", "0"});
        const CliRun run = runCli(args);
        ASSERT_EQ(run.code, 0) << run.err;
        const nlohmann::json j = nlohmann::json::parse(run.out);
        EXPECT_EQ(j.at("maps"), keep ? "kept" : "on demand");
        for (const char* key : {"sweep_ms", "pool_ms", "zoom_ms"})
            EXPECT_TRUE(j.at(key).is_number()) << key;  // reported; their values are timings, for benchmarks alone
        EXPECT_EQ(j.at("attention"), "row blocks");     // a short input
        const core::decoder::Config c = core::openCheckpoint((m_dir / "model").string())->config();
        const long long tokens = j.at("T").get<long long>();
        EXPECT_DOUBLE_EQ(
            j.at("kept_mib").get<double>(),
            static_cast<double>(core::keptModelBytes(c, tokens, keep ? core::decoder::PassMaps::Kept : core::decoder::PassMaps::OnDemand)) /
                (1024.0 * 1024.0));
    }
    std::vector<std::string> args = model();
    args.insert(args.end(), {"--keep-maps", "-1", "--export", "-"});
    EXPECT_EQ(expectError(runCli(args)).rfind("--keep-maps: ", 0), 0u);
}

TEST_F(KeepMaps, TheWindowsStateTypesAndEditsOnDemand) {
    core::Scenario s;
    s.model = core::modelFolder((m_dir / "model").string());
    s.sentence = kSentence;
    s.causal = true;
    core::Limits onDemand;
    onDemand.keptMapsBytes = 0;
    AppState state = makeState(s, onDemand);
    recompute(state);
    ASSERT_TRUE(state.loaded);
    EXPECT_EQ(state.loaded.run->maps(), core::decoder::PassMaps::OnDemand);
    // The limit is the maps' bytes: exactly that many keeps them.
    const auto tokens = static_cast<long long>(state.loaded.run->tokens());
    core::Limits exact;
    exact.keptMapsBytes = core::everyMapBytes(state.loaded.checkpoint->config(), tokens);
    EXPECT_EQ(core::passMapsFor(state.loaded.checkpoint->config(), tokens, exact.keptMapsBytes), core::decoder::PassMaps::Kept);
    EXPECT_EQ(core::passMapsFor(state.loaded.checkpoint->config(), tokens, exact.keptMapsBytes - 1), core::decoder::PassMaps::OnDemand);
    AppState keptState = makeState(s, exact);
    recompute(keptState);
    EXPECT_EQ(keptState.loaded.run->maps(), core::decoder::PassMaps::Kept);
    // The model view's statistics, the same either way.
    ASSERT_TRUE(summarizeHeads(state));
    ASSERT_TRUE(summarizeHeads(keptState));
    for (std::size_t k = 0; k < state.headSummary.stats.size(); ++k)
        EXPECT_NEAR(state.headSummary.stats[k].entropy, keptState.headSummary.stats[k].entropy, 1e-6) << k;
    // Typing at the end keeps making the maps on demand; so does a what-if pass.
    s.sentence = kSentence + "s";
    AppState typed = makeState(s, onDemand, nullptr, &state);
    EXPECT_EQ(typed.loaded.appendedPasses, state.loaded.appendedPasses + 1);
    EXPECT_EQ(typed.loaded.run->maps(), core::decoder::PassMaps::OnDemand);
    s.ablations = {{1, 2, false}};
    AppState edited = makeState(s, onDemand, nullptr, &typed);
    ASSERT_TRUE(edited.loaded.edited());
    EXPECT_EQ(edited.loaded.run->maps(), core::decoder::PassMaps::OnDemand);
    const core::Mat moved = whatIfDifference(edited, 1, 2);
    EXPECT_EQ(moved.rows(), edited.loaded.run->tokens());
    EXPECT_EQ(moved.cwiseAbs().maxCoeff(), 0.0f);  // the ablated head's own map: its output is zeroed, not its weights
}

TEST_F(KeepMaps, TheShownLayerIsComputedWholeOnlyWithinItsBudget) {
    // Past --keep-maps, the shown layer's heads are computed whole (τ, masks, stages) while their
    // scores and weights take at most Limits::shownLayerBytes; past it the pass is lean and the
    // layer is read from it, the window saying why in one line.
    core::Scenario s;
    s.model = core::modelFolder((m_dir / "model").string());
    s.sentence = kSentence;
    s.causal = true;
    AppState probe = makeState(s, core::Limits{.keptMapsBytes = 0});
    const core::decoder::Config& c = probe.loaded.checkpoint->config();
    const auto t = static_cast<long long>(probe.loaded.run->tokens());
    const std::uint64_t layer = core::shownLayerMapBytes(c, t);
    EXPECT_EQ(layer, 8ULL * static_cast<std::uint64_t>(c.nHead * t * t));
    EXPECT_TRUE(probe.loaded.shownWhole);
    EXPECT_TRUE(capabilities(probe).wholeLayer);
    core::Limits within{.keptMapsBytes = 0, .shownLayerBytes = layer};
    EXPECT_EQ(core::passMapsWithin(c, t, within), core::decoder::PassMaps::OnDemand);
    core::Limits past{.keptMapsBytes = 0, .shownLayerBytes = layer - 1};
    EXPECT_EQ(core::passMapsWithin(c, t, past), core::decoder::PassMaps::Lean);
    AppState lean = makeState(s, past);
    EXPECT_FALSE(lean.loaded.shownWhole);
    EXPECT_FALSE(capabilities(lean).wholeLayer);
    EXPECT_FALSE(lean.loaded.run->keepsActivations());
    const std::string note = readFromPassNote(lean);
    EXPECT_NE(note.find("more than the " + core::formatBytes(layer - 1) + " a layer is computed whole within"), std::string::npos) << note;
    // Kept maps keep the layer whole whatever its budget.
    EXPECT_EQ(core::passMapsWithin(c, t, core::Limits{.shownLayerBytes = 0}), core::decoder::PassMaps::Kept);
    // Qwen2.5-0.5B's 14 heads: whole at 2,048 tokens (470 MiB), read from the pass at 8,192 (7.0 GiB).
    core::decoder::Config qwen = c;
    qwen.nHead = 14;
    EXPECT_LE(core::shownLayerMapBytes(qwen, 2048), core::Limits{}.shownLayerBytes);
    EXPECT_GT(core::shownLayerMapBytes(qwen, 8192), core::Limits{}.shownLayerBytes);
}

}  // namespace
}  // namespace attnviz::app
