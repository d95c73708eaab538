// Softmax, masks, temperature and numerical extremes: properties over many seeds.
#include "core/attention/attention.hpp"
#include "core/attention/permutation.hpp"
#include "core/base/error.hpp"
#include "core/base/prng.hpp"
#include "core/scenario/model.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

using namespace attnviz::core;

namespace {

Mat randomMatrix(int rows, int cols, std::uint64_t seed, float scale = 1.0f) {
    Prng rng(seed);
    Mat m(rows, cols);
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) m(r, c) = scale * static_cast<float>(rng.normal());
    return m;
}

void expectRowsAreDistributions(const Mat& a, const Settings& s) {
    for (Eigen::Index i = 0; i < a.rows(); ++i) {
        bool anyOpen = false;
        for (Eigen::Index j = 0; j < a.cols(); ++j) {
            ASSERT_TRUE(std::isfinite(a(i, j))) << i << "," << j;
            ASSERT_GE(a(i, j), 0.0f);
            if (isBlocked(s, i, j)) EXPECT_EQ(a(i, j), 0.0f) << "blocked cell " << i << "," << j;
            else anyOpen = true;
        }
        EXPECT_NEAR(a.row(i).sum(), anyOpen ? 1.0f : 0.0f, 1e-5f) << "row " << i;
    }
}

}  // namespace

TEST(Softmax, RowsSumToOneOverManySeeds) {
    for (std::uint64_t seed = 0; seed < 200; ++seed) {
        const int T = 1 + static_cast<int>(seed % 17);
        const Mat scores = randomMatrix(T, T, seed, 3.0f);
        Settings s;
        s.causal = seed % 2 == 0;
        Mat a;
        softmaxRows(scores, 0.5f, s, a);
        expectRowsAreDistributions(a, s);
    }
}

TEST(Softmax, MatchesDirectFormula) {
    const Mat scores = randomMatrix(5, 7, 42);
    Mat a;
    softmaxRows(scores, 0.3f, Settings{}, a);
    for (int i = 0; i < 5; ++i) {
        double sum = 0;
        for (int j = 0; j < 7; ++j) sum += std::exp(0.3 * scores(i, j));
        for (int j = 0; j < 7; ++j) EXPECT_NEAR(a(i, j), std::exp(0.3 * scores(i, j)) / sum, 1e-6);
    }
}

// The vectorised exp over the whole range a weight can take, against a double-precision
// softmax. The float logit x = (s - max)·c is rounded, and rounded again in base 2 (times
// log2 e), which alone moves exp(x) by up to |x|·2^-23 relative; beyond that, every weight is
// within 2e-6 (a few ulps, and the float sum of 4,099 terms). Exactly 0 only where double gives a value below 2.4e-38.
TEST(Softmax, EveryWeightWithinAFewUlpsOfDoublePrecision) {
    constexpr int n = 4099;  // not a multiple of 8: the vector loop and its scalar tail
    Mat scores(2, n);
    for (int j = 0; j < n; ++j) {
        scores(0, j) = -90.0f * static_cast<float>(j) / (n - 1);  // exp(0) … exp(-90), scale 1
        scores(1, j) = 37.0f * std::sin(0.37f * static_cast<float>(j));
    }
    Mat a;
    softmaxRows(scores, 1.0f, Settings{}, a);
    for (int i = 0; i < 2; ++i) {
        const double max = scores.row(i).cast<double>().maxCoeff();
        double sum = 0;
        for (int j = 0; j < n; ++j) sum += std::exp(static_cast<double>(scores(i, j)) - max);
        for (int j = 0; j < n; ++j) {
            const double expected = std::exp(static_cast<double>(scores(i, j)) - max) / sum;
            if (expected > 2.4e-38) {
                const double x = static_cast<double>(scores(i, j)) - max;
                ASSERT_NEAR(a(i, j) / expected, 1.0, 2e-6 + std::abs(x) * 0x1p-23) << "row " << i << ", key " << j;
            } else {
                ASSERT_LE(a(i, j), 2.4e-38f) << "row " << i << ", key " << j;
            }
        }
    }
}

