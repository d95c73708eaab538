// 10,000 random actions through the action layer: typing, swaps, toggles, head counts,
// temperature extremes, a single token and back. Nothing may crash, no number may be NaN or
// Inf, every row must sum to 1 (or 0 when fully masked), and memory must stay flat.
#include "app/state/actions.hpp"
#include "core/base/prng.hpp"
#include "core/scenario/presets.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

using namespace attnviz;
using namespace attnviz::app;

namespace {

long residentKiB() {
    std::ifstream statm("/proc/self/statm");
    long pages = 0, resident = 0;
    statm >> pages >> resident;
    return resident * 4;
}

void expectSane(const AppState& s) {
    for (std::size_t h = 0; h < s.forward.heads.size(); ++h) {
        const core::Mat& a = s.forward.heads[h].weights;
        ASSERT_EQ(a.rows(), s.model.tq());
        ASSERT_TRUE(a.allFinite()) << "head " << h;
        ASSERT_TRUE(s.forward.heads[h].output.allFinite()) << "head " << h;
        for (Eigen::Index i = 0; i < a.rows(); ++i) {
            const float sum = a.row(i).sum();
            ASSERT_TRUE(std::abs(sum - 1.0f) < 1e-4f || sum == 0.0f) << "head " << h << " row " << i << " sums to " << sum;
        }
    }
    ASSERT_TRUE(s.forward.output.allFinite());
}

Action randomAction(core::Prng& rng, const AppState& s) {
    const auto pick = [&](int n) { return static_cast<int>(rng.nextU64() % static_cast<std::uint64_t>(n)); };
    const int T = static_cast<int>(s.model.tq());
    static const char* sentences[] = {"the cat sat on the mat",
                                      "dog bites man",
                                      "x",
                                      "",
                                      "   ",
                                      "ab\xFF\xFE cd",
                                      "naïve café — α β γ 🦀",
                                      "e\xCC\x81 \xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD",
                                      "a a a a a a a a"};
    switch (pick(16)) {
        case 0: return action::SetSentence{sentences[pick(9)]};
        case 1: return action::SwapTokens{pick(T + 1), pick(T + 1)};  // sometimes out of range
        case 2: return action::ToggleCausal{};
        case 3: return action::SetHeads{1 + pick(8)};
        case 4: return action::SetTemperature{static_cast<float>(std::pow(10.0, rng.uniform() * 6.0 - 3.0))};
        case 5: return action::SetDModel{1 + pick(32)};
        case 6: return action::SetTokenizer{pick(2) ? core::Tokenizer::Char : core::Tokenizer::Word};
        case 7: return action::SelectHead{pick(10) - 1};
        case 8: return action::StepQuery{pick(5) - 2};
        case 9: return action::Shuffle{rng.nextU64()};
        case 10: return action::ResetSwaps{};
        case 11: return action::SetPositional{pick(2) ? core::Positional::Sinusoidal : core::Positional::None};
        case 12: return action::SetScaled{pick(2) == 0};
        case 13: return action::PickSwapChip{pick(T)};
        case 14: return action::SetEmbedding{pick(3) ? core::EmbeddingKind::Random : core::EmbeddingKind::OneHot};
        default: return action::SetTemperature{pick(2) ? 1e-3f : 1e3f};
    }
}

}  // namespace

TEST(Soak, TenThousandRandomActions) {
    AppState s = makeState(core::loadPreset("default"));
    recompute(s);
    core::Prng rng(2024);
    long baseline = 0;
    int rejected = 0;
    for (int n = 0; n < 10000; ++n) {
        const Action a = randomAction(rng, s);
        if (!apply(s, a)) ++rejected;
        if (n % 3 == 0) recomputeStep(s, s.view.selectedHead, 1);  // the app's lazy path
        else recompute(s);
        if (isFresh(s)) expectSane(s);
        if (HasFatalFailure()) return;
        if (n == 1000) baseline = residentKiB();
    }
    recompute(s);
    expectSane(s);
    EXPECT_GT(rejected, 50);        // the bad inputs were refused (empty sentences, out-of-range swaps)
#if !defined(__SANITIZE_ADDRESS__)  // AddressSanitizer quarantines freed memory: RSS says nothing there
    EXPECT_LT(residentKiB() - baseline, 20 * 1024) << "memory grew by " << (residentKiB() - baseline) << " KiB";
#else
    (void)baseline;
#endif
}

TEST(Soak, OneTokenAndBack) {
    AppState s = makeState(core::loadPreset("default"));
    for (int round = 0; round < 50; ++round) {
        ASSERT_TRUE(apply(s, action::SetSentence{"x"}));
        apply(s, action::ToggleCausal{});
        recompute(s);
        ASSERT_EQ(s.model.tq(), 1);
        for (const auto& h : s.forward.heads) EXPECT_EQ(h.weights(0, 0), 1.0f);
        ASSERT_TRUE(apply(s, action::SetSentence{"the cat sat on the mat"}));
        recompute(s);
        expectSane(s);
    }
}
