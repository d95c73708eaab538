// Lining up two inputs' tokens and measuring how far a head's map moved (compare.hpp), against
// hand derivations.
#include "core/attention/compare.hpp"

#include "core/base/error.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace attnviz::core {
namespace {

TEST(AlignTokens, IdenticalListsLineUpEverywhere) {
    const TokenAlignment al = alignTokens({5, 6, 7}, {5, 6, 7});
    EXPECT_TRUE(al.identical());
    EXPECT_FALSE(al.oneTokenChanged());
    EXPECT_EQ(al.partner, (std::vector<int>{0, 1, 2}));
    EXPECT_EQ(alignmentText(al, 3), "the same 3 tokens");
}

TEST(AlignTokens, OneReplacedTokenLinesUpByPosition) {
    const TokenAlignment al = alignTokens({1, 2, 3, 4}, {1, 2, 9, 4});
    EXPECT_EQ(al.prefix, 2);
    EXPECT_EQ(al.suffix, 1);
    EXPECT_EQ(al.changed, 2);
    EXPECT_EQ(al.partner, (std::vector<int>{0, 1, 2, 3}));
    EXPECT_EQ(alignmentText(al, 4), "one token changed: position 3");
}

TEST(AlignTokens, AnInsertionLeavesTheMiddleWithoutPartners) {
    // a = x y z w, b = x y q r z w: prefix 2, suffix 2; a's middle is empty, b's has two tokens.
    const TokenAlignment al = alignTokens({1, 2, 3, 4}, {1, 2, 7, 8, 3, 4});
    EXPECT_EQ(al.prefix, 2);
    EXPECT_EQ(al.suffix, 2);
    EXPECT_FALSE(al.sameLength);
    EXPECT_EQ(al.partner, (std::vector<int>{0, 1, 4, 5}));
    EXPECT_EQ(alignmentText(al, 6), "2 + 2 tokens line up; 0 of A and 2 of B do not");
    // A deletion the other way: a's unshared tokens get no partner.
    const TokenAlignment back = alignTokens({1, 2, 7, 8, 3, 4}, {1, 2, 3, 4});
    EXPECT_EQ(back.partner, (std::vector<int>{0, 1, -1, -1, 2, 3}));
}

TEST(AlignTokens, PrefixAndSuffixNeverOverlap) {
    // a = 1 1, b = 1 1 1: the prefix takes both of a's tokens, the suffix none.
    const TokenAlignment al = alignTokens({1, 1}, {1, 1, 1});
    EXPECT_EQ(al.prefix, 2);
    EXPECT_EQ(al.suffix, 0);
    EXPECT_EQ(al.partner, (std::vector<int>{0, 1}));
    const TokenAlignment none = alignTokens({1, 2}, {3, 4, 5});
    EXPECT_EQ(none.partner, (std::vector<int>{-1, -1}));
}

Mat matrix(int rows, int cols, std::initializer_list<float> v) {
    Mat m(rows, cols);
    auto it = v.begin();
    for (int i = 0; i < rows; ++i)
        for (int j = 0; j < cols; ++j) m(i, j) = *it++;
    return m;
}

TEST(MapMoved, TotalVariationOfLinedUpRows) {
    const Mat a = matrix(2, 2, {1, 0, 0.5f, 0.5f});
    const Mat b = matrix(2, 2, {1, 0, 0.9f, 0.1f});
    // row 0: 0; row 1: ½(0.4 + 0.4) = 0.4; mean 0.2
    EXPECT_NEAR(mapMoved(a, b, samePositions(2)), 0.2, 1e-7);
    EXPECT_NEAR(mapMoved(a, a, samePositions(2)), 0.0, 0.0);
    // Every weight elsewhere: 1.
    EXPECT_NEAR(mapMoved(matrix(1, 2, {1, 0}), matrix(1, 2, {0, 1}), samePositions(2)), 1.0, 1e-7);
}

TEST(MapMoved, ReadsOnlyLinedUpCells) {
    // a: 3 tokens; b: a's middle token deleted (partner -1). Rows 0 and 2 line up with b's 0 and 1.
    const Mat a = matrix(3, 3, {1, 0, 0, 0.5f, 0.5f, 0, 0.2f, 0.3f, 0.5f});
    const Mat b = matrix(2, 2, {1, 0, 0.4f, 0.6f});
    const TokenAlignment al = alignTokens({1, 2, 3}, {1, 3});
    ASSERT_EQ(al.partner, (std::vector<int>{0, -1, 1}));
    // row 0: 0; row 2: keys 0 and 2 → ½(|0.4 − 0.2| + |0.6 − 0.5|) = 0.15; mean over 2 rows
    EXPECT_NEAR(mapMoved(a, b, al), 0.075, 1e-7);
    MaskMat lined;
    const Mat d = alignedDifference(a, b, al, lined);
    EXPECT_NEAR(d(2, 0), 0.2f, 1e-7);
    EXPECT_NEAR(d(2, 2), 0.1f, 1e-7);
    EXPECT_FALSE(lined(1, 0));
    EXPECT_FALSE(lined(2, 1));
    EXPECT_TRUE(lined(2, 2));
    EXPECT_EQ(d(1, 1), 0.0f);
}

TEST(HeadsMoved, EveryHeadLayerMajorAndShapesChecked) {
    std::vector<Mat> as = {matrix(2, 2, {1, 0, 0.5f, 0.5f}), matrix(2, 2, {1, 0, 1, 0})};
    std::vector<Mat> bs = {matrix(2, 2, {1, 0, 0.5f, 0.5f}), matrix(2, 2, {1, 0, 0, 1})};
    const auto mapsOf = [](std::vector<Mat>& ms, int layers, int heads) {
        AttentionMaps m;
        m.layers = layers;
        m.heads = heads;
        m.queries = m.keys = 2;
        m.settings.resize(static_cast<std::size_t>(layers));
        m.weights = [&ms, heads](int l, int h) { return MatRef(ms[static_cast<std::size_t>(l * heads + h)]); };
        return m;
    };
    const std::vector<double> moved = headsMoved(mapsOf(as, 2, 1), mapsOf(bs, 2, 1), samePositions(2));
    ASSERT_EQ(moved.size(), 2U);
    EXPECT_NEAR(moved[0], 0.0, 1e-9);
    EXPECT_NEAR(moved[1], 0.5, 1e-7);  // row 1 moved entirely, row 0 not
    EXPECT_THROW(headsMoved(mapsOf(as, 2, 1), mapsOf(bs, 1, 2), samePositions(2)), InputError);
}

}  // namespace
}  // namespace attnviz::core
