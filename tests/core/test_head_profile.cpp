// A head's profile (head_profile.hpp): the bins' edges and the rule that finds a distance's bin,
// hand-derived curves of a previous-token head, a uniform head and a sink, and the sums of random
// maps under every mask, handed over in blocks in any order, equal to the definition read key by key.
#include "core/attention/attention_maps.hpp"
#include "core/attention/head_profile.hpp"
#include "core/base/prng.hpp"
#include "tests/every_mask.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

using namespace attnviz::core;
using Index = Eigen::Index;

namespace {

TEST(HeadProfile, DistanceBinsAreEightSinglesThenFourADoubling) {
    const ProfileBins bins = profileBins(40, 40, 4);
    EXPECT_EQ(bins.distance, (std::vector<Index>{0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, 24, 28, 32, 40}));
    for (const Index t : {1, 5, 8, 9, 40, 1000, 32768, 100003}) {
        const ProfileBins b = profileBins(t, t, 4);
        ASSERT_GE(b.distanceBins(), 1);
        EXPECT_EQ(b.distance.front(), 0);
        EXPECT_EQ(b.distance.back(), t);  // the last bin ends at the longest distance, t − 1
        for (Index d = 0; d < t; d += 1 + d / 64) {
            const int bin = distanceBin(b, d);
            ASSERT_LE(b.distance[static_cast<std::size_t>(bin)], d) << t << " " << d;
            ASSERT_LT(d, b.distance[static_cast<std::size_t>(bin) + 1]) << t << " " << d;
        }
    }
    EXPECT_EQ(profileBins(32768, 32768, 4).distanceBins(), 8 + 12 * 4);  // 8 … 32768: twelve doublings
}

TEST(HeadProfile, PositionBinsAreRoundBlocksOfAtMost256) {
    EXPECT_EQ(profileBins(100, 100, 4).positionBins(), 100);  // one query a bin
    const ProfileBins b = profileBins(1000, 1000, 4);         // ⌈1000 / 256⌉ = 4 → blocks of 5
    EXPECT_EQ(b.positionBins(), 200);
    EXPECT_EQ(b.positions[1], 5);
    EXPECT_EQ(b.positions.back(), 1000);
    const ProfileBins c = profileBins(32768, 32768, 4);  // 128 → 200
    EXPECT_EQ(c.positions[1], 200);
    EXPECT_EQ(c.positionBins(), 164);
    EXPECT_EQ(c.positions.back(), 32768);
}

TEST(HeadProfile, HandDerivedCurves) {
    const Index t = 40;
    Settings causal;
    causal.causal = true;
    // A previous-token head: row 0 on itself, every other row on the key before it.
    Mat previous = Mat::Zero(t, t), uniform = Mat::Zero(t, t), sink = Mat::Zero(t, t);
    previous(0, 0) = 1;
    for (Index i = 1; i < t; ++i) previous(i, i - 1) = 1;
    for (Index i = 0; i < t; ++i) uniform.row(i).head(i + 1).setConstant(1.0f / static_cast<float>(i + 1));
    for (Index i = 0; i < t; ++i) sink(i, 0) = 1;

    const HeadProfile p = headProfile(previous, causal, 4);
    EXPECT_DOUBLE_EQ(p.byDistance[0], 1.0 / 40);  // 40 pairs at distance 0, one of them 1
    EXPECT_DOUBLE_EQ(p.byDistance[1], 1.0);       // every pair at distance 1 holds 1
    for (std::size_t b = 2; b < p.byDistance.size(); ++b) EXPECT_EQ(p.byDistance[b], 0.0) << b;
    EXPECT_EQ(p.pairs[0], 40);
    EXPECT_EQ(p.pairs[1], 39);
    EXPECT_EQ(p.pairs[9], 30 + 29);                      // distances 10 and 11
    for (std::size_t q = 0; q < p.firstKAt.size(); ++q)  // only row 4 reads a first-4 key (key 3)
        EXPECT_DOUBLE_EQ(p.firstKAt[q], q == 4 ? 1.0 : 0.0) << q;
    EXPECT_EQ(p.rows[3], 0);  // queries 0 … 3 come before the first four keys end
    EXPECT_EQ(p.rows[4], 1);

    // Uniform attention is its own reference; the reference by hand at distance 39: row 39 alone, 1/40.
    const HeadProfile u = headProfile(uniform, causal, 4);
    for (std::size_t b = 0; b < u.byDistance.size(); ++b) EXPECT_NEAR(u.byDistance[b], u.uniform[b], 1e-7) << b;
    // the last bin, distances 32 … 39: row 31 + m reads m of them (distances 32 … 31 + m), each at 1/(32 + m); 36 pairs
    double lastBin = 0;
    for (int m = 1; m <= 8; ++m) lastBin += m / (32.0 + m);
    EXPECT_NEAR(u.uniform.back(), lastBin / 36, 1e-12);
    for (std::size_t q = 4; q < u.firstKAt.size(); ++q) EXPECT_NEAR(u.firstKAt[q], 4.0 / static_cast<double>(q + 1), 1e-7) << q;

    // A sink: every row on key 0. At distance d < 8 one pair of the 40 − d holds 1 (row d).
    const HeadProfile s = headProfile(sink, causal, 4);
    for (std::size_t d = 0; d < 8; ++d) EXPECT_DOUBLE_EQ(s.byDistance[d], 1.0 / static_cast<double>(40 - d)) << d;
    EXPECT_DOUBLE_EQ(s.byDistance.back(), 8.0 / 36);  // rows 32 … 39 over 36 pairs: a sink rises at the longest distances
    EXPECT_GT(s.byDistance.back(), 3 * s.uniform.back());
    for (std::size_t q = 4; q < s.firstKAt.size(); ++q) EXPECT_DOUBLE_EQ(s.firstKAt[q], 1.0) << q;
}

// The definition read key by key: the mask of each row from blockedRow, the weights in double.
HeadProfile byDefinition(const Mat& a, const Settings& settings, const ProfileBins& bins) {
    HeadProfile p;
    const auto nb = static_cast<std::size_t>(bins.distanceBins()), np = static_cast<std::size_t>(bins.positionBins());
    std::vector<double> weight(nb, 0), uniform(nb, 0), firstK(np, 0);
    p.pairs.assign(nb, 0);
    p.rows.assign(np, 0);
    std::vector<char> blocked;
    for (Index i = 0; i < a.rows(); ++i) {
        blockedRow(settings, i, a.cols(), blocked);
        const auto readable = static_cast<double>(std::count(blocked.begin(), blocked.end(), 0));
        for (Index j = 0; j < a.cols(); ++j) {
            if (blocked[static_cast<std::size_t>(j)]) continue;
            std::size_t b = 0;
            while (bins.distance[b + 1] <= std::abs(i - j)) ++b;
            weight[b] += a(i, j);
            uniform[b] += 1.0 / readable;
            ++p.pairs[b];
        }
        if (i < bins.firstTokens) continue;
        std::size_t q = 0;
        while (bins.positions[q + 1] <= i) ++q;
        for (Index j = 0; j < std::min<Index>(bins.firstTokens, a.cols()); ++j)
            if (!blocked[static_cast<std::size_t>(j)]) firstK[q] += a(i, j);
        ++p.rows[q];
    }
    for (std::size_t b = 0; b < nb; ++b) {
        p.byDistance.push_back(p.pairs[b] ? weight[b] / static_cast<double>(p.pairs[b]) : 0.0);
        p.uniform.push_back(p.pairs[b] ? uniform[b] / static_cast<double>(p.pairs[b]) : 0.0);
    }
    for (std::size_t q = 0; q < np; ++q) p.firstKAt.push_back(p.rows[q] ? firstK[q] / static_cast<double>(p.rows[q]) : 0.0);
    return p;
}

TEST(HeadProfile, RandomMapsUnderEveryMaskInBlocksEqualTheDefinition) {
    const Index tq = 37, tk = 37;
    const std::vector<Settings> masks = everyMask(tq, tk, 5, 4);
    Prng prng(7);
    Mat scores(tq, tk);
    for (Index k = 0; k < scores.size(); ++k) scores.data()[k] = static_cast<float>(2 * prng.normal());
    for (std::size_t m = 0; m < masks.size(); ++m)
        for (const int k : {1, 3}) {
            SCOPED_TRACE("mask " + std::to_string(m) + ", k " + std::to_string(k));
            Mat a;
            softmaxRows(scores, 1.0f, masks[m], a);
            const ProfileBins bins = profileBins(tq, tk, k, 10);  // blocks of 5 queries
            ASSERT_EQ(bins.positions[1], 5);
            ProfileSums sums(bins, tq, tk, masks[m]);
            for (Index r0 = 36; r0 >= 0; r0 -= 6) sums.addRows(a.middleRows(r0, std::min<Index>(6, tq - r0)), r0);  // last block first
            sums.addRows(a.middleRows(0, 0), 0);
            const HeadProfile got = sums.result(), want = byDefinition(a, masks[m], bins);
            EXPECT_EQ(got.pairs, want.pairs);
            EXPECT_EQ(got.rows, want.rows);
            ASSERT_EQ(got.byDistance.size(), want.byDistance.size());
            for (std::size_t b = 0; b < want.byDistance.size(); ++b) {
                EXPECT_NEAR(got.byDistance[b], want.byDistance[b], 1e-7) << b;
                EXPECT_NEAR(got.uniform[b], want.uniform[b], 1e-12) << b;
            }
            ASSERT_EQ(got.firstKAt.size(), want.firstKAt.size());
            for (std::size_t q = 0; q < want.firstKAt.size(); ++q) EXPECT_NEAR(got.firstKAt[q], want.firstKAt[q], 1e-7) << q;
        }
}

}  // namespace