TEST(Softmax, CausalZerosAboveDiagonalExactly) {
    for (std::uint64_t seed = 0; seed < 50; ++seed) {
        const Mat scores = randomMatrix(12, 12, seed, 10.0f);
        Settings s;
        s.causal = true;
        Mat a;
        softmaxRows(scores, 1.0f, s, a);
        for (int i = 0; i < 12; ++i)
            for (int j = i + 1; j < 12; ++j) ASSERT_EQ(a(i, j), 0.0f);
        expectRowsAreDistributions(a, s);
    }
}

TEST(Softmax, PaddingAndCustomMasks) {
    const Mat scores = randomMatrix(4, 5, 7);
    Settings s;
    s.paddedKeys = {1, 3};
    s.custom = MaskMat::Zero(4, 5);
    s.custom(2, 0) = true;
    Mat a;
    softmaxRows(scores, 1.0f, s, a);
    for (int i = 0; i < 4; ++i) {
        EXPECT_EQ(a(i, 1), 0.0f);
        EXPECT_EQ(a(i, 3), 0.0f);
    }
    EXPECT_EQ(a(2, 0), 0.0f);
    EXPECT_GT(a(1, 0), 0.0f);
    expectRowsAreDistributions(a, s);
}

TEST(Softmax, FullyMaskedRowIsZeroNotNaN) {
    const Mat scores = randomMatrix(3, 3, 9);
    Settings s;
    s.paddedKeys = {0, 1, 2};
    Mat a;
    softmaxRows(scores, 1.0f, s, a);
    EXPECT_EQ(a.sum(), 0.0f);
    EXPECT_TRUE(a.allFinite());
    // Causal with more queries than keys would leave no row empty; a custom mask can.
    Settings c;
    c.custom = MaskMat::Zero(3, 3);
    c.custom.row(1).setConstant(true);
    softmaxRows(scores, 1.0f, c, a);
    EXPECT_EQ(a.row(1).sum(), 0.0f);
    EXPECT_NEAR(a.row(0).sum(), 1.0f, 1e-6f);
}

TEST(Softmax, ExtremeTemperaturesAndScoresStayFinite) {
    for (float tau : {1e-3f, 1e-2f, 1.0f, 1e2f, 1e3f}) {
        for (float magnitude : {1e-3f, 1.0f, 1e2f, 1e4f}) {
            Mat scores = randomMatrix(9, 9, 3, 1.0f);
            scores = scores.cwiseSign() * magnitude;  // |S| = magnitude everywhere, ±
            scores(0, 0) = magnitude;
            for (bool scaled : {true, false}) {
                Settings s;
                s.temperature = tau;
                s.scaled = scaled;
                s.causal = magnitude > 1.0f;
                Mat a;
                softmaxRows(scores, logitScale(64, s), s, a);
                SCOPED_TRACE("tau " + std::to_string(tau) + " |S| " + std::to_string(magnitude));
                expectRowsAreDistributions(a, s);
            }
        }
    }
}

TEST(Softmax, SmallTemperatureApproachesOneHot) {
    const Mat scores = randomMatrix(6, 6, 11, 2.0f);
    Settings s;
    float previousMax = 0.0f;
    for (float tau : {10.0f, 1.0f, 0.1f, 0.01f, 0.001f}) {
        s.temperature = tau;
        Mat a;
        softmaxRows(scores, logitScale(4, s), s, a);
        const RowStats stats = rowStats(a);
        EXPECT_GE(stats.max.minCoeff(), previousMax - 1e-6f);
        previousMax = stats.max.minCoeff();
        if (tau <= 0.001f) {
            for (int i = 0; i < 6; ++i) {
                Eigen::Index argmax;
                scores.row(i).maxCoeff(&argmax);
                EXPECT_NEAR(a(i, argmax), 1.0f, 1e-5f);
            }
        }
    }
}

TEST(Softmax, LargeTemperatureApproachesUniform) {
    const Mat scores = randomMatrix(5, 8, 5);
    Settings s;
    s.temperature = 1e3f;
    Mat a;
    softmaxRows(scores, logitScale(4, s), s, a);
    EXPECT_NEAR(a.minCoeff(), 1.0f / 8, 2e-3f);
    EXPECT_NEAR(a.maxCoeff(), 1.0f / 8, 2e-3f);
}

