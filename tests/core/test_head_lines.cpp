// The head view's lines (head_lines.hpp): which lines a layer's heads and queries get, by hand
// and against an independent count of the top-k rule.
#include "core/attention/head_lines.hpp"

#include "core/base/prng.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace attnviz::core {
namespace {

AttentionMaps mapsOf(const std::vector<Mat>& heads, const Settings& settings) {
    AttentionMaps maps;
    maps.layers = 1;
    maps.heads = static_cast<int>(heads.size());
    maps.queries = heads.front().rows();
    maps.keys = heads.front().cols();
    maps.settings = {settings};
    maps.weights = [&heads](int, int h) { return MatRef(heads[static_cast<std::size_t>(h)]); };
    return maps;
}

// `count` causal maps of t tokens, each readable weight random and above 0.
std::vector<Mat> randomCausalHeads(int count, Eigen::Index t, std::uint64_t seed) {
    Prng prng(seed);
    std::vector<Mat> heads;
    for (int h = 0; h < count; ++h) {
        Mat a = Mat::Zero(t, t);
        for (Eigen::Index i = 0; i < t; ++i) {
            for (Eigen::Index j = 0; j <= i; ++j) a(i, j) = static_cast<float>(prng.uniform()) + 0.01f;
            a.row(i) /= a.row(i).sum();
        }
        heads.push_back(a);
    }
    return heads;
}

Settings causal() {
    Settings s;
    s.causal = true;
    return s;
}

TEST(HeadLines, ShortSentenceEveryReadableLineByHand) {
    // Causal 3 × 3: row 0 reads key 0; row 1 keys 0, 1; row 2 keys 0, 1, 2 (one of weight 0).
    Mat a = Mat::Zero(3, 3);
    a(0, 0) = 1;
    a(1, 0) = 0.25f;
    a(1, 1) = 0.75f;
    a(2, 0) = 0.6f;
    a(2, 2) = 0.4f;
    a(0, 2) = 0.5f;  // a future key: blocked, never a line, whatever it holds
    const std::vector<Mat> heads = {a};
    const AttentionMaps maps = mapsOf(heads, causal());
    const HeadLines lines = headLines(maps, 0, {0}, {});
    ASSERT_EQ(lines.lines.size(), 5u);
    EXPECT_EQ(lines.readable, 5);
    // By query, then falling weight.
    const std::vector<std::pair<int, int>> expected = {{0, 0}, {1, 1}, {1, 0}, {2, 0}, {2, 2}};
    for (std::size_t n = 0; n < expected.size(); ++n) {
        EXPECT_EQ(lines.lines[n].query, expected[n].first) << n;
        EXPECT_EQ(lines.lines[n].key, expected[n].second) << n;
        EXPECT_EQ(lines.lines[n].weight, a(expected[n].first, expected[n].second));
    }
    // One query, isolated.
    const HeadLines one = headLines(maps, 0, {0}, {1});
    ASSERT_EQ(one.lines.size(), 2u);
    EXPECT_EQ(one.lines[0].key, 1);
    EXPECT_EQ(HeadLineRule{}.describe(3), "every line");
}

TEST(HeadLines, LongSentenceKeepsTheStrongestKeysOfEachQueryAndHead) {
    const Eigen::Index t = 40;
    const std::vector<Mat> heads = randomCausalHeads(3, t, 11);
    const AttentionMaps maps = mapsOf(heads, causal());
    const HeadLineRule rule;  // every line up to 24 keys, else the 8 strongest
    ASSERT_TRUE(rule.drops(t));
    const std::vector<int> shown = {2, 0};
    const HeadLines lines = headLines(maps, 0, shown, {}, rule);
    // Count independently: query i reads i + 1 keys, all of weight > 0.
    long long expected = 0, readable = 0;
    for (Eigen::Index i = 0; i < t; ++i) {
        expected += 2 * std::min<Eigen::Index>(i + 1, rule.topK);
        readable += 2 * (i + 1);
    }
    EXPECT_EQ(static_cast<long long>(lines.lines.size()), expected);
    EXPECT_EQ(lines.readable, readable);
    // Each (query, head)'s lines are exactly its top-8 keys by weight.
    for (const int h : shown)
        for (Eigen::Index i = 0; i < t; ++i) {
            std::vector<std::pair<float, int>> row;
            for (Eigen::Index j = 0; j <= i; ++j) row.emplace_back(heads[static_cast<std::size_t>(h)](i, j), static_cast<int>(j));
            std::sort(row.begin(), row.end(), [](auto a, auto b) { return a.first > b.first; });
            std::set<int> top;
            for (std::size_t n = 0; n < std::min<std::size_t>(row.size(), 8); ++n) top.insert(row[n].second);
            std::set<int> got;
            for (const HeadLine& l : lines.lines)
                if (l.head == h && l.query == i) got.insert(l.key);
            EXPECT_EQ(got, top) << "head " << h << " query " << i;
        }
    // The heads keep the order given.
    EXPECT_EQ(lines.lines.front().head, 2);
    EXPECT_EQ(rule.describe(t), "the 8 strongest keys of each query and head (T > 24)");
}

TEST(HeadLines, MapsMadeOnDemandAreReadARunOfQueriesAtATimeToTheSameLines) {
    const Eigen::Index t = 40;
    const std::vector<Mat> heads = randomCausalHeads(3, t, 5);
    const AttentionMaps whole = mapsOf(heads, causal());
    // The same maps handed over a block of rows at a time, as a pass that keeps none makes them;
    // every block asked for is counted.
    AttentionMaps made = whole;
    made.weights = nullptr;
    long long rowsRead = 0;
    made.rows = [&](int, int h, Eigen::Index r0, Eigen::Ref<Mat> out) {
        out = heads[static_cast<std::size_t>(h)].middleRows(r0, out.rows());
        rowsRead += out.rows();
    };
    const std::vector<int> shown = {2, 0};
    for (const std::vector<int>& queries : {std::vector<int>{}, std::vector<int>{3, 4, 5, 17, 39}}) {
        rowsRead = 0;
        // runs of at most 3 queries: 2 heads x 3 rows x 40 keys
        const HeadLines got = headLines(made, 0, shown, queries, {}, 2 * 3 * 40), want = headLines(whole, 0, shown, queries);
        ASSERT_EQ(got.lines.size(), want.lines.size());
        EXPECT_EQ(got.readable, want.readable);
        for (std::size_t n = 0; n < got.lines.size(); ++n) {
            EXPECT_EQ(got.lines[n].query, want.lines[n].query) << n;
            EXPECT_EQ(got.lines[n].head, want.lines[n].head) << n;
            EXPECT_EQ(got.lines[n].key, want.lines[n].key) << n;
            EXPECT_EQ(got.lines[n].weight, want.lines[n].weight) << n;
        }
        // each query's rows made once a head, never a whole map per head
        EXPECT_EQ(rowsRead, 2 * (queries.empty() ? t : static_cast<long long>(queries.size())));
    }
    EXPECT_EQ(summedAttention(made, 0, {1, 0}, {4, 9}), summedAttention(whole, 0, {1, 0}, {4, 9}));
}

TEST(HeadLines, SummedAttentionOfPickedQueries) {
    Mat a = Mat::Zero(3, 3), b = Mat::Zero(3, 3);
    a << 1, 0, 0, 0.5f, 0.5f, 0, 0.2f, 0.3f, 0.5f;
    b << 1, 0, 0, 0.9f, 0.1f, 0, 0.1f, 0.1f, 0.8f;
    const std::vector<Mat> heads = {a, b};
    const AttentionMaps maps = mapsOf(heads, causal());
    const std::vector<float> sums = summedAttention(maps, 0, {1, 0}, {1, 2});
    ASSERT_EQ(sums.size(), 6u);
    // Head 1 first (the order given): rows 1 and 2 of b summed; then a's.
    const std::vector<float> expected = {1.0f, 0.2f, 0.8f, 0.7f, 0.8f, 0.5f};
    for (std::size_t n = 0; n < sums.size(); ++n) EXPECT_NEAR(sums[n], expected[n], 1e-6f) << n;
    EXPECT_THROW(summedAttention(maps, 0, {2}, {0}), std::out_of_range);
    EXPECT_THROW(headLines(maps, 1, {0}, {}), std::out_of_range);
}

TEST(HeadLines, PaletteIsDistinctAndRepeatsAfterTwelve) {
    std::set<std::tuple<int, int, int>> seen;
    for (int h = 0; h < kHeadColourCount; ++h) {
        const Rgb c = headColour(h);
        seen.insert({c.r, c.g, c.b});
        // Mid lightness: neither near white nor near black, so a line reads on both themes.
        const int luma = (299 * c.r + 587 * c.g + 114 * c.b) / 1000;
        EXPECT_GT(luma, 50) << h;
        EXPECT_LT(luma, 200) << h;
    }
    EXPECT_EQ(seen.size(), static_cast<std::size_t>(kHeadColourCount));
    EXPECT_EQ(headColour(kHeadColourCount), headColour(0));
}

}  // namespace
}  // namespace attnviz::core
