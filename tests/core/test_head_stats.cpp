// Head statistics against hand derivations (head_stats.hpp).
#include "core/attention/head_stats.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace attnviz::core {
namespace {

Settings causal(int window = 0) {
    Settings s;
    s.causal = true;
    s.window = window;
    return s;
}

TEST(HeadStats, UniformCausalRowsByHand) {
    // Each row uniform over the keys it may read: [1], [½ ½], [⅓ ⅓ ⅓]; tokens 5 7 5.
    Mat a = Mat::Zero(3, 3);
    a(0, 0) = 1;
    a.row(1).head(2).setConstant(0.5f);
    a.row(2).setConstant(1.0f / 3);
    const HeadStats s = headStats(a, {5, 7, 5}, causal());
    EXPECT_NEAR(s.entropy, (std::log(2.0) + std::log(3.0)) / 3, 1e-7);
    EXPECT_NEAR(s.entropyShare, 1.0, 1e-7);  // uniform over what each row may see (row 0 sees one key: left out)
    EXPECT_NEAR(s.distance, (0 + 0.5 + 1.0) / 3, 1e-7);
    EXPECT_NEAR(s.self, (1 + 0.5 + 1.0 / 3) / 3, 1e-7);
    EXPECT_NEAR(s.previous, (0.5 + 1.0 / 3) / 2, 1e-7);  // rows 1 and 2 have a previous key
    EXPECT_NEAR(s.first, (1 + 0.5 + 1.0 / 3) / 3, 1e-7);
    // Duplicate: query 2 (token 5) reads key 0 (token 5): ⅓ of the total mass 3.
    EXPECT_NEAR(s.duplicate, (1.0 / 3) / 3, 1e-7);
    // Induction: query 2 (token 5) reads key 1, whose previous token is 5: ⅓ of 3.
    EXPECT_NEAR(s.induction, (1.0 / 3) / 3, 1e-7);
}

TEST(HeadStats, APreviousTokenHeadAndASinkHead) {
    const Eigen::Index t = 6;
    Mat previous = Mat::Zero(t, t), sink = Mat::Zero(t, t);
    previous(0, 0) = 1;
    for (Eigen::Index i = 1; i < t; ++i) previous(i, i - 1) = 1;
    sink.col(0).setOnes();
    const std::vector<int> ids = {1, 2, 3, 1, 2, 3};
    const HeadStats p = headStats(previous, ids, causal()), k = headStats(sink, ids, causal());
    EXPECT_DOUBLE_EQ(p.previous, 1.0);
    EXPECT_DOUBLE_EQ(p.entropy, 0.0);
    EXPECT_NEAR(p.distance, 5.0 / 6, 1e-12);
    EXPECT_DOUBLE_EQ(k.first, 1.0);
    EXPECT_NEAR(k.previous, 1.0 / 5, 1e-12);  // row 1's previous key is key 0
    // An induction head on a repeated sequence: query i reads the key after the earlier copy of
    // its token (i − 3 + 1), all of its mass.
    Mat induction = Mat::Zero(t, t);
    for (Eigen::Index i = 0; i < 3; ++i) induction(i, 0) = 1;
    for (Eigen::Index i = 3; i < t; ++i) induction(i, i - 2) = 1;
    EXPECT_NEAR(headStats(induction, ids, causal()).induction, 3.0 / 6, 1e-12);
    // The previous-token head's rows 0 and 1 read key 0: a third of its rows' mass, over ε = 0.3.
    EXPECT_NEAR(p.first, 2.0 / 6, 1e-12);
    EXPECT_NEAR(sinkShare({p, k}, 0.3), 1.0, 1e-12);
    EXPECT_NEAR(sinkShare({p, k}, 0.5), 0.5, 1e-12);
    EXPECT_EQ(sinkShare({}, 0.3), 0.0);
}

TEST(HeadStats, OnlyTheRowsThatMayReadAKeyCountForIt) {
    // A window of 2: only rows 0 and 1 may read key 0, so `first` is their mean.
    Mat a = Mat::Zero(4, 4);
    a(0, 0) = 1;
    a(1, 0) = 0.25f, a(1, 1) = 0.75f;
    a(2, 1) = 0.5f, a(2, 2) = 0.5f;
    a(3, 2) = 0.5f, a(3, 3) = 0.5f;
    const HeadStats s = headStats(a, {}, causal(2));
    EXPECT_NEAR(s.first, (1 + 0.25) / 2, 1e-7);
    EXPECT_NEAR(s.entropyShare, (0.5623351446188083 / std::log(2.0) + 1 + 1) / 3, 1e-6);
    EXPECT_EQ(s.duplicate, 0.0);  // no ids
}

}  // namespace
}  // namespace attnviz::core