TEST(Softmax, LogitScale) {
    Settings s;
    EXPECT_FLOAT_EQ(logitScale(4, s), 0.5f);
    s.temperature = 2.0f;
    EXPECT_FLOAT_EQ(logitScale(4, s), 0.25f);
    s.scaled = false;
    EXPECT_FLOAT_EQ(logitScale(4, s), 0.5f);
}

TEST(RowStats, SumMaxEntropy) {
    Mat a(3, 4);
    a << 0.25f, 0.25f, 0.25f, 0.25f,  //
        1.0f, 0.0f, 0.0f, 0.0f,       //
        0.0f, 0.0f, 0.0f, 0.0f;
    const RowStats s = rowStats(a);
    EXPECT_FLOAT_EQ(s.sum(0), 1.0f);
    EXPECT_FLOAT_EQ(s.sum(2), 0.0f);
    EXPECT_FLOAT_EQ(s.max(1), 1.0f);
    EXPECT_NEAR(s.entropy(0), std::log(4.0), 1e-6);
    EXPECT_FLOAT_EQ(s.entropy(1), 0.0f);
    EXPECT_FLOAT_EQ(s.entropy(2), 0.0f);
}

TEST(Forward, MultiHeadConcatAndOutputProjection) {
    Scenario sc;
    sc.sentence = "a b c d e";
    sc.dModel = 12;
    sc.heads = 3;
    sc.dv = 5;  // d_k = 4 ≠ d_v
    sc.wo.kind = MatrixSpec::Kind::Random;
    const Model m = buildModel(sc);
    const Forward f = runForward(m, {});
    ASSERT_EQ(f.concat.cols(), 15);
    for (int h = 0; h < 3; ++h) {
        EXPECT_EQ(f.heads[h].q.cols(), 4);
        EXPECT_EQ(f.heads[h].v.cols(), 5);
        EXPECT_EQ(maxAbsDiff(f.concat.middleCols(5 * h, 5), f.heads[h].output), 0.0f);
        // head h uses columns [h d_k, (h+1) d_k) of W_Q
        EXPECT_LT(maxAbsDiff(f.heads[h].q, m.x * m.wq.middleCols(4 * h, 4)), 1e-6f);
    }
    EXPECT_EQ(f.output.cols(), 12);
    EXPECT_LT(maxAbsDiff(f.output, f.concat * m.wo), 1e-5f);
    EXPECT_EQ(meanWeights(f).rows(), 5);
    EXPECT_NEAR(meanWeights(f).row(2).sum(), 1.0f, 1e-5f);
    const Mat rows = meanWeights(f, 2, 2);  // what the bar chart of one query reads
    ASSERT_EQ(rows.rows(), 2);
    const Mat byHand =
        (f.heads[0].weights.middleRows(2, 2) + f.heads[1].weights.middleRows(2, 2) + f.heads[2].weights.middleRows(2, 2)) / 3.0f;
    EXPECT_LT(maxAbsDiff(rows, byHand), 1e-7f);
}

