// The memory wall against seed 000's printed table, and the live cost measurement's shape.
#include "core/labs/cost.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace attnviz::core {
namespace {

std::string oneDecimal(double v) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.1f", v);
    return buffer;
}

// Seed 000 §39.3.2, B = 1, h = 16, L = 32, fp16:
//   T = 512 per-layer attn matrix = 0.5 MiB total stored across 32 layers x 16 heads = 0.2 GiB
//   … T = 131072 … = 32768.0 MiB … = 16384.0 GiB
TEST(MemoryWall, ReproducesTheSeedTableToItsPrintedDigits) {
    const auto rows = memoryWall(MemoryWall{}, memoryWallTokens(), 24ULL << 30);
    const char* perMatrix[] = {"0.5", "8.0", "128.0", "2048.0", "32768.0"};
    const char* total[] = {"0.2", "4.0", "64.0", "1024.0", "16384.0"};
    const long long tokens[] = {512, 2048, 8192, 32768, 131072};
    ASSERT_EQ(rows.size(), 5u);
    for (std::size_t i = 0; i < 5; ++i) {
        EXPECT_EQ(rows[i].tokens, tokens[i]);
        EXPECT_EQ(oneDecimal(rows[i].perMatrixMiB), perMatrix[i]) << "T = " << tokens[i];
        EXPECT_EQ(oneDecimal(rows[i].totalGiB), total[i]) << "T = " << tokens[i];
    }
    // 24 GiB of memory holds the first two rows only
    EXPECT_TRUE(rows[0].fits);
    EXPECT_TRUE(rows[1].fits);
    EXPECT_FALSE(rows[2].fits);
}

TEST(MemoryWall, ScalesWithEveryFactor) {
    const MemoryWall wall{4, 8, 2, 4};  // B, h, L, fp32
    const auto rows = memoryWall(wall, {1024}, 0);
    EXPECT_DOUBLE_EQ(rows[0].perMatrixMiB, 4.0);                 // 4 bytes x 1024²
    EXPECT_DOUBLE_EQ(rows[0].totalGiB, 4.0 * 4 * 8 * 2 / 1024);  // x B h L
    EXPECT_FALSE(rows[0].fits);                                  // unknown memory: nothing fits
    EXPECT_GT(physicalMemoryBytes(), 1ULL << 28);
    // a T of one's own: 1 x 16 x 32 fp16 at T = 4096 is 16 GiB
    EXPECT_DOUBLE_EQ(memoryWall(MemoryWall{}, {MemoryWall{}.tokens}, 0)[0].totalGiB, 16.0);
}

// Times depend on the machine and on what else runs beside the test, so nothing here asserts
// anything about them (they belong to bench/); the work each side did is exact.
TEST(Cost, CountsTheWorkOfEachSideExactly) {
    for (const long long T : {1LL, 16LL, 100LL, 512LL}) {
        SCOPED_TRACE(T);
        const int d = 16;
        const CostPoint p = measureCost(T, d, 0.0);
        EXPECT_EQ(p.tokens, T);
        EXPECT_EQ(p.width, d);
        // the RNN: one step a token, each W_h h and W_x x (d² multiply-adds each)
        EXPECT_EQ(p.rnnSteps, T);
        EXPECT_EQ(p.rnnMultiplyAdds, static_cast<double>(T) * 2 * d * d);
        // attention: Q Kᵀ and A·V, T² d multiply-adds each, and one exp per weight
        EXPECT_EQ(p.attentionMultiplyAdds, 2.0 * static_cast<double>(T) * static_cast<double>(T) * d);
        EXPECT_EQ(p.attentionExps, static_cast<double>(T) * static_cast<double>(T));
    }
}

TEST(Cost, PrintedRatioIsTheRatioOfTheTimesGiven) {
    CostPoint p;
    p.rnnMs = 3.0;
    p.attentionMs = 0.75;
    EXPECT_DOUBLE_EQ(p.rnnOverAttention(), 4.0);
    p.rnnMs = 0.5;
    p.attentionMs = 2.0;
    EXPECT_DOUBLE_EQ(p.rnnOverAttention(), 0.25);
}

}  // namespace
}  // namespace attnviz::core
