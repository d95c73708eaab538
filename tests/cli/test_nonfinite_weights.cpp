// Non-finite weights on the command line: a checkpoint holding a NaN or an infinity is refused
// with one line naming the file, the tensor and the index, exit 2, and no export is written:
// a NaN never reaches a JSON, .npy or text file.
#include "tests/cli/cli_harness.hpp"
#include "tests/tiny_gpt2.hpp"

#include <limits>

namespace attnviz::app::clitest {
namespace {

using NonFiniteWeightsCli = Cli;

TEST_F(NonFiniteWeightsCli, NoExportIsWrittenAndTheTensorIsNamed) {
    const auto model = m_dir / "model";
    fs::create_directories(model);
    auto w = tinygpt2::weights(3);
    w["ln_f.weight"].values[3] = std::numeric_limits<float>::quiet_NaN();
    tinygpt2::writeCheckpoint(model, w);
    const std::string expected = "--model: " + (model / "model.safetensors").string() +
                                 ": ln_f.weight: holds NaN at [3]: the checkpoint's weights must be finite (is the file damaged?)";
    const auto json = m_dir / "out.json", npy = m_dir / "npy";
    EXPECT_EQ(expectError(runCli({"--model", model.string(), "--sentence", " the then", "--export", json.string()})), expected);
    EXPECT_FALSE(fs::exists(json));
    EXPECT_EQ(expectError(runCli({"--model", model.string(), "--sentence", " the then", "--export", "-"})), expected);
    EXPECT_EQ(expectError(runCli({"--model", model.string(), "--sentence", " the then", "--export-npy", npy.string()})), expected);
    EXPECT_FALSE(fs::exists(npy));
    // An infinity in the last layer's MLP is named the same way.
    w = tinygpt2::weights(3);
    w["h.1.mlp.c_proj.weight"].values[2 * tinygpt2::kEmbd + 1] = -std::numeric_limits<float>::infinity();
    tinygpt2::writeCheckpoint(model, w);
    EXPECT_EQ(expectError(runCli({"--model", model.string(), "--sentence", " the", "--export", json.string()})),
              "--model: " + (model / "model.safetensors").string() +
                  ": h.1.mlp.c_proj.weight: holds -inf at [2, 1]: the checkpoint's weights must be finite (is the file damaged?)");
    EXPECT_FALSE(fs::exists(json));
}

}  // namespace
}  // namespace attnviz::app::clitest