// The model packs its weights once (packProjections); a pass reads them, and gives the bits of a
// pass that packs its own. Grouped-query heads (4 query heads on 2 key/value heads), d_k 20 (a
// padded last panel) and d_v 24.
TEST(Forward, WeightsPackedOnceWithTheModelGiveTheBitsOfAPassThatPacksItsOwn) {
    Scenario sc;
    sc.sentence = "the cat sat on the mat and the dog sat on the log too";
    sc.dModel = 40;
    sc.heads = 4;
    sc.kvHeads = 2;
    sc.dk = 20;
    sc.dv = 24;
    sc.wo.kind = MatrixSpec::Kind::Random;
    const Model packed = buildModel(sc);
    ASSERT_EQ(packed.packed.q.size(), 4U);
    ASSERT_EQ(packed.packed.k.size(), 2U);
    ASSERT_EQ(packed.packed.v.size(), 2U);
    Model unpacked = packed;
    unpacked.packed = {};
    const Forward a = runForward(packed, {}), b = runForward(unpacked, {});
    // The kept packing was read: the pass packed no weights of its own.
    EXPECT_TRUE(a.packedWo.panels.empty());
    for (const HeadTensors& h : a.heads)
        for (const PackedColumns& p : h.packedProjections) EXPECT_TRUE(p.panels.empty());
    EXPECT_FALSE(b.packedWo.panels.empty());
    for (std::size_t h = 0; h < 4; ++h) {
        const auto bits = [](const Mat& m) { return std::vector<float>(m.data(), m.data() + m.size()); };
        EXPECT_EQ(bits(a.heads[h].q), bits(b.heads[h].q));
        EXPECT_EQ(bits(a.heads[h].k), bits(b.heads[h].k));
        EXPECT_EQ(bits(a.heads[h].v), bits(b.heads[h].v));
        EXPECT_EQ(bits(a.heads[h].weights), bits(b.heads[h].weights));
    }
    EXPECT_EQ(maxAbsDiff(a.output, b.output), 0.0f);
    EXPECT_EQ(maxAbsDiff(a.concat, b.concat), 0.0f);
    // And right: head 3 reads key/value head 1's columns of W_K and W_V.
    EXPECT_LT(maxAbsDiff(a.heads[3].k, packed.x * packed.wk.middleCols(20, 20)), 1e-5f);
    EXPECT_LT(maxAbsDiff(a.heads[3].v, packed.x * packed.wv.middleCols(24, 24)), 1e-5f);
    EXPECT_LT(maxAbsDiff(a.output, a.concat * packed.wo), 1e-5f);
    // The kept packing counts in the model's bytes.
    EXPECT_GT(keptBytes(packed, a), keptBytes(unpacked, a));
}

TEST(Forward, OverflowingScoresAreAnErrorNotNaN) {
    Scenario sc;
    sc.x = Mat::Constant(3, 2, 3e19f);
    sc.wq.kind = sc.wk.kind = MatrixSpec::Kind::Identity;
    const Model m = buildModel(sc);
    EXPECT_THROW(runForward(m, {}), InputError);
}

TEST(Softmax, TinyTemperatureWithHugeScoresIsNeverNaN) {
    Mat scores(2, 3);
    scores << 1e36f, -1e36f, 0.0f,  //
        3e38f, -3e38f, 3e38f;
    Settings s;
    s.temperature = 1e-39f;  // 1 / (√d_k τ) overflows float: the scale is clamped
    Mat a;
    softmaxRows(scores, logitScale(1, s), s, a);
    ASSERT_TRUE(a.allFinite());
    EXPECT_EQ(a(0, 0), 1.0f);
    EXPECT_EQ(a(0, 1), 0.0f);
    EXPECT_FLOAT_EQ(a(1, 0), 0.5f);  // a tie stays a tie
    EXPECT_FLOAT_EQ(a(1, 2), 0.5f);
}

namespace {

// Four masks for a [tq, tk] map (tk > 40): none, causal, padding, causal + padding + one custom cell.
Settings maskVariant(int variant, Eigen::Index tq, Eigen::Index tk) {
    Settings s;
    s.causal = variant == 1 || variant == 3;
    if (variant >= 2) s.paddedKeys = {0, 5, 40};
    if (variant == 3) {
        s.custom = MaskMat::Zero(tq, tk);
        s.custom(20, 7) = true;
    }
    return s;
}

// Reference for poolTexels: the block maximum over readable cells, written the plain way.
std::vector<float> pooledByHand(const Mat& w, const Settings& s, int f) {
    const Eigen::Index rows = pooledSize(w.rows(), f), cols = pooledSize(w.cols(), f);
    std::vector<float> out(static_cast<std::size_t>(rows * cols), kMaskedTexel);
    for (Eigen::Index i = 0; i < w.rows(); ++i)
        for (Eigen::Index j = 0; j < w.cols(); ++j)
            if (!isBlocked(s, i, j)) {
                float& o = out[static_cast<std::size_t>((i / f) * cols + j / f)];
                o = std::max(o, w(i, j));
            }
    return out;
}

}  // namespace

