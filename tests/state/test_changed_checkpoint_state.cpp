// The window's state when the checkpoint it shows changes on disk: an edit opens the folder again
// when the file is whole, and when it is not (cut short, or holding a NaN) the error is a message
// and the maps, the tokens and the next tokens shown before stay. Without a window.
#include "app/state/actions.hpp"
#include "core/models/loaded_model.hpp"
#include "tests/test_folder.hpp"
#include "tests/tiny_gpt2.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include <unistd.h>

using namespace attnviz;
using namespace attnviz::app;

namespace {

class CheckpointChangedInTheWindow : public testfs::TestFolder {
protected:
    AppState open() {
        tinygpt2::writeCheckpoint(m_dir, tinygpt2::weights(7));
        core::Scenario s;
        s.model = m_dir.string();
        s.sentence = " the the";
        s.causal = true;
        AppState state = makeState(s);
        recompute(state);
        return state;
    }
    std::string weightsPath() const { return (m_dir / "model.safetensors").string(); }
};

void expectKept(const AppState& s, const core::Mat& weights, const std::vector<float>& probs) {
    EXPECT_EQ(s.model.tq(), 2);
    EXPECT_EQ(s.forward.heads[1].weights, weights);
    EXPECT_EQ(s.nextProbs, probs);
    for (const float p : s.nextProbs) EXPECT_TRUE(std::isfinite(p));
}

TEST_F(CheckpointChangedInTheWindow, TheSameBytesCopiedOverAreOpenedAgainOnTheNextEdit) {
    AppState s = open();
    const auto before = s.loaded.checkpoint;
    testfs::writeFile(weightsPath(), testfs::readFile(weightsPath()));  // what cp does
    ASSERT_TRUE(apply(s, action::SetSentence{" the the the"})) << s.error;
    EXPECT_NE(s.loaded.checkpoint, before);
    EXPECT_FALSE(s.loaded.checkpoint->changed());
    EXPECT_EQ(s.model.tq(), 3);
}

TEST_F(CheckpointChangedInTheWindow, AFileCutShortIsAMessageAndThePreviousModelStays) {
    AppState s = open();
    const core::Mat weights = s.forward.heads[1].weights;
    const std::vector<float> probs = s.nextProbs;
    ASSERT_EQ(::truncate(weightsPath().c_str(), 100), 0);
    EXPECT_FALSE(apply(s, action::SetSentence{" the the the"}));
    EXPECT_EQ(s.error.rfind(weightsPath() + ": truncated", 0), 0u) << s.error;
    expectKept(s, weights, probs);
    // Another layer needs the weights again: refused the same way, the shown layer kept.
    EXPECT_FALSE(apply(s, action::SelectLayer{1}));
    EXPECT_EQ(s.scenario.layer, 0);
    expectKept(s, weights, probs);
}

TEST_F(CheckpointChangedInTheWindow, ANaNWrittenOverIsNamedAndNeverShown) {
    AppState s = open();
    const core::Mat weights = s.forward.heads[1].weights;
    const std::vector<float> probs = s.nextProbs;
    auto w = tinygpt2::weights(7);
    w["ln_f.weight"].values[3] = std::numeric_limits<float>::quiet_NaN();
    testfs::writeFile(weightsPath(), tinygpt2::safetensors(w));
    EXPECT_FALSE(apply(s, action::SetSentence{" the the the"}));
    EXPECT_EQ(s.error, weightsPath() + ": ln_f.weight: holds NaN at [3]: the checkpoint's weights must be finite (is the file damaged?)");
    expectKept(s, weights, probs);
}

}  // namespace
