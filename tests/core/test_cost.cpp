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
        // what the lab draws before anything is measured: the same counts
        const CostPoint counted = costWork(T, d);
        EXPECT_EQ(counted.rnnSteps, p.rnnSteps);
        EXPECT_EQ(counted.rnnMultiplyAdds, p.rnnMultiplyAdds);
        EXPECT_EQ(counted.attentionMultiplyAdds, p.attentionMultiplyAdds);
        EXPECT_EQ(counted.attentionExps, p.attentionExps);
    }
}

CostPoint timed(long long tokens, double rnnMs, double attentionMs) {
    CostPoint p;
    p.tokens = tokens, p.rnnMs = rnnMs, p.attentionMs = attentionMs;
    return p;
}

// The words agree with the times: the ratio at the longest T in the direction it goes (never
// "0.00x"), and where the curves cross.
TEST(Cost, SummarySaysWhichWayTheRatioGoesAndWhereTheCurvesCross) {
    EXPECT_EQ(summariseCost({}).ratio, "");
    const CostSummary crossing =
        summariseCost({timed(16, 1.0, 0.1), timed(512, 4.0, 2.0), timed(1024, 8.0, 9.0), timed(4096, 30.0, 6390.0)});
    EXPECT_EQ(crossing.ratio, "attention 213× slower than the RNN at T = 4096");
    EXPECT_EQ(crossing.verdict, "Attention was faster up to T = 512 and slower from T = 1024: its work grows as T², the RNN's as T.");
    const CostSummary faster = summariseCost({timed(16, 1.0, 0.5), timed(64, 3.0, 0.4)});
    EXPECT_EQ(faster.ratio, "attention 7.5× faster than the RNN at T = 64");
    EXPECT_TRUE(faster.verdict.starts_with("Attention was faster at every T measured")) << faster.verdict;
    EXPECT_EQ(summariseCost({timed(16, 1.0, 1.05)}).ratio, "attention about as fast as the RNN at T = 16");
    const CostSummary slower = summariseCost({timed(16, 1.0, 2.0), timed(32, 1.0, 12.0)});
    EXPECT_EQ(slower.ratio, "attention 12× slower than the RNN at T = 32");
    EXPECT_TRUE(slower.verdict.starts_with("Attention was slower at every T measured")) << slower.verdict;
    const CostSummary noisy = summariseCost({timed(16, 1.0, 0.5), timed(32, 1.0, 2.0), timed(64, 1.0, 0.5), timed(128, 1.0, 3.0)});
    EXPECT_TRUE(noisy.verdict.starts_with("Attention was faster at 2 of 4 lengths, with no single crossing")) << noisy.verdict;
}

}  // namespace
}  // namespace attnviz::core
