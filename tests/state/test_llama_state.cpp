// A state showing a Llama-family model: every layer's heads as the model computed them (rotary
// positions, grouped-query heads, q/k norms, a sliding-window layer in its own window), typing at
// the end, and the softmax what-ifs on a rotary layer. Without a window.
#include "app/state/actions.hpp"
#include "core/models/loaded_model.hpp"
#include "tests/test_folder.hpp"
#include "tests/tiny_llama.hpp"

#include <gtest/gtest.h>

using namespace attnviz;
using namespace attnviz::app;

namespace {

class LlamaState : public testfs::TestFolder {
protected:
    AppState open(const nlohmann::json& config, const std::string& sentence = " the cat sat on the mat, then the cat ran") {
        tinyllama::writeCheckpoint(m_dir, config, tinyllama::weights(config, 7));
        core::Scenario s;
        s.model = m_dir.string();
        s.sentence = sentence;
        s.causal = true;
        AppState state = makeState(s);
        recompute(state);
        return state;
    }
    // Every head of every layer, shown as a scenario, is the model's own kept map, to the bit.
    static void expectEveryLayerIsKept(AppState& s) {
        for (int l = 0; l < s.loaded.layers(); ++l) {
            ASSERT_TRUE(apply(s, action::SelectLayer{l}));
            recompute(s);
            EXPECT_EQ(s.settings.window, s.loaded.checkpoint->config().window(l)) << "layer " << l;
            for (int h = 0; h < s.model.heads; ++h)
                EXPECT_EQ(s.forward.heads[static_cast<std::size_t>(h)].weights, s.loaded.run->weights(l, h)) << l << ", " << h;
        }
    }
};

TEST_F(LlamaState, EveryLayerShowsTheModelsOwnHeads) {
    AppState s = open(tinyllama::config("qwen3"));
    ASSERT_TRUE(s.loaded) << s.error;
    EXPECT_EQ(s.model.heads, tinyllama::kHeads);
    EXPECT_EQ(s.model.kvHeads, tinyllama::kKvHeads);
    EXPECT_EQ(s.model.kvHeadOf(3), 1);
    EXPECT_EQ(s.model.dk, 2 * tinyllama::kHeadDim);
    EXPECT_EQ(s.model.qNorm.size(), 2 * tinyllama::kHeadDim);
    expectEveryLayerIsKept(s);
    EXPECT_EQ(s.loaded.forwardPasses, 1);
}

TEST_F(LlamaState, ASlidingWindowLayerIsShownInItsWindow) {
    AppState s = open(tinyllama::config("qwen2", {{"sliding_window", 4}, {"use_sliding_window", true}, {"max_window_layers", 1}}));
    ASSERT_TRUE(s.loaded) << s.error;
    expectEveryLayerIsKept(s);
    ASSERT_TRUE(apply(s, action::SelectLayer{1}));
    recompute(s);
    EXPECT_EQ(s.settings.window, 4);
    EXPECT_EQ(s.forward.heads[0].weights(s.model.tq() - 1, 0), 0.0f);  // the first key is out of the last query's window
}

TEST_F(LlamaState, TypingAtTheEndRunsOnlyTheNewPositions) {
    AppState s = open(tinyllama::config("llama"), " the cat");
    ASSERT_TRUE(s.loaded) << s.error;
    ASSERT_TRUE(apply(s, action::SetSentence{" the cat sat"}));
    EXPECT_EQ(s.loaded.forwardPasses, 1);
    EXPECT_EQ(s.loaded.appendedPasses, 1);
    expectEveryLayerIsKept(s);
    // A what-if on the shown layer: a higher temperature flattens its rows, the model's pass stays.
    ASSERT_TRUE(apply(s, action::SetTemperature{4.0f}));
    recompute(s);
    EXPECT_LT(s.forward.heads[0].weights.row(s.model.tq() - 1).maxCoeff(), s.loaded.run->weights(1, 0).row(s.model.tq() - 1).maxCoeff());
}

}  // namespace
