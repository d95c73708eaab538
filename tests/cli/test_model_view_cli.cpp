// --export-model-view through the real command line: every head's thumbnail in the colour of its
// weights, a model's every layer, the order flags and their rule, and one-line errors.
#include "app/state/actions.hpp"
#include "cli_harness.hpp"
#include "core/attention/colormap.hpp"
#include "core/scenario/presets.hpp"
#include "tests/render/figure_checks.hpp"
#include "tests/tiny_gpt2.hpp"

#include <gtest/gtest.h>

namespace attnviz::app {
namespace {

using namespace clitest;

// The preset is short (a texel per weight): each head's tile holds its weights' colours on the
// fixed scale, and the causal mask's cells are hatched.
TEST_F(Cli, ModelViewOfAScenarioColoursEachHeadsWeights) {
    const fs::path svg = path("model.svg"), png = path("model.png");
    const CliRun run = runCli({"--causal", "--colour-scale", "fixed", "--export-model-view", svg.string()});
    ASSERT_EQ(run.code, 0) << run.err;
    EXPECT_EQ(run.guiCalls, 0);
    const std::string text = readFile(svg);
    AppState state = makeState(core::loadPreset("default"));
    ASSERT_TRUE(apply(state, action::SetCausal{true}));
    recompute(state);
    ASSERT_GT(state.model.heads, 1);
    for (int h = 0; h < state.model.heads; ++h) {
        const std::string group = figurecheck::svgGroup(text, "tile-1-" + std::to_string(h + 1));
        ASSERT_FALSE(group.empty()) << "head " << h + 1;
        const core::Mat& w = state.forward.heads[static_cast<std::size_t>(h)].weights;
        for (Eigen::Index i = 0; i < w.rows(); ++i)
            for (Eigen::Index j = 0; j <= i; ++j)
                EXPECT_NE(group.find(figurecheck::hexOf(core::colormapColor(core::ColormapKind::Viridis, w(i, j), 0.0f, 1.0f))),
                          std::string::npos)
                    << "head " << h + 1 << " weight " << i << "," << j;
        EXPECT_NE(group.find("url(#masked)"), std::string::npos);
    }
    EXPECT_NE(text.find("1 layer × " + std::to_string(state.model.heads) + " heads"), std::string::npos);
    ASSERT_EQ(runCli({"--export-model-view", png.string()}).code, 0);
    const figurecheck::Image img = figurecheck::decodePng(readFile(png));
    EXPECT_GT(img.width, 100);
    EXPECT_GT(img.height, 100);
}

TEST_F(Cli, ModelViewOfAModelHasEveryLayerAndItsOrderRule) {
    fs::create_directories(m_dir / "gpt2");
    tinygpt2::writeCheckpoint(m_dir / "gpt2", tinygpt2::weights(7));
    const fs::path svg = path("model.svg");
    const std::string dir = (m_dir / "gpt2").string();
    CliRun run = runCli({"--model", dir, "--sentence", " the the he then", "--export-model-view", svg.string()});
    ASSERT_EQ(run.code, 0) << run.err;
    std::string text = readFile(svg);
    for (int l = 1; l <= tinygpt2::kLayers; ++l)
        for (int h = 1; h <= tinygpt2::kHeads; ++h)
            EXPECT_FALSE(figurecheck::svgGroup(text, "tile-" + std::to_string(l) + "-" + std::to_string(h)).empty()) << l << "." << h;
    EXPECT_NE(text.find("every layer × head"), std::string::npos);
    EXPECT_EQ(figurecheck::countOf(text, "class=\"tint\""), 0u);

    run = runCli({"--model", dir, "--sentence", " the the he then", "--model-view-rank", "previous", "--export-model-view", svg.string()});
    ASSERT_EQ(run.code, 0) << run.err;
    text = readFile(svg);
    EXPECT_NE(text.find("every head ranked by previous-token mass, largest first; tint = previous"), std::string::npos);
    EXPECT_EQ(figurecheck::countOf(text, "class=\"tint\""), static_cast<std::size_t>(tinygpt2::kLayers * tinygpt2::kHeads));
    // The tiles come in the order of the heads' previous-token mass, largest first.
    core::Scenario sc;
    sc.model = dir;
    sc.sentence = " the the he then";
    sc.causal = true;
    AppState state = makeState(sc);
    recompute(state);
    std::vector<std::pair<double, std::string>> heads;
    for (int l = 0; l < tinygpt2::kLayers; ++l)
        for (int h = 0; h < tinygpt2::kHeads; ++h) {
            double sum = 0;
            int rows = 0;
            const auto w = state.loaded.run->weights(l, h);
            for (Eigen::Index i = 1; i < w.rows(); ++i) sum += w(i, i - 1), ++rows;
            heads.emplace_back(sum / rows, "tile-" + std::to_string(l + 1) + "-" + std::to_string(h + 1));
        }
    std::stable_sort(heads.begin(), heads.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    for (std::size_t k = 1; k < heads.size(); ++k)
        if (heads[k - 1].first > heads[k].first + 1e-6) {
            EXPECT_LT(text.find("id=\"" + heads[k - 1].second + "\""), text.find("id=\"" + heads[k].second + "\""));
        }
}

TEST_F(Cli, ModelViewFlagsSetTheWindowsModelViewToo) {
    const CliRun sorted = runCli({"--model-view-sort", "previous", "--model-view-pooling", "max"});
    ASSERT_EQ(sorted.code, 0) << sorted.err;
    ASSERT_EQ(sorted.guiCalls, 1);
    ASSERT_TRUE(sorted.request.modelView.has_value());
    EXPECT_EQ(*sorted.request.modelView,
              (ModelViewOptions{core::BlockPooling::Max, core::TileOrder::WithinLayer, core::HeadScore::Previous, true}));
    const CliRun ranked = runCli({"--model-view-rank", "attribution"});
    ASSERT_EQ(ranked.code, 0) << ranked.err;
    EXPECT_EQ(ranked.request.modelView->order, core::TileOrder::Ranked);
    EXPECT_EQ(ranked.request.modelView->score, core::HeadScore::Attribution);
    EXPECT_FALSE(runCli({}).request.modelView.has_value());  // not given: the saved session's
}

TEST_F(Cli, ModelViewFlagsRefuseWhatTheyCannotDo) {
    const std::string out = path("model.png").string();
    EXPECT_EQ(expectError(runCli({"--model-view-rank", "prev"})).rfind("--model-view-rank: expected entropy,", 0), 0u);
    EXPECT_EQ(expectError(runCli({"--export-model-view", out, "--model-view-sort", "prev"})),
              "--model-view-sort: expected entropy, entropy-share, distance, self, previous, first, first-k, duplicate, induction, "
              "induction-test, moved, retrieval-test, next, separator, punctuation or attribution, got 'prev'");
    EXPECT_EQ(expectError(runCli({"--export-model-view", out, "--model-view-sort", "self", "--model-view-rank", "self"})),
              "--model-view-rank: give either --model-view-sort or --model-view-rank, not both");
    EXPECT_EQ(expectError(runCli({"--export-model-view", out, "--model-view-pooling", "median"})),
              "--model-view-pooling: expected mean or max, got 'median'");
    EXPECT_EQ(expectError(runCli({"--export-model-view", out, "--model-view-rank", "induction-test"})).rfind("--model-view-rank: ", 0), 0u);
    EXPECT_EQ(expectError(runCli({"--export-model-view", out, "--model-view-sort", "retrieval-test"})),
              "--model-view-sort: the retrieval test runs its own sequences (the window's head statistics); sort by one of the others");
    EXPECT_EQ(expectError(runCli({"--export-model-view", path("model.jpg").string()})).rfind(path("model.jpg").string() + ": ", 0), 0u);
    EXPECT_FALSE(fs::exists(out));
}

}  // namespace
}  // namespace attnviz::app
