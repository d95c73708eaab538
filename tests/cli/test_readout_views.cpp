// What heads write, as views: the logit lens coloured by a target (the model's final choice or the
// next input token, by probability or by rank on a log scale), the model view sorted and tinted by
// direct logit attribution, and the tokens a model generated marked in the figures.
#include "cli_harness.hpp"

#include "app/state/actions.hpp"
#include "app/state/generation.hpp"
#include "app/state/launch.hpp"
#include "app/state/source.hpp"
#include "app/views/figures.hpp"
#include "app/views/logit_lens.hpp"
#include "core/models/loaded_model.hpp"
#include "tests/tiny_gpt2.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace attnviz::app {
namespace {

using namespace clitest;

class ReadoutViews : public Cli {
protected:
    void SetUp() override {
        Cli::SetUp();
        fs::create_directories(m_dir / "model");
        tinygpt2::writeCheckpoint(m_dir / "model", tinygpt2::weights(7));
    }
    AppState open(const std::string& sentence) const {
        core::Scenario sc;
        sc.model = (m_dir / "model").string();
        sc.sentence = sentence;
        sc.causal = true;
        AppState state = makeState(sc);
        recompute(state);
        return state;
    }
};

TEST_F(ReadoutViews, LensTargetsAreTheNextInputTokensAndItsShadesTheirProbabilityOrRank) {
    AppState s = open(" the the he then");
    const LensData final = wholeLogitLens(s, "lens");
    EXPECT_EQ(final.target, LensTarget::Final);
    ASSERT_TRUE(apply(s, action::SetLensColour{LensColour::TargetRank, LensTarget::NextInput}));
    const LensData next = wholeLogitLens(s, "lens");
    const core::decoder::LogitLens& lens = next.lens;
    const std::vector<int>& ids = checkpointPass(s)->run->ids;
    ASSERT_EQ(lens.positions, static_cast<Eigen::Index>(ids.size()));
    EXPECT_EQ(next.vocab, tinygpt2::kVocab);
    for (Eigen::Index p = 0; p < lens.positions; ++p) {
        const bool last = p + 1 == lens.positions;
        EXPECT_EQ(lens.targets[static_cast<std::size_t>(p)], last ? -1 : ids[static_cast<std::size_t>(p + 1)]);
        for (int l = 0; l < lens.layers; ++l) {
            const std::size_t cell = lens.at(l, p);
            EXPECT_FLOAT_EQ(lensShade(next, LensColour::Top, l, p), lens.cell(l, p)[0].prob);
            if (last) {
                EXPECT_LT(lensShade(next, LensColour::TargetProbability, l, p), 0.0f);  // grey: no next token
                EXPECT_LT(lensShade(next, LensColour::TargetRank, l, p), 0.0f);
                continue;
            }
            EXPECT_FLOAT_EQ(lensShade(next, LensColour::TargetProbability, l, p), lens.targetProb[cell]);
            // rank r of V on a log scale: 1 at the top, 0 at the last
            const double rank = lens.targetRank[cell];
            EXPECT_NEAR(lensShade(next, LensColour::TargetRank, l, p), 1.0 - std::log(rank) / std::log(260.0), 1e-6);
        }
    }
    // The final choice is each position's own last-layer top token, so its rank there is 1.
    for (Eigen::Index p = 0; p < final.lens.positions; ++p)
        EXPECT_FLOAT_EQ(lensShade(final, LensColour::TargetRank, final.lens.layers - 1, p), 1.0f);
    // The colour bar's rule: ranks 1, 10, 100 and the vocabulary's last, where lensShade puts them.
    const LensScale scale = lensScale(next, LensColour::TargetRank);
    ASSERT_EQ(scale.ticks.size(), 4u);
    EXPECT_EQ(scale.ticks.front(), (std::pair<float, std::string>{1.0f, "#1"}));
    EXPECT_NEAR(scale.ticks[1].first, 1.0 - std::log(10.0) / std::log(260.0), 1e-6);
    EXPECT_EQ(scale.ticks[2].second, "#100");
    EXPECT_EQ(scale.ticks.back(), (std::pair<float, std::string>{0.0f, "#260"}));
    EXPECT_EQ(scale.caption, "rank of the next input token (log scale)");
    EXPECT_EQ(lensScale(next, LensColour::TargetProbability).caption, "probability of the next input token");
    EXPECT_EQ(lensScale(final, LensColour::Top).caption, "probability of the top token");
}

TEST_F(ReadoutViews, LensColourFlagsReachTheViewAndBadOnesAreRefused) {
    const std::string model = (m_dir / "model").string(), out = (m_dir / "lens.json").string();
    const CliRun run = runCli(
        {"--model", model, "--sentence", " the he", "--lens-colour", "probability", "--lens-target", "next", "--export-logit-lens", out});
    ASSERT_EQ(run.code, 0) << run.err;
    EXPECT_NE(readFile(out).find("the next input token (none at the last position)"), std::string::npos);
    EXPECT_EQ(expectError(runCli({"--model", model, "--lens-colour", "rnak"})),
              "--lens-colour: expected top, probability or rank, got 'rnak'");
    EXPECT_EQ(expectError(runCli({"--model", model, "--lens-target", "first"})), "--lens-target: expected final or next, got 'first'");
    // The window starts with them.
    const CliRun window = runCli({"--model", model, "--lens-colour", "rank", "--lens-target", "next"});
    ASSERT_EQ(window.code, 0) << window.err;
    EXPECT_EQ(window.request.lensColour, LensColour::TargetRank);
    EXPECT_EQ(window.request.lensTarget, LensTarget::NextInput);
}

TEST_F(ReadoutViews, SampledGenerationOnTheCommandLineSetsTheWindowsSampling) {
    const std::string model = (m_dir / "model").string();
    const CliRun run = runCli({"--model", model, "--generate", "2", "--sample-seed", "7", "--top-k", "3", "--sample-temperature", "2.5"});
    ASSERT_EQ(run.code, 0) << run.err;
    const ViewState view = requestedView(run.request, ViewState{});
    EXPECT_TRUE(view.generateSampled);
    EXPECT_EQ(view.generateTopK, 3);
    EXPECT_EQ(view.generateSeed, 7u);
    EXPECT_FLOAT_EQ(view.nextTemperature, 2.5f);
    EXPECT_FALSE(requestedView(runCli({"--model", model, "--generate", "2"}).request, ViewState{}).generateSampled);  // greedy
}

TEST_F(ReadoutViews, GeneratedTokensAreMarkedInTheHeatmapBarsAndModelViewFigures) {
    AppState s = open(" the he");
    const Eigen::Index prompt = s.model.tq();
    EXPECT_EQ(generatedFrom(s), -1);
    EXPECT_EQ(heatmapFigure(s, {.where = "heatmap"}).generatedFrom, -1);
    for (int k = 0; k < 3; ++k) ASSERT_TRUE(generateOne(s, core::decoder::Sampling{})) << s.error;  // greedy
    recompute(s);
    ASSERT_EQ(s.model.tq(), prompt + 3);
    EXPECT_EQ(generatedFrom(s), prompt);
    const render::HeatmapFigure heatmap = heatmapFigure(s, {.where = "heatmap"});
    EXPECT_EQ(heatmap.generatedFrom, prompt);
    EXPECT_NE(heatmap.title.find("generated from token " + std::to_string(prompt + 1)), std::string::npos) << heatmap.title;
    ASSERT_TRUE(apply(s, action::SelectQuery{static_cast<int>(prompt + 2)}));
    EXPECT_EQ(barsFigure(s, {.where = "bars"}).generatedFrom, prompt);
    EXPECT_EQ(modelViewFigure(s, {.where = "model view"}).generatedFrom, prompt);
    // Taken back: nothing marked.
    ASSERT_TRUE(apply(s, action::SetGenerated{{}}));
    recompute(s);
    EXPECT_EQ(generatedFrom(s), -1);
}

}  // namespace
}  // namespace attnviz::app
