// Permutation equivariance (seed 000 §39.5, seed 004) as a property over many seeds.
#include "core/attention/permutation.hpp"
#include "core/base/prng.hpp"
#include "core/scenario/model.hpp"

#include <gtest/gtest.h>

using namespace attnviz::core;

namespace {

Scenario randomScenario(std::uint64_t seed, Positional positional) {
    Prng rng(seed);
    Scenario s;
    const int T = 2 + static_cast<int>(rng.nextU64() % 9);
    std::vector<std::string> words = {"the", "cat", "sat", "on", "mat", "dog", "bites", "man"};
    std::vector<std::string> tokens;
    for (int t = 0; t < T; ++t) tokens.push_back(words[rng.nextU64() % words.size()]);
    s.tokens = tokens;
    s.heads = 1 + static_cast<int>(rng.nextU64() % 4);
    s.dModel = 4 * *s.heads;
    s.seed = seed;
    s.positional = positional;
    s.wo.kind = seed % 2 ? MatrixSpec::Kind::Random : MatrixSpec::Kind::None;
    const int swaps = 1 + static_cast<int>(rng.nextU64() % 4);
    for (int k = 0; k < swaps; ++k) s.swaps.emplace_back(static_cast<int>(rng.nextU64() % T), static_cast<int>(rng.nextU64() % T));
    return s;
}

EquivarianceReport check(const Scenario& s) {
    const Model base = buildModel(s, false), permuted = buildModel(s);
    const Settings st = buildSettings(s, base);
    return checkEquivariance(runForward(base, st), runForward(permuted, st), permuted.perm);
}

}  // namespace

TEST(Permutation, SwapsComposeInOrder) {
    const auto p = permutationFromSwaps(4, {{0, 1}, {1, 2}}, "swaps");
    // [a b c d] -> [b a c d] -> [b c a d]
    EXPECT_EQ(p, (std::vector<int>{1, 2, 0, 3}));
    EXPECT_EQ(permuteLabels({"a", "b", "c", "d"}, p), (std::vector<std::string>{"b", "c", "a", "d"}));
    Mat m(3, 3);
    m << 1, 2, 3, 4, 5, 6, 7, 8, 9;
    Mat expected(3, 3);
    expected << 9, 7, 8, 3, 1, 2, 6, 4, 5;  // P M Pᵀ with perm {2, 0, 1}
    EXPECT_EQ(permuteBoth(m, {2, 0, 1}), expected);
}

TEST(Permutation, EquivarianceHoldsWithoutPositionalEncoding) {
    for (std::uint64_t seed = 0; seed < 100; ++seed) {
        const Scenario s = randomScenario(seed, Positional::None);
        const EquivarianceReport r = check(s);
        EXPECT_LE(r.outputDiff, 1e-5f) << "seed " << seed;
        EXPECT_LE(r.maxWeightDiff(), 1e-5f) << "seed " << seed;
    }
}

TEST(Permutation, EquivarianceFailsClearlyWithPositionalEncoding) {
    int broken = 0, nonTrivial = 0;
    for (std::uint64_t seed = 0; seed < 100; ++seed) {
        const Scenario s = randomScenario(seed, Positional::Sinusoidal);
        const Model permuted = buildModel(s);
        // A swap of two equal tokens (or a swap and its undoing) moves nothing.
        if (permuteLabels(buildModel(s, false).queryTokens, permuted.perm) == buildModel(s, false).queryTokens && isIdentity(permuted.perm))
            continue;
        if (isIdentity(permuted.perm)) continue;
        ++nonTrivial;
        if (check(s).outputDiff > 1e-3f) ++broken;
    }
    EXPECT_GT(nonTrivial, 50);
    EXPECT_EQ(broken, nonTrivial);
}

TEST(Permutation, CausalMaskBreaksEquivariance) {
    Scenario s = randomScenario(3, Positional::None);
    s.tokens = std::vector<std::string>{"a", "b", "c", "d"};
    s.swaps = {{0, 3}};
    s.causal = true;
    EXPECT_GT(check(s).outputDiff, 1e-3f);
}

TEST(Permutation, RowMultiset) {
    Mat a(3, 2), b(3, 2);
    a << 1, 2, 3, 4, 5, 6;
    b << 5, 6, 1, 2, 3, 4;
    EXPECT_TRUE(sameRowMultiset(a, b, 0.0f));
    b(0, 0) = 5.1f;
    EXPECT_FALSE(sameRowMultiset(a, b, 0.01f));
    Mat dup(3, 2);
    dup << 1, 2, 1, 2, 3, 4;
    EXPECT_FALSE(sameRowMultiset(a, dup, 0.0f));  // each row matched once
}
