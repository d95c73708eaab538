// Head statistics against hand derivations (head_stats.hpp).
#include "core/attention/head_stats.hpp"
#include "core/base/prng.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>

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

// Clark et al.'s statistics of an encoder's head by hand: [CLS] a , b [SEP] with every row
// reading every key. A next-token head puts each row's weight on the key after it (the last row
// on [SEP]); a head resting on [SEP] and one split between "," and [SEP].
TEST(HeadStats, NextTokenSeparatorAndPunctuationByHand) {
    const Eigen::Index t = 5;
    const std::vector<int> ids = {101, 7, 8, 9, 102};
    const std::vector<std::uint8_t> kinds = {0, 0, kPunctuationToken, 0, kSeparatorToken};
    Mat next = Mat::Zero(t, t), sep = Mat::Zero(t, t), split = Mat::Zero(t, t);
    for (Eigen::Index i = 0; i < t; ++i) next(i, std::min<Eigen::Index>(i + 1, t - 1)) = 1;
    sep.col(4).setOnes();
    split.col(2).setConstant(0.25f), split.col(4).setConstant(0.75f);
    const Settings everyKey;
    const HeadStats n = headStats(next, ids, everyKey, {}, kinds), s = headStats(sep, ids, everyKey, {}, kinds);
    EXPECT_NEAR(n.next, 4.0 / 4, 1e-12);         // rows 0 … 3 have a next key, and put all of their weight on it
    EXPECT_NEAR(n.separator, 2.0 / 5, 1e-12);    // rows 3 and 4 on [SEP]
    EXPECT_NEAR(n.punctuation, 1.0 / 5, 1e-12);  // row 1 on ","
    EXPECT_NEAR(s.separator, 1.0, 1e-12);
    EXPECT_NEAR(s.next, 1.0 / 4, 1e-12);  // row 3's next key is [SEP]
    EXPECT_NEAR(headStats(split, ids, everyKey, {}, kinds).punctuation, 0.25, 1e-7);
    EXPECT_NEAR(headStats(split, ids, everyKey, {}, kinds).separator, 0.75, 1e-7);
    // Without kinds, none; a causal row never reads its next key.
    EXPECT_EQ(headStats(sep, ids, everyKey).separator, 0.0);
    EXPECT_EQ(headStats(next, ids, causal(), {}, kinds).next, 0.0);
    // Leaving out the first key renormalises: split's rows are already off key 0, the same.
    EXPECT_NEAR(headStats(split, ids, everyKey, {.skipFirstKey = true}, kinds).separator, 0.75, 1e-7);
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

TEST(HeadStats, LeavingOutTheFirstKeyByHand) {
    // A sink head: each row parks most of its mass on key 0. Tokens 1 2 1 2.
    Mat a = Mat::Zero(4, 4);
    a(0, 0) = 1;
    a(1, 0) = 0.8f, a(1, 1) = 0.2f;
    a(2, 0) = 0.6f, a(2, 1) = 0.1f, a(2, 2) = 0.3f;
    a(3, 0) = 0.5f, a(3, 1) = 0.1f, a(3, 2) = 0.1f, a(3, 3) = 0.3f;
    const HeadStats s = headStats(a, {1, 2, 1, 2}, causal(), {.skipFirstKey = true});
    // Row 0 may read only key 0: left out. Renormalised over keys ≥ 1: row 1 [1], row 2 [¼ ¾],
    // row 3 [⅕ ⅕ ⅗].
    const double h2 = -(0.25 * std::log(0.25) + 0.75 * std::log(0.75)), h3 = -(0.4 * std::log(0.2) + 0.6 * std::log(0.6));
    // (the weights are floats, and a renormalised row's entropy is (−Σ w ln w)/M + ln M over them)
    EXPECT_NEAR(s.entropy, (0 + h2 + h3) / 3, 1e-6);
    EXPECT_NEAR(s.entropyShare, (h2 / std::log(2.0) + h3 / std::log(3.0)) / 2, 1e-6);  // row 1 reads one kept key
    EXPECT_NEAR(s.distance, (0 + 0.25 + (0.2 * 2 + 0.2 * 1)) / 3, 1e-7);
    EXPECT_NEAR(s.self, (1 + 0.75 + 0.6) / 3, 1e-7);
    EXPECT_NEAR(s.previous, (0.25 + 0.2) / 2, 1e-7);   // row 1's previous key is key 0: gone
    EXPECT_NEAR(s.first, (1 + 0.25 + 0.2) / 3, 1e-7);  // the weight on key 1, the first key kept
    // Duplicate: row 3 (token 2) reads key 1 (token 2); row 2's earlier 1 is key 0, left out.
    EXPECT_NEAR(s.duplicate, 0.2 / 3, 1e-7);
    // Induction: row 2 (token 1) reads key 1 (after a 1), row 3 (token 2) key 2 (after a 2).
    EXPECT_NEAR(s.induction, (0.25 + 0.2) / 3, 1e-7);
    // Without leaving it out, the same map's first is the sink's mass.
    EXPECT_NEAR(headStats(a, {1, 2, 1, 2}, causal()).first, (1 + 0.8 + 0.6 + 0.5) / 4, 1e-7);
    // A row with nothing past key 0 is left out too: rows 1 … 3 put all their mass on key 0.
    Mat sink = Mat::Zero(4, 4);
    sink.col(0).setOnes();
    sink(3, 0) = 0.5f, sink(3, 2) = 0.5f;
    const HeadStats k = headStats(sink, {}, causal(), {.skipFirstKey = true});
    EXPECT_NEAR(k.self, 0.0, 1e-12);  // row 3 alone: all of its kept mass on key 2
    EXPECT_NEAR(k.distance, 1.0, 1e-7);
    EXPECT_NEAR(k.first, 0.0, 1e-12);
    EXPECT_NE(headStatsRule({.skipFirstKey = true}), headStatsRule({}));
    EXPECT_NE(headStatsRule({.skipFirstKey = true}).find("renormalised"), std::string::npos);
}

// The statistics straight from the definitions, one cell at a time with isBlocked and double
// logs: what the banded, vectorised pass must agree with under every kind of mask.
HeadStats reference(const Mat& a, const std::vector<int>& ids, const Settings& settings, bool skip,
                    const std::vector<std::uint8_t>& kinds) {
    HeadStats s;
    const Eigen::Index tq = a.rows(), tk = a.cols(), f0 = skip ? 1 : 0;
    double share = 0, total = 0;
    long long rows = 0, shareRows = 0, selfRows = 0, previousRows = 0, firstRows = 0, nextRows = 0;
    for (Eigen::Index i = 0; i < tq; ++i) {
        double mass = 0;
        long long readable = 0;
        for (Eigen::Index j = f0; j < tk; ++j) mass += a(i, j), readable += isBlocked(settings, i, j) ? 0 : 1;
        if (skip && (readable == 0 || mass <= 0)) continue;
        const double c = skip ? 1 / mass : 1;
        ++rows;
        double h = 0;
        for (Eigen::Index j = f0; j < tk; ++j) {
            const double w = a(i, j) * c;
            if (w > 0) h -= w * std::log(w);
            s.distance += w * static_cast<double>(std::llabs(static_cast<long long>(i - j)));
            if (j < i && ids[static_cast<std::size_t>(j)] == ids[static_cast<std::size_t>(i)]) s.duplicate += w;
            if (j >= 1 && j <= i && ids[static_cast<std::size_t>(j - 1)] == ids[static_cast<std::size_t>(i)]) s.induction += w;
            if ((kinds[static_cast<std::size_t>(j)] & kSeparatorToken) != 0) s.separator += w;
            if ((kinds[static_cast<std::size_t>(j)] & kPunctuationToken) != 0) s.punctuation += w;
            total += w;
        }
        s.entropy += h;
        if (readable >= 2) share += h / std::log(static_cast<double>(readable)), ++shareRows;
        if (i >= f0 && !isBlocked(settings, i, i)) s.self += a(i, i) * c, ++selfRows;
        if (i - 1 >= f0 && !isBlocked(settings, i, i - 1)) s.previous += a(i, i - 1) * c, ++previousRows;
        if (!isBlocked(settings, i, f0)) s.first += a(i, f0) * c, ++firstRows;
        if (i + 1 < tk && !isBlocked(settings, i, i + 1)) s.next += a(i, i + 1) * c, ++nextRows;
    }
    const auto mean = [](double sum, long long n) { return n > 0 ? sum / static_cast<double>(n) : 0.0; };
    const long long meanRows = skip ? rows : tq;
    s.entropy = mean(s.entropy, meanRows), s.distance = mean(s.distance, meanRows);
    s.entropyShare = mean(share, shareRows);
    s.self = mean(s.self, selfRows), s.previous = mean(s.previous, previousRows), s.first = mean(s.first, firstRows);
    s.next = mean(s.next, nextRows), s.separator = mean(s.separator, meanRows), s.punctuation = mean(s.punctuation, meanRows);
    s.duplicate = total > 0 ? s.duplicate / total : 0, s.induction = total > 0 ? s.induction / total : 0;
    return s;
}

TEST(HeadStats, MatchesTheDefinitionsUnderEveryMask) {
    const Eigen::Index t = 11;
    std::vector<Settings> masks(8);
    masks[1].causal = true;
    masks[2].causal = true, masks[2].window = 3;
    masks[3].window = 3;
    masks[4].paddedKeys = {2, 7};
    masks[5].causal = true, masks[5].paddedKeys = {0, 4};
    masks[6].custom = MaskMat::Zero(t, t);
    masks[7].causal = true, masks[7].window = 1;  // each row reads only itself
    Prng prng(7);
    for (Eigen::Index i = 0; i < t; ++i)
        for (Eigen::Index j = 0; j < t; ++j) masks[6].custom(i, j) = (i * 7 + j * 3) % 5 == 0;
    for (int seed = 0; seed < 20; ++seed) {
        Mat scores(t, t);
        for (Eigen::Index k = 0; k < scores.size(); ++k) scores.data()[k] = static_cast<float>(3 * prng.normal());
        std::vector<int> ids;
        std::vector<std::uint8_t> kinds;
        for (Eigen::Index k = 0; k < t; ++k) ids.push_back(static_cast<int>(prng.nextU64() % 4));
        for (Eigen::Index k = 0; k < t; ++k) kinds.push_back(static_cast<std::uint8_t>(prng.nextU64() % 4));  // either, both or none
        for (std::size_t m = 0; m < masks.size(); ++m)
            for (const bool skip : {false, true}) {
                Mat a;
                softmaxRows(scores, 1.0f, masks[m], a);
                if (seed % 5 == 0) a.col(0) *= 50.0f;  // a sink's share at key 0 (rows no longer sum to 1: the rule is the same)
                const HeadStats got = headStats(a, ids, masks[m], {.skipFirstKey = skip}, kinds),
                                want = reference(a, ids, masks[m], skip, kinds);
                SCOPED_TRACE("mask " + std::to_string(m) + (skip ? ", first key left out" : "") + ", seed " + std::to_string(seed));
                EXPECT_NEAR(got.entropy, want.entropy, 1e-6 * (1 + std::abs(want.entropy)));
                EXPECT_NEAR(got.entropyShare, want.entropyShare, 1e-6);
                EXPECT_NEAR(got.distance, want.distance, 1e-6 * (1 + want.distance));
                EXPECT_NEAR(got.self, want.self, 1e-6);
                EXPECT_NEAR(got.previous, want.previous, 1e-6);
                EXPECT_NEAR(got.first, want.first, 1e-6 * (1 + want.first));
                EXPECT_NEAR(got.duplicate, want.duplicate, 1e-6);
                EXPECT_NEAR(got.induction, want.induction, 1e-6);
                EXPECT_NEAR(got.next, want.next, 1e-6);
                EXPECT_NEAR(got.separator, want.separator, 1e-6 * (1 + want.separator));
                EXPECT_NEAR(got.punctuation, want.punctuation, 1e-6 * (1 + want.punctuation));
            }
    }
}

}  // namespace
}  // namespace attnviz::core