TEST(Texels, PooledBlocksKeepTheirLargestReadableWeight) {
    const Mat scores = randomMatrix(37, 41, 11, 3.0f);
    for (int variant = 0; variant < 4; ++variant) {
        const Settings s = maskVariant(variant, 37, 41);
        Mat w;
        softmaxRows(scores, 0.5f, s, w);
        for (int f : {1, 2, 3, 4, 5, 8, 40, 64}) {
            std::vector<float> pooled;
            poolTexels(w, s, f, pooled);
            const std::vector<float> expected = pooledByHand(w, s, f);
            ASSERT_EQ(pooled.size(), expected.size()) << "factor " << f;
            for (std::size_t k = 0; k < pooled.size(); ++k)
                ASSERT_EQ(pooled[k], expected[k]) << "variant " << variant << " factor " << f << " texel " << k;
        }
    }
}

namespace {

// softmaxPooled against the two passes it replaces: the same bits in weights and texels.
void expectSameBits(const Mat& weights, const Mat& expected, const char* what) {
    ASSERT_EQ(weights.rows(), expected.rows()) << what;
    ASSERT_EQ(weights.cols(), expected.cols()) << what;
    for (Eigen::Index i = 0; i < weights.rows(); ++i)
        for (Eigen::Index j = 0; j < weights.cols(); ++j)
            ASSERT_EQ(std::bit_cast<std::uint32_t>(weights(i, j)), std::bit_cast<std::uint32_t>(expected(i, j)))
                << what << " " << i << "," << j;
}

// softmaxPooled against softmaxRows then poolTexels, bit for bit; and both again with the
// scores' maxima computed beforehand (as the app does), which must change nothing.
void expectPooledSoftmaxMatches(const Mat& scores, float scale, const Settings& s, int factor) {
    SCOPED_TRACE(::testing::Message() << "factor " << factor << ", scale " << scale);
    Mat expectedWeights, weights, known;
    std::vector<float> expectedTexels, texels, knownTexels;
    const bool expectedFinite = softmaxRows(scores, scale, s, expectedWeights);
    poolTexels(expectedWeights, s, factor, expectedTexels);
    ASSERT_EQ(softmaxPooled(scores, scale, s, weights, factor, texels), expectedFinite);
    expectSameBits(weights, expectedWeights, "weight");
    ScoreMaxima maxima;
    maxima.resize(scores.rows());
    scoreMaxima(scores, 0, maxima);
    ASSERT_EQ(softmaxPooled(scores, scale, s, known, factor, knownTexels, &maxima), expectedFinite);
    expectSameBits(known, expectedWeights, "weight from the maxima");
    ASSERT_EQ(softmaxRows(scores, scale, s, known, &maxima), expectedFinite);
    expectSameBits(known, expectedWeights, "softmaxRows' weight from the maxima");
    for (const std::vector<float>* t : {&texels, &knownTexels}) {
        ASSERT_EQ(t->size(), expectedTexels.size());
        for (std::size_t k = 0; k < t->size(); ++k)
            ASSERT_EQ(std::bit_cast<std::uint32_t>((*t)[k]), std::bit_cast<std::uint32_t>(expectedTexels[k])) << "texel " << k;
    }
}

}  // namespace

TEST(Texels, SoftmaxPooledInOnePassEqualsSoftmaxThenPooling) {
    const Mat scores = randomMatrix(37, 53, 12, 3.0f);
    for (int variant = 0; variant < 4; ++variant) {
        const Settings s = maskVariant(variant, 37, 53);
        for (int f : {1, 2, 3, 4, 5, 8, 53, 64})
            for (float scale : {0.5f, 1e-30f, 1e30f}) expectPooledSoftmaxMatches(scores, scale, s, f);
    }
}

TEST(Texels, SoftmaxPooledOnAMatrixLargerThanTheCaches) {
    // 2050 x 2050 is written with streaming stores; 2050 floats a row puts most rows' starts off
    // a 32-byte boundary, so the unaligned head and tail of each row are covered too.
    const Mat scores = randomMatrix(2050, 2050, 13, 4.0f);
    for (bool causal : {false, true}) {
        Settings s;
        s.causal = causal;
        for (int f : {1, 3, 7}) expectPooledSoftmaxMatches(scores, 0.125f, s, f);
    }
}

