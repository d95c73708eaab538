// --ablate, --ablate-mean and --hide-token: a model's what-if on the command line. The exports show
// the pass after and the next tokens before and after; the window opens on the edited scenario;
// bad values are one line and exit 2. Their numbers against numpy: tests/oracle/test_gpt2_model.py
// and test_llama_model.py.
#include "cli_harness.hpp"

#include "tests/tiny_gpt2.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <string>
#include <vector>

namespace attnviz::app {
namespace {

using namespace clitest;
using WhatIfFlags = Cli;

class WhatIfCli : public Cli {
protected:
    void SetUp() override {
        Cli::SetUp();
        fs::create_directories(m_dir / "model");
        tinygpt2::writeCheckpoint(m_dir / "model", tinygpt2::weights(7));
        model = {"--model", (m_dir / "model").string(), "--sentence", " the cat sat"};
    }
    nlohmann::json exported(const std::vector<std::string>& edits) {
        std::vector<std::string> args = model;
        args.insert(args.end(), edits.begin(), edits.end());
        args.insert(args.end(), {"--export", "-"});
        const CliRun run = runCli(args);
        EXPECT_EQ(run.code, 0) << run.err;
        return nlohmann::json::parse(run.out);
    }
    std::string error(const std::vector<std::string>& edits) {
        std::vector<std::string> args = model;
        args.insert(args.end(), edits.begin(), edits.end());
        args.insert(args.end(), {"--export", "-"});
        return expectError(runCli(args));
    }
    std::vector<std::string> model;
};

TEST_F(WhatIfCli, TheExportShowsThePassAfterAndTheNextTokensBeforeAndAfter) {
    const nlohmann::json plain = exported({});
    EXPECT_FALSE(plain.contains("what_if"));
    const nlohmann::json after = exported({"--ablate", "1.0", "--ablate-mean", "1.1"});
    ASSERT_TRUE(after.contains("what_if"));
    const nlohmann::json& w = after["what_if"];
    EXPECT_EQ(w["edits"], nlohmann::json::array({"ablate 1.0", "ablate-mean 1.1"}));
    EXPECT_EQ(w["computed_from_layer"], 1);
    // Before: the plain pass's next tokens; after: the export's own.
    EXPECT_EQ(w["next_tokens_before"], plain["next_tokens"]);
    EXPECT_EQ(w["next_tokens_after"], after["next_tokens"]);
    EXPECT_NE(after["next_tokens"], plain["next_tokens"]);
    // Both layers' maps are unchanged by an ablation in the last layer (it changes what is written).
    EXPECT_EQ(after["layers"], plain["layers"]);
    // The changes: sorted by |Δ log p|, Δ = log after − log before.
    double previous = 1e300;
    ASSERT_GE(w["changes"].size(), 10u);
    for (const nlohmann::json& c : w["changes"]) {
        const double d = c["dlogprob"];
        EXPECT_LE(std::abs(d), previous + 1e-7);
        previous = std::abs(d);
        EXPECT_NEAR(d, std::log(c["after"].get<double>()) - std::log(c["before"].get<double>()), 1e-4);
    }
}

TEST_F(WhatIfCli, AHiddenTokenHasNoWeightInAnyLayerOfTheExport) {
    const nlohmann::json j = exported({"--hide-token", "1", "--hide-token", "0"});
    EXPECT_EQ(j["what_if"]["edits"], nlohmann::json::array({"hide-token 1", "hide-token 0"}));
    EXPECT_EQ(j["what_if"]["computed_from_layer"], 0);
    for (const nlohmann::json& layer : j["layers"])
        for (const nlohmann::json& head : layer["heads"]) {
            const auto& rows = head["weights"];
            EXPECT_EQ(rows[0][0], 0.0);  // query 0 reads nothing
            for (std::size_t i = 1; i < rows.size(); ++i) {
                EXPECT_EQ(rows[i][0], 0.0);
                EXPECT_EQ(rows[i][1], 0.0);
                double sum = 0;
                for (const auto& v : rows[i]) sum += v.get<double>();
                if (i >= 2) {
                    EXPECT_NEAR(sum, 1.0, 1e-3);  // the JSON's 4 digits a weight
                }
            }
        }
}

TEST_F(WhatIfCli, TheNpyFolderGainsTheTableAndLosesItWithoutEdits) {
    const std::string dir = path("npy").string();
    std::vector<std::string> args = model;
    args.insert(args.end(), {"--hide-token", "2", "--export-npy", dir});
    ASSERT_EQ(runCli(args).code, 0);
    const std::vector<std::string> lines = splitLines(readFile(path("npy") / "next_tokens_whatif.txt"));
    ASSERT_GE(lines.size(), 10u);
    EXPECT_EQ(std::count(lines[0].begin(), lines[0].end(), '\t'), 4);
    args = model;
    args.insert(args.end(), {"--export-npy", dir});
    ASSERT_EQ(runCli(args).code, 0);
    EXPECT_FALSE(fs::exists(path("npy") / "next_tokens_whatif.txt"));
}

TEST_F(WhatIfCli, TheWindowOpensOnTheEditedScenario) {
    std::vector<std::string> args = model;
    args.insert(args.end(), {"--ablate", "0.1", "--ablate-mean", "1.0", "--hide-token", "3"});
    const CliRun run = runCli(args);
    ASSERT_EQ(run.code, 0) << run.err;
    ASSERT_EQ(run.guiCalls, 1);
    EXPECT_EQ(run.request.scenario.ablations, (std::vector<core::HeadAblation>{{0, 1, false}, {1, 0, true}}));
    EXPECT_EQ(run.request.scenario.hiddenTokens, std::vector<int>{3});
}

TEST_F(WhatIfCli, BadEditsAreOneLineNamingTheFlagOrTheEdit) {
    EXPECT_EQ(error({"--ablate", "1"}), "--ablate: expected a head as L.H (layer.head, counted from 0: --ablate 3.5), got '1'");
    EXPECT_EQ(error({"--ablate-mean", "1.-1"}),
              "--ablate-mean: expected a head as L.H (layer.head, counted from 0: --ablate 3.5), got '1.-1'");
    EXPECT_EQ(error({"--hide-token", "x"}), "--hide-token: expected a whole number from 0 to 2147483647, got 'x'");
    EXPECT_EQ(error({"--ablate", "2.0"}), "--model: ablate[0]: layer 2 is outside this model's layers 0 … 1");
    EXPECT_EQ(error({"--ablate", "0.0", "--ablate-mean", "0.2"}), "--model: ablate_mean[0]: head 2 is outside this model's heads 0 … 1");
    EXPECT_EQ(error({"--hide-token", "9"}), "--model: hide_tokens[0]: token 9 is outside the sentence's tokens 0 … 8");
    EXPECT_EQ(error({"--ablate", "1.1", "--ablate-mean", "1.1"}),
              "--model: ablate_mean[0]: head 1.1 is ablated twice (ablate 1.1, ablate-mean 1.1)");
    EXPECT_EQ(error({"--hide-token", "1", "--hide-token", "1"}), "--model: hide_tokens[1]: token 1 is hidden twice");
}

TEST_F(WhatIfFlags, TheEditsNeedAModel) {
    for (const char* flag : {"--ablate", "--ablate-mean", "--hide-token"})
        EXPECT_EQ(expectError(runCli({"--preset", "default", flag, "0", "--export", "-"})),
                  std::string(flag) + ": only with --model (a what-if edits a model's pass)");
}

}  // namespace
}  // namespace attnviz::app
