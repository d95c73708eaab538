// Seed 002, exercise 4: the FLOPs of one self-attention layer at n = 1000, d = 512, by hand.
#include "core/labs/cost.hpp"

#include <gtest/gtest.h>

using namespace attnviz::core;

TEST(LayerFlops, SeedTwoAtAThousandTokensAndWidth512) {
    const LayerFlops f = layerFlops(1000, 512, 1, 512, 512, 1);
    EXPECT_EQ(f.projections, 1572864000.0);  // 3 · 2 · 1000 · 512²
    EXPECT_EQ(f.scores, 1024000000.0);       // 2 · 1000² · 512
    EXPECT_EQ(f.softmax, 3000000.0);         // 3 · 1000²
    EXPECT_EQ(f.weighted, 1024000000.0);     // 2 · 1000² · 512
    EXPECT_EQ(f.output, 524288000.0);        // 2 · 1000 · 512²
    EXPECT_EQ(f.withoutOutput(), 3623864000.0);
    EXPECT_EQ(f.total(), 4148152000.0);
    // Eight heads of 64 do the same work as one of 512, but 8 softmaxes.
    const LayerFlops eight = layerFlops(1000, 512, 8, 64, 64, 8);
    EXPECT_EQ(eight.projections, f.projections);
    EXPECT_EQ(eight.scores, f.scores);
    EXPECT_EQ(eight.softmax, 8 * f.softmax);
    // Grouped-query: 8 query heads on 2 key/value heads project a quarter of K and V.
    const LayerFlops grouped = layerFlops(17, 64, 8, 8, 8, 2);
    EXPECT_EQ(grouped.projections, 2.0 * 17 * 64 * (64 + 16 + 16));  // 208,896
}