TEST(Texels, SoftmaxPooledZeroesOverflowedRowsAsSoftmaxDoes) {
    Mat scores = randomMatrix(9, 9, 14);
    scores(4, 2) = std::numeric_limits<float>::infinity();
    scores(7, 0) = std::numeric_limits<float>::quiet_NaN();
    for (bool causal : {false, true}) {
        Settings s;
        s.causal = causal;
        for (int f : {1, 2, 4}) expectPooledSoftmaxMatches(scores, 1.0f, s, f);
        Mat w;
        std::vector<float> texels;
        EXPECT_FALSE(softmaxPooled(scores, 1.0f, s, w, 2, texels));
        EXPECT_EQ(w.row(4).cwiseAbs().maxCoeff(), 0.0f);
    }
}

TEST(ScoreMaxima, EachRowsMaximaOverAllKeysAndUpToItsQuery) {
    // 9 queries, 6 keys: queries 5 … 8 may read every key under a causal mask too.
    Mat scores = randomMatrix(9, 6, 21, 5.0f);
    scores(2, 4) = std::numeric_limits<float>::quiet_NaN();  // past query 2: only "all" is NaN
    scores(3, 1) = std::numeric_limits<float>::infinity();
    scores(6, 0) = std::numeric_limits<float>::quiet_NaN();
    ScoreMaxima m;
    m.resize(9);
    scoreMaxima(scores.topRows(4), 0, m);  // by blocks of rows, as the forward pass computes them
    scoreMaxima(scores.bottomRows(5), 4, m);
    for (Eigen::Index i = 0; i < 9; ++i) {
        SCOPED_TRACE(::testing::Message() << "query " << i);
        const float all = scores.row(i).maxCoeff<Eigen::PropagateNaN>();
        const float upTo = scores.row(i).head(std::min<Eigen::Index>(i + 1, 6)).maxCoeff<Eigen::PropagateNaN>();
        EXPECT_EQ(std::isnan(m.all(i)), std::isnan(all));
        EXPECT_EQ(std::isnan(m.causal(i)), std::isnan(upTo));
        if (!std::isnan(all)) {
            EXPECT_EQ(m.all(i), all);
        }
        if (!std::isnan(upTo)) {
            EXPECT_EQ(m.causal(i), upTo);
        }
    }
    EXPECT_TRUE(std::isnan(m.all(2)));
    EXPECT_FALSE(std::isnan(m.causal(2)));
    EXPECT_EQ(m.causal(3), std::numeric_limits<float>::infinity());
}

TEST(ScoreMaxima, ABlockOfRowsReadsTheMaximaOfItsOwnQueries) {
    const Mat scores = randomMatrix(20, 20, 22, 6.0f);
    ScoreMaxima m;
    m.resize(20);
    scoreMaxima(scores, 0, m);
    for (bool causal : {false, true}) {
        Settings s;
        s.causal = causal;
        Mat expected, block(7, 20);
        softmaxRows(scores, 0.3f, s, expected);
        ASSERT_TRUE(softmaxRows(scores.middleRows(9, 7), 0.3f, s, block, 9, &m));
        expectSameBits(block, expected.middleRows(9, 7), "block weight");
    }
}

TEST(ScoreMaxima, NewScoresBringNewMaxima) {
    // The maxima are kept with a head's scores: after new scores (here q scaled by 4, so every
    // maximum moves) the softmax must not read the old ones.
    Scenario sc;
    sc.sentence = "the cat sat on the mat";
    sc.dModel = 16;
    sc.heads = 2;
    const Model model = buildModel(sc);
    Settings settings;
    HeadTensors head;
    projectHead(model, 0, head);
    for (int round = 0; round < 2; ++round) {
        if (round == 1) head.q *= 4.0f;
        for (bool blocks : {false, true}) {
            if (blocks) {
                attendHead(model, settings, head, true);
            } else {
                scoreHead(model, settings, head);
                weighHead(model, settings, head);
            }
            Mat expected;
            softmaxRows(head.scores, logitScale(model.dk, settings), settings, expected);
            expectSameBits(head.weights, expected, blocks ? "weight by blocks" : "weight");
            settings.causal = !settings.causal;  // and the other variant from the same maxima
            weighHead(model, settings, head);
            softmaxRows(head.scores, logitScale(model.dk, settings), settings, expected);
            expectSameBits(head.weights, expected, "toggled weight");
        }
    }
}

