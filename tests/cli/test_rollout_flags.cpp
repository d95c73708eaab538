// --rollout and --rollout-heads on the command line, in-process: the request the window gets, the
// JSON export's "rollout" object for a scenario (checked by hand against its one layer), and
// misuse as one error line with exit 2.
#include "cli_harness.hpp"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

using namespace attnviz;
using namespace attnviz::app;
using namespace attnviz::app::clitest;

namespace {

TEST(CliRollout, AsksTheWindowForTheRolloutView) {
    const CliRun run = runCli({"--preset", "seed004-causal", "--rollout", "--rollout-heads", "max"});
    ASSERT_EQ(run.code, 0) << run.err;
    ASSERT_EQ(run.guiCalls, 1);
    EXPECT_TRUE(run.request.rollout);
    EXPECT_EQ(run.request.rolloutHeads, core::RolloutHeads::Max);
    const ViewState view = requestedView(run.request, ViewState{});
    EXPECT_TRUE(view.rollout);
    EXPECT_EQ(view.rolloutHeads, core::RolloutHeads::Max);
    EXPECT_FALSE(requestedView(runCli({"--preset", "seed004-causal"}).request, ViewState{}).rollout);
}

TEST(CliRollout, JsonExportHoldsTheScenariosOneLayerRolledOut) {
    for (const std::string rule : {"mean", "max"}) {
        const CliRun run = runCli({"--preset", "seed000-four-heads", "--rollout", "--rollout-heads", rule, "--export", "-"});
        ASSERT_EQ(run.code, 0) << run.err;
        const nlohmann::json j = nlohmann::json::parse(run.out);
        ASSERT_TRUE(j.contains("rollout"));
        const nlohmann::json& r = j["rollout"];
        EXPECT_EQ(r["layer"], 0);
        EXPECT_EQ(r["heads"], rule);
        EXPECT_EQ(r["skip_first_key"], false);
        EXPECT_NE(r["rule"].get<std::string>().find(rule + " over heads"), std::string::npos);
        // (fused + I) with rows renormalised, fused the heads' mean or max, written out here.
        const std::size_t t = j["tokens"].size();
        ASSERT_EQ(r["matrix"].size(), t);
        for (std::size_t i = 0; i < t; ++i) {
            std::vector<double> row(t, 0.0);
            for (std::size_t j2 = 0; j2 < t; ++j2) {
                double fused = 0.0;
                for (const nlohmann::json& head : j["heads"]) {
                    const double w = head["weights"][i][j2];
                    fused = rule == "max" ? std::max(fused, w) : fused + w / static_cast<double>(j["heads"].size());
                }
                row[j2] = fused + (i == j2 ? 1.0 : 0.0);
            }
            double sum = 0.0;
            for (const double v : row) sum += v;
            for (std::size_t j2 = 0; j2 < t; ++j2) EXPECT_NEAR(r["matrix"][i][j2].get<double>(), row[j2] / sum, 1e-6) << i << "," << j2;
        }
    }
    // Without --rollout there is none.
    const CliRun plain = runCli({"--preset", "seed000-four-heads", "--export", "-"});
    ASSERT_EQ(plain.code, 0);
    EXPECT_FALSE(nlohmann::json::parse(plain.out).contains("rollout"));
}

TEST(CliRollout, MisuseIsOneLineAndExitTwo) {
    EXPECT_EQ(expectError(runCli({"--preset", "seed004-causal", "--rollout", "--rollout-heads", "bad", "--export", "-"})),
              "--rollout-heads: unknown rule 'bad' for the heads (known: mean, max)");
    EXPECT_EQ(expectError(runCli({"--preset", "seed004-causal", "--rollout-heads", "max", "--export", "-"})),
              "--rollout-heads: needs --rollout");
    EXPECT_EQ(expectError(runCli({"--rollout", "--bench"})).rfind("--rollout: ", 0), 0u);
    // Only the JSON and .npy exports hold it: a figure alone would silently leave it out.
    EXPECT_EQ(expectError(runCli({"--preset", "seed004-causal", "--rollout", "--export-csv", "-"})),
              "--rollout: is exported by --export (JSON) or --export-npy; the figures and the CSV show heads");
}

}  // namespace
