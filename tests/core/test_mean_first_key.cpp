// The mean over heads with the first key left out, against a hand derivation.
#include "core/attention/attention.hpp"

#include <gtest/gtest.h>

namespace attnviz::core {
namespace {

Forward twoHeads() {
    Forward f;
    f.heads.resize(2);
    // Causal rows: query 0 reads only key 0.
    f.heads[0].weights = Mat(3, 3);
    f.heads[0].weights << 1, 0, 0, 0.5f, 0.5f, 0, 0.5f, 0.25f, 0.25f;
    f.heads[1].weights = Mat(3, 3);
    f.heads[1].weights << 1, 0, 0, 0.9f, 0.1f, 0, 0.8f, 0.2f, 0;
    return f;
}

TEST(MeanFirstKey, EachHeadsRowIsRenormalisedOverTheOtherKeysBeforeTheMean) {
    const Forward f = twoHeads();
    const Mat mean = meanWeights(f, {.skipFirstKey = true});
    // Row 0 reads only key 0: nothing is left, 0 everywhere. Row 1: both heads put all of the rest
    // on key 1. Row 2: head 0 [0.5, 0.5] over keys 1, 2; head 1 [1, 0]; the mean [0.75, 0.25].
    Mat want(3, 3);
    want << 0, 0, 0, 0, 1, 0, 0, 0.75f, 0.25f;
    EXPECT_TRUE(mean.isApprox(want, 1e-6f)) << mean;
    // The plain mean is unchanged by the option's default.
    Mat plain(3, 3);
    plain << 1, 0, 0, 0.7f, 0.3f, 0, 0.65f, 0.225f, 0.125f;
    EXPECT_TRUE(meanWeights(f).isApprox(plain, 1e-6f)) << meanWeights(f);
    // A band of rows is that band of the whole.
    EXPECT_TRUE(meanWeights(f, 2, 1, {.skipFirstKey = true}).isApprox(want.row(2), 1e-6f));
}

TEST(MeanFirstKey, PooledTexelsAreThoseOfTheMean) {
    const Forward f = twoHeads();
    Settings causal;
    causal.causal = true;
    std::vector<float> pooled, whole;
    poolMeanTexels(f, causal, 2, pooled, {.skipFirstKey = true});
    poolTexels(meanWeights(f, {.skipFirstKey = true}), causal, 2, whole);
    EXPECT_EQ(pooled, whole);
    // Block (0, 0) holds rows 0-1 × keys 0-1: the largest readable is row 1's key 1, 1.
    EXPECT_FLOAT_EQ(pooled[0], 1.0f);
    EXPECT_STREQ(meanRule({.skipFirstKey = true}), "mean over heads, first key left out (each head's row over keys j >= 1 renormalised)");
}

}  // namespace
}  // namespace attnviz::core