TEST(Texels, TheMeanPooledBandByBandEqualsPoolingTheWholeMean) {
    Scenario sc;
    sc.sentence = "the cat sat on the mat";
    sc.length = 67;
    sc.dModel = 24;
    sc.heads = 3;
    const Model m = buildModel(sc);
    for (int variant = 0; variant < 3; ++variant) {
        Settings s;
        s.causal = variant >= 1;
        if (variant == 2) s.paddedKeys = {0, 9, 66};
        const Forward f = runForward(m, s);
        for (int factor : {1, 2, 3, 5, 64}) {
            std::vector<float> banded, whole;
            poolMeanTexels(f, s, factor, banded);
            poolTexels(meanWeights(f), s, factor, whole);
            ASSERT_EQ(banded.size(), whole.size());
            for (std::size_t k = 0; k < whole.size(); ++k)
                ASSERT_EQ(std::bit_cast<std::uint32_t>(banded[k]), std::bit_cast<std::uint32_t>(whole[k]))
                    << "variant " << variant << " factor " << factor << " texel " << k;
        }
    }
}

TEST(Memory, KeptBytesCountEveryMatrixTheModelAndForwardPassHold) {
    Scenario sc;
    sc.sentence = "the cat sat on the mat today";  // 7 tokens: one full tile of six rows
    sc.dModel = 32;
    sc.heads = 2;  // d_k = d_v = 16: one panel of 16 columns
    sc.wo.kind = MatrixSpec::Kind::Random;
    const Model m = buildModel(sc);
    const Forward f = runForward(m, {});
    ASSERT_EQ(m.tq(), 7);
    // embeddings and x 7 x 32 each; x's one tile 6 x 32; W_Q, W_K, W_V, W_O 32 x 32 each
    const std::uint64_t model = 2 * 224 + 192 + 4 * 1024;
    // q, k, v, output 7 x 16; scores, weights 7 x 7; the scores' two maxima per query; v packed
    // 7 x 16; the W_Q, W_K, W_V slices packed 32 x 16 each; k packed: nothing (7 keys, no full
    // panel of 16)
    const std::uint64_t head = 4 * 112 + 2 * 49 + 2 * 7 + 112 + 3 * 512;
    const std::uint64_t combined = 2 * 224 + 1024;  // concat, output; W_O packed (two panels of 16 columns)
    EXPECT_EQ(keptBytes(m, f), 4 * (model + 2 * head + combined));
}

TEST(Texels, OneSharpWeightSurvivesAnyShrinking) {
    // A 2048-token map shown 770 pixels wide: averaging or sampling would lose this cell.
    Mat w = Mat::Constant(2048, 2048, 1e-6f);
    w(1500, 1001) = 0.9f;
    std::vector<float> pooled;
    poolTexels(w, Settings{}, 3, pooled);
    ASSERT_EQ(pooled.size(), std::size_t{683 * 683});
    EXPECT_EQ(pooled[500 * 683 + 333], 0.9f);
    EXPECT_EQ(*std::max_element(pooled.begin(), pooled.end()), 0.9f);
}

TEST(Texels, CausalBlocksAboveTheDiagonalAreMaskedOnTheDiagonalNot) {
    Settings s;
    s.causal = true;
    Mat w;
    softmaxRows(randomMatrix(10, 10, 3), 1.0f, s, w);
    std::vector<float> pooled;
    poolTexels(w, s, 4, pooled);  // 3 x 3 blocks
    ASSERT_EQ(pooled.size(), std::size_t{9});
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c) EXPECT_EQ(isMaskedTexel(pooled[static_cast<std::size_t>(r * 3 + c)]), c > r) << r << "," << c;
}
