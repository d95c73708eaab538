// A model's sentence too long for the shown layer's heads whole (every head's T × T scores and
// weights past --max-memory) opens anyway: the layer's views read its maps from the pass, made on
// demand. Its heatmap, bars and CSV equal those of the layer computed whole; a long map's figure
// is pooled; what needs the heads whole (another τ, the heads strip, the stages) says why not.
#include "cli_harness.hpp"

#include "app/state/actions.hpp"
#include "app/state/source.hpp"
#include "app/views/figures.hpp"
#include "app/views/value_weighted.hpp"
#include "app/views/view_table.hpp"
#include "core/models/loaded_model.hpp"
#include "tests/tiny_llama.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sstream>

namespace attnviz::app {
namespace {

using namespace clitest;

// A sentence of `tokens` bytes (the tiny tokenizer reads a token a byte, after its BOS).
std::string sentenceOf(int tokens) {
    const std::string words = "the cat sat on the mat and the dog ran off. ";
    std::string s;
    while (static_cast<int>(s.size()) < tokens) s += words;
    s.resize(static_cast<std::size_t>(tokens));
    return s;
}

class ShownLayerFromPass : public Cli {
protected:
    void SetUp() override {
        Cli::SetUp();
        fs::create_directories(m_dir / "model");
        const nlohmann::json c = tinyllama::config("mistral", {{"sliding_window", 40}, {"max_position_embeddings", 32768}});
        tinyllama::writeCheckpoint(m_dir / "model", c, tinyllama::weights(c, 9));
    }
    std::string folder() const { return (m_dir / "model").string(); }
    // The window's scenario: the model over `sentence`, at `layer`.
    core::Scenario scenarioOf(const std::string& sentence, int layer) const {
        core::Scenario scenario;
        scenario.model = folder();
        scenario.sentence = sentence;
        scenario.causal = true;
        scenario.layer = layer;
        return scenario;
    }
    // --max-memory in MiB (and bytes) between what the sentence needs with the shown layer read
    // from the pass and with its heads whole.
    std::uint64_t betweenBytes(const std::string& sentence) const {
        const auto model = core::openCheckpoint(folder());
        const auto t = static_cast<long long>(model->tokenizer().encode(sentence).size());
        const auto maps = core::decoder::PassMaps::OnDemand;
        const std::uint64_t read = core::modelMemoryBytes(model->config(), t, maps, false);
        const std::uint64_t whole = core::modelMemoryBytes(model->config(), t, maps, true);
        const std::uint64_t mib = ((read >> 20) + 1) << 20;
        EXPECT_LT(mib, whole) << "no MiB between " << read << " and " << whole << " bytes";
        return mib;
    }
    std::vector<std::string> args(const std::string& sentence, std::uint64_t maxBytes, const std::vector<std::string>& extra) const {
        std::vector<std::string> a = {"--model", folder(), "--sentence", sentence, "--keep-maps", "0"};
        if (maxBytes) a.insert(a.end(), {"--max-memory", std::to_string(maxBytes >> 20)});
        a.insert(a.end(), extra.begin(), extra.end());
        return a;
    }
};

std::string withoutText(const std::string& svg) {
    std::string out;
    for (const std::string& line : splitLines(svg))
        if (line.find("<text") == std::string::npos) out += line + "\n";
    return out;
}

std::vector<double> csvNumbers(const std::string& text) {
    std::vector<double> out;
    const std::vector<std::string> lines = splitLines(text);
    for (std::size_t n = 1; n < lines.size(); ++n) {  // after the keys' labels
        std::stringstream in(lines[n]);
        std::string f;
        std::getline(in, f, ',');  // the query's label
        while (std::getline(in, f, ',')) out.push_back(std::strtod(f.c_str(), nullptr));
    }
    return out;
}

TEST_F(ShownLayerFromPass, FiguresReadFromThePassAreThoseOfTheLayerComputedWhole) {
    const std::string sentence = sentenceOf(500);
    const std::uint64_t between = betweenBytes(sentence);
    const std::size_t t = core::openCheckpoint(folder())->tokenizer().encode(sentence).size();
    ASSERT_GT(t, 300u);
    for (const std::string head : {"2", "-1"}) {
        SCOPED_TRACE("--head " + head);
        const auto exports = [&](const std::string& tag, std::uint64_t maxBytes) {
            const CliRun run = runCli(
                args(sentence, maxBytes,
                     {"--layer", "1", "--head", head, "--skip-first-key", "--query", "300", "--export-heatmap", path(tag + ".svg").string(),
                      "--export-bars", path(tag + "-bars.svg").string(), "--export-csv", path(tag + ".csv").string()}));
            ASSERT_EQ(run.code, 0) << run.err;
        };
        exports("whole", 0);
        exports("read", between);
        const std::string whole = readFile(path("whole.svg")), read = readFile(path("read.svg"));
        EXPECT_NE(whole.find("τ = 1.00 · causal"), std::string::npos);
        EXPECT_NE(read.find("the model&apos;s pass (causal, τ = 1)"), std::string::npos);
        // every cell's colour and every mask hatch the same (the maps equal to float rounding)
        EXPECT_EQ(withoutText(read), withoutText(whole));
        const std::vector<double> a = csvNumbers(readFile(path("read.csv"))), b = csvNumbers(readFile(path("whole.csv")));
        ASSERT_EQ(a.size(), t * t);
        ASSERT_EQ(a.size(), b.size());
        double worst = 0;
        for (std::size_t k = 0; k < a.size(); ++k) worst = std::max(worst, std::abs(a[k] - b[k]));
        EXPECT_LT(worst, 2e-6);
        if (head == "2") {
            EXPECT_EQ(withoutText(readFile(path("read-bars.svg"))), withoutText(readFile(path("whole-bars.svg"))));
        }
    }
}

TEST_F(ShownLayerFromPass, WhatNeedsTheHeadsWholeSaysWhyNot) {
    const std::string sentence = sentenceOf(500);
    const std::uint64_t between = betweenBytes(sentence);
    for (const auto& [flag, extra] : std::vector<std::pair<std::string, std::vector<std::string>>>{
             {"temperature", {"--temperature", "0.5", "--export-heatmap", path("heads.png").string()}},
             {"causal", {"--no-causal", "--export-heatmap", path("heads.png").string()}},
             {"--export-heads", {"--export-heads", path("heads.png").string()}}}) {
        SCOPED_TRACE(flag);
        const CliRun run = runCli(args(sentence, between, extra));
        EXPECT_EQ(run.code, 2);
        EXPECT_EQ(splitLines(run.err).size(), 1u) << run.err;
        EXPECT_NE(run.err.find(flag), std::string::npos) << run.err;
        EXPECT_NE(run.err.find("--max-memory"), std::string::npos) << run.err;
        EXPECT_FALSE(fs::exists(path("heads.png")));
    }
    // The window's state: the layer read from the pass, nothing of it computed, the softmax fixed.
    const core::Scenario scenario = scenarioOf(sentence, 1);
    AppState state = makeState(scenario, core::Limits{.maxBytes = between, .keptMapsBytes = 0});
    EXPECT_FALSE(capabilities(state).wholeLayer);
    EXPECT_FALSE(feedsView(state, panel_id::kStages));
    EXPECT_FALSE(feedsView(state, panel_id::kHeads));
    EXPECT_TRUE(feedsView(state, panel_id::kHeatmap));
    EXPECT_TRUE(feedsView(state, panel_id::kModel));
    recompute(state);
    EXPECT_EQ(state.work.projections, 0);
    EXPECT_EQ(state.work.softmaxes, 0);
    EXPECT_TRUE(isFresh(state));
    EXPECT_FALSE(apply(state, action::SetTemperature{0.5f}));
    EXPECT_NE(state.error.find("--max-memory"), std::string::npos) << state.error;
    EXPECT_FLOAT_EQ(state.scenario.temperature, 1.0f);
}

TEST_F(ShownLayerFromPass, ALongMapsFigureIsPooledAndLabelledByPosition) {
    // Over 1,024 tokens: the figure pools 2 x 2 blocks, each cell the mean of a block of the map.
    const std::string sentence = sentenceOf(1400);
    const auto t = static_cast<Eigen::Index>(core::openCheckpoint(folder())->tokenizer().encode(sentence).size());
    ASSERT_GT(t, 1024);
    ASSERT_LE(t, 2048);
    const core::Scenario scenario = scenarioOf(sentence, 0);
    AppState read = makeState(scenario, core::Limits{.maxBytes = betweenBytes(sentence), .keptMapsBytes = 0});
    AppState whole = makeState(scenario, core::Limits{.keptMapsBytes = 0});
    ASSERT_FALSE(capabilities(read).wholeLayer);
    ASSERT_TRUE(capabilities(whole).wholeLayer);
    recompute(whole);
    for (const int head : {1, -1}) {
        SCOPED_TRACE("head " + std::to_string(head));
        read.view.selectedHead = whole.view.selectedHead = head;
        const render::HeatmapFigure f = heatmapFigure(read, {.where = "--export-heatmap"});
        ASSERT_EQ(f.weights.rows(), (t + 1) / 2);
        ASSERT_EQ(f.weights.cols(), (t + 1) / 2);
        EXPECT_EQ(f.rowLabels[1], "2");
        EXPECT_EQ(f.colLabels[100], "200");
        EXPECT_FALSE(f.showValues);
        EXPECT_NE(f.title.find("each cell the mean of 2 × 2 weights"), std::string::npos) << f.title;
        std::vector<float> want;
        core::poolBlocks(visibleWeights(whole), whole.settings, 2, core::BlockPooling::Mean, want);
        double worst = 0;
        for (Eigen::Index i = 0; i < f.weights.rows(); ++i)
            for (Eigen::Index j = 0; j < f.weights.cols(); ++j) {
                const float w = want[static_cast<std::size_t>(i * f.weights.cols() + j)];
                ASSERT_EQ(f.blocked(i, j), core::isMaskedTexel(w)) << i << ", " << j;
                if (!f.blocked(i, j)) worst = std::max(worst, std::abs(static_cast<double>(f.weights(i, j)) - w));
            }
        EXPECT_LT(worst, 1e-6);
    }
}

TEST_F(ShownLayerFromPass, ALongInputsValueWeightedMapIsPooledNeverWhole) {
    // Past 4,096 tokens value-weighted attention is pooled as the heatmap's figure is (5 x 5 blocks
    // at 4,200 tokens), each cell the mean of α_ij ‖v_j W_O‖ over the block's readable cells: the
    // whole map weighed and pooled here gives the same cells.
    const std::string sentence = sentenceOf(5300);
    const auto t = static_cast<Eigen::Index>(core::openCheckpoint(folder())->tokenizer().encode(sentence).size());
    ASSERT_GT(t, 4096);
    const core::Scenario scenario = scenarioOf(sentence, 1);
    const std::uint64_t between = betweenBytes(sentence);
    AppState state = makeState(scenario, core::Limits{.maxBytes = between, .keptMapsBytes = 0});
    ASSERT_FALSE(capabilities(state).wholeLayer);
    const core::AttentionMaps maps = attentionMaps(state);
    const LayerValues values = layerValues(state, 1);
    ASSERT_TRUE(values);
    for (const int head : {2, -1}) {
        SCOPED_TRACE("head " + std::to_string(head));
        state.view.selectedHead = head;
        const render::ValueWeightedFigure f = valueWeightedFigure(state, {.where = "--export-value-weighted"});
        ASSERT_EQ(f.map.rows(), (t + 4) / 5);
        EXPECT_EQ(f.rowLabels[3], "15");
        EXPECT_NE(f.subtitle.find("each cell the mean of 5 × 5"), std::string::npos) << f.subtitle;
        core::Mat weighed = core::Mat::Zero(t, t), scratch;
        for (int h = 0; h < maps.heads; ++h) {
            if (head >= 0 && h != head) continue;
            const auto v = values.values.middleCols(static_cast<Eigen::Index>(values.kvHeadOf(h)) * values.dv, values.dv);
            const core::RowVec norms = valueNorms(v, values.wo.middleRows(static_cast<Eigen::Index>(h) * values.dv, values.dv));
            weighed += valueWeighted(maps.map(1, h, scratch), norms);
        }
        if (head < 0) weighed /= static_cast<float>(maps.heads);
        std::vector<float> want;
        core::poolBlocks(weighed, maps.layerSettings(1), 5, core::BlockPooling::Mean, want);
        double worst = 0;
        for (Eigen::Index i = 0; i < f.map.rows(); ++i)
            for (Eigen::Index j = 0; j < f.map.cols(); ++j) {
                const float w = want[static_cast<std::size_t>(i * f.map.cols() + j)];
                ASSERT_EQ(f.blocked(i, j), core::isMaskedTexel(w)) << i << ", " << j;
                if (!f.blocked(i, j)) worst = std::max(worst, std::abs(static_cast<double>(f.map(i, j)) - w) / std::max(1e-3f, w));
            }
        EXPECT_LT(worst, 1e-5);
    }
    // the figure from the command line; every map as .npy past --max-memory: refused in one line
    const CliRun run = runCli(args(sentence, between, {"--layer", "1", "--head", "2", "--export-value-weighted", path("vw.svg").string()}));
    ASSERT_EQ(run.code, 0) << run.err;
    EXPECT_NE(readFile(path("vw.svg")).find("each cell the mean of 5 × 5"), std::string::npos);
    const std::string error =
        expectError(runCli(args(sentence, between, {"--layer", "1", "--export-value-weighted", path("vw.npy").string()})));
    EXPECT_NE(error.find("--max-memory"), std::string::npos) << error;
    EXPECT_FALSE(fs::exists(path("vw.npy")));
}

TEST_F(ShownLayerFromPass, ALongInputsHeadViewFoldsTheTokensItsLinesDoNotReach) {
    // 3,000 tokens (past the 2,048 a head view figure draws): one query's lines, the 8 tokens
    // before it and every key its lines reach as rows, each other run of tokens one row.
    const std::string sentence = sentenceOf(3000);
    const auto t = static_cast<int>(core::openCheckpoint(folder())->tokenizer().encode(sentence).size());
    ASSERT_GT(t, 2048);
    const std::string q = std::to_string(t - 50);
    const CliRun run = runCli(args(sentence, 0, {"--layer", "1", "--query", q, "--export-head-view", path("head.svg").string()}));
    ASSERT_EQ(run.code, 0) << run.err;
    const std::string svg = readFile(path("head.svg"));
    EXPECT_NE(svg.find("⋯ "), std::string::npos);                                        // a folded run
    EXPECT_NE(svg.find(">" + std::to_string(t - 50 + 1) + " "), std::string::npos);      // the query, by its position from 1
    EXPECT_NE(svg.find(">" + std::to_string(t - 50 - 8 + 1) + " "), std::string::npos);  // 8 tokens before it
    EXPECT_NE(svg.find("folded"), std::string::npos);                                    // the rule says so
    EXPECT_NE(svg.find("query " + std::to_string(t - 50 + 1) + " isolated"), std::string::npos);
    // every query's lines of 3,000 tokens: refused in one line that says what to do
    const std::string error = expectError(runCli(args(sentence, 0, {"--layer", "1", "--export-head-view", path("all.svg").string()})));
    EXPECT_NE(error.find("pick one --query"), std::string::npos) << error;
    EXPECT_FALSE(fs::exists(path("all.svg")));
}

TEST_F(ShownLayerFromPass, SixteenThousandTokensOpenAndExportInUnderTwoGibibytes) {
    // Every layer's every head's map of 16,384 tokens would be 2 x 4 x 1 GiB kept, and the shown
    // layer's heads whole 8 GiB: with the default limits the pass keeps q, k and the log-sum-exp,
    // the layer is read from it, and the heatmap, the bars, the model view and the statistics are
    // written with the process's peak under 2 GiB. (Within the default --max-tokens.)
    std::string sentence = sentenceOf(21000);
    const auto model = core::openCheckpoint(folder());
    while (model->tokenizer().encode(sentence).size() > 16400) sentence.resize(sentence.size() - 100);
    const std::size_t t = model->tokenizer().encode(sentence).size();
    ASSERT_GE(t, 16384u);
    const CliRun run = runCli({"--model",
                               folder(),
                               "--sentence",
                               sentence,
                               "--layer",
                               "1",
                               "--head",
                               "2",
                               "--query",
                               std::to_string(t - 1),
                               "--export-heatmap",
                               path("heat.png").string(),
                               "--export-bars",
                               path("bars.png").string(),
                               "--export-model-view",
                               path("model.png").string(),
                               "--export-stats",
                               path("stats.csv").string(),
                               "--export-distance",
                               path("distance.csv").string()});
    ASSERT_EQ(run.code, 0) << run.err;
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    EXPECT_LT(usage.ru_maxrss, 2L << 20) << "peak resident KiB";  // ru_maxrss counts KiB
    for (const char* file : {"heat.png", "bars.png", "model.png"}) EXPECT_GT(fs::file_size(path(file)), 1000u) << file;
    // every head's statistics, each a finite entropy
    const std::vector<std::string> rows = splitLines(readFile(path("stats.csv")));
    ASSERT_EQ(rows.size(), 1u + tinyllama::kLayers * tinyllama::kHeads);
    const auto fields = [](const std::string& line) {
        std::vector<std::string> out;
        std::stringstream in(line);
        for (std::string f; std::getline(in, f, ',');) out.push_back(f);
        return out;
    };
    const std::vector<std::string> header = fields(rows[0]);
    const auto column = static_cast<std::size_t>(std::find(header.begin(), header.end(), "entropy") - header.begin());
    ASSERT_LT(column, header.size()) << rows[0];
    for (std::size_t n = 1; n < rows.size(); ++n) {
        const double e = std::strtod(fields(rows[n]).at(column).c_str(), nullptr);
        EXPECT_TRUE(std::isfinite(e) && e > 0 && e < std::log(16400.0)) << rows[n];
    }
    // Every head's profile, from the same sweep: the sliding window of 40 keys shows in it, no
    // weight at a distance of 40 or more, and none on the first 4 tokens once a query is past them.
    const auto tt = static_cast<long long>(t);
    long long distanceRows = 0, beyond = 0, lateQueries = 0;
    for (const std::string& line : splitLines(readFile(path("distance.csv")))) {
        const std::vector<std::string> f = fields(line);
        if (f.size() != 7 || f[0] == "layer") continue;
        const long long from = std::stoll(f[3]), to = std::stoll(f[4]), count = std::stoll(f[6]);
        const double value = std::strtod(f[5].c_str(), nullptr);
        ASSERT_TRUE(std::isfinite(value) && value >= 0 && value <= 1) << line;
        if (f[2] == "distance") {
            ++distanceRows;
            if (from >= 40) {
                ++beyond;
                EXPECT_EQ(value, 0.0) << line;
            }
            if (from == 1) {
                EXPECT_EQ(count, tt - 1) << line;  // every query but the first reads the key before it
            }
            if (to == tt - 1) {
                EXPECT_EQ(count, 0) << line;  // the longest distances lie outside the window
            }
        }
        if (f[2] == "first_k" && from >= 40 + 4) {
            ++lateQueries;
            EXPECT_EQ(value, 0.0) << line;
        }
    }
    // bins: 0 … 7, four a doubling from 8 to 16,384, and the distances past it
    EXPECT_EQ(distanceRows, static_cast<long long>(tinyllama::kLayers * tinyllama::kHeads) * (8 + 4 * 11 + (tt > 16384 ? 1 : 0)));
    EXPECT_GT(beyond, 0);
    EXPECT_GT(lateQueries, 0);
}

}  // namespace
}  // namespace attnviz::app
