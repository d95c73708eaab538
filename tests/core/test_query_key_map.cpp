// The query–key map (query_key_map.hpp): the normalisation leaves every softmax row as it was and
// balances the mean norms; the projection against a hand derivation and against an SVD of the
// stacked points (another algorithm than the covariance's eigenvectors).
#include "core/attention/query_key_map.hpp"

#include "core/base/error.hpp"
#include "core/base/prng.hpp"

#include <gtest/gtest.h>
#include <Eigen/SVD>

#include <cmath>

namespace attnviz::core {
namespace {

Mat randomMat(Prng& rng, Eigen::Index rows, Eigen::Index cols, float scale, float offset) {
    Mat m(rows, cols);
    for (Eigen::Index i = 0; i < rows; ++i)
        for (Eigen::Index j = 0; j < cols; ++j) m(i, j) = offset + scale * static_cast<float>(rng.normal());
    return m;
}

// Row softmax of q kᵀ / √d, in double.
Eigen::MatrixXd softmaxOf(const Mat& q, const Mat& k) {
    Eigen::MatrixXd s = q.cast<double>() * k.cast<double>().transpose() / std::sqrt(static_cast<double>(q.cols()));
    for (Eigen::Index i = 0; i < s.rows(); ++i) {
        s.row(i).array() -= s.row(i).maxCoeff();
        s.row(i) = s.row(i).array().exp().matrix();
        s.row(i) /= s.row(i).sum();
    }
    return s;
}

TEST(QueryKeyMap, TranslatedAndScaledKeysGiveTheSameSoftmaxRows) {
    for (std::uint64_t seed = 1; seed <= 12; ++seed) {
        Prng rng(seed);
        const Eigen::Index tq = 20 + static_cast<Eigen::Index>(seed), tk = 30, d = 16;
        // queries far larger than the keys and the keys off-centre: a and the shift are far from 1 and 0
        const Mat q = randomMat(rng, tq, d, 0.9f, 0.4f);
        const Mat k = randomMat(rng, tk, d, 0.15f, -1.3f);
        const QueryKeyNormalised n = normaliseQueryKey(q, k);
        EXPECT_GT(std::abs(n.scale - 1.0), 0.2) << seed;
        EXPECT_GT(n.shift.norm(), 1.0f) << seed;
        const Eigen::MatrixXd before = softmaxOf(q, k), after = softmaxOf(n.q, n.k);
        EXPECT_LT((before - after).cwiseAbs().maxCoeff(), 1e-5) << seed;
        // the scores themselves move by a constant per row: q_i·shift
        const Eigen::MatrixXd raw = q.cast<double>() * k.cast<double>().transpose();
        const Eigen::MatrixXd moved = n.q.cast<double>() * n.k.cast<double>().transpose();
        const Eigen::VectorXd perRow = q.cast<double>() * n.shift.cast<double>().transpose();
        EXPECT_LT(((moved - raw).colwise() - perRow).cwiseAbs().maxCoeff(), 1e-3) << seed;
    }
}

TEST(QueryKeyMap, MeanNormsAreEqualAfterScaling) {
    for (std::uint64_t seed = 1; seed <= 12; ++seed) {
        Prng rng(100 + seed);
        const Mat q = randomMat(rng, 50, 8, 3.0f, 0.0f), k = randomMat(rng, 70, 8, 0.2f, 0.5f);
        const QueryKeyNormalised n = normaliseQueryKey(q, k);
        const double mq = n.q.cast<double>().rowwise().norm().mean(), mk = n.k.cast<double>().rowwise().norm().mean();
        EXPECT_NEAR(mq / mk, 1.0, 1e-6) << seed;
        // the translation: the translated keys' mean is the queries' mean (before the scale)
        const Eigen::RowVectorXd keyMean = (n.k.cast<double>() * n.scale).colwise().mean();
        EXPECT_LT((keyMean - q.cast<double>().colwise().mean()).cwiseAbs().maxCoeff(), 1e-5) << seed;
        const QueryKeyMap map = queryKeyMap(q, k);
        EXPECT_NEAR(map.meanNorm, mq, 1e-5 * mq);
        EXPECT_DOUBLE_EQ(map.scale, n.scale);
    }
}

// d = 3: queries ±3·x, keys (5, 5, 0) ± y (twice each). Shift = −(5, 5, 0); a² = mean‖k'‖ / mean‖q‖
// = 1/3, so q̂ = ±√3·x and k̂ = ±√3·y. Over the 6 points: var(y) = 4·3/6 = 2, var(x) = 2·3/6 = 1,
// var(z) = 0: PC1 = +y (share 2/3), PC2 = +x (1/3). Query 0 at (0, √3), key 0 at (√3, 0).
TEST(QueryKeyMap, AHandDerivedMap) {
    Mat q(2, 3), k(4, 3);
    q << 3, 0, 0, -3, 0, 0;
    k << 5, 6, 0, 5, 4, 0, 5, 6, 0, 5, 4, 0;
    const QueryKeyMap map = queryKeyMap(q, k);
    const double r3 = std::sqrt(3.0);
    EXPECT_NEAR(map.scale, std::sqrt(1.0 / 3.0), 1e-12);
    EXPECT_NEAR(map.shift(0), -5.0f, 1e-6);
    EXPECT_NEAR(map.shift(1), -5.0f, 1e-6);
    EXPECT_NEAR(map.shift(2), 0.0f, 1e-6);
    EXPECT_NEAR(map.meanNorm, r3, 1e-9);
    EXPECT_NEAR(map.explained[0], 2.0 / 3.0, 1e-9);
    EXPECT_NEAR(map.explained[1], 1.0 / 3.0, 1e-9);
    EXPECT_NEAR(map.components(1, 0), 1.0, 1e-9);  // PC1 = +y
    EXPECT_NEAR(map.components(0, 1), 1.0, 1e-9);  // PC2 = +x
    const float want[6][2] = {{0, 1.7320508f}, {0, -1.7320508f}, {1.7320508f, 0}, {-1.7320508f, 0}, {1.7320508f, 0}, {-1.7320508f, 0}};
    ASSERT_EQ(map.points.rows(), 6);
    for (int i = 0; i < 6; ++i) {
        EXPECT_NEAR(map.points(i, 0), want[i][0], 1e-5) << i;
        EXPECT_NEAR(map.points(i, 1), want[i][1], 1e-5) << i;
    }
    EXPECT_NEAR(map.query(0)(1), static_cast<float>(r3), 1e-5);
    EXPECT_NEAR(map.key(1)(0), static_cast<float>(-r3), 1e-5);
}

// The components against the SVD of the stacked, centred points (right singular vectors; shares
// s² / Σ s²), under the same sign rule.
TEST(QueryKeyMap, MatchesTheSvdOfTheStackedPoints) {
    for (std::uint64_t seed = 1; seed <= 6; ++seed) {
        Prng rng(200 + seed);
        const Eigen::Index t = 64, d = 12;
        Mat q = randomMat(rng, t, d, 1.0f, 0.0f), k = randomMat(rng, t, d, 0.5f, 0.3f);
        q.col(2) *= 4.0f;  // a clear first component
        k.col(5) *= 3.0f;
        const QueryKeyMap map = queryKeyMap(q, k);
        const QueryKeyNormalised n = normaliseQueryKey(q, k);
        Eigen::MatrixXd x(2 * t, d);
        x << n.q.cast<double>(), n.k.cast<double>();
        x.rowwise() -= x.colwise().mean();
        const Eigen::JacobiSVD<Eigen::MatrixXd> svd(x, Eigen::ComputeThinV);
        const Eigen::VectorXd s2 = svd.singularValues().array().square();
        for (int c = 0; c < 2; ++c) {
            Eigen::VectorXd v = svd.matrixV().col(c);
            Eigen::Index at = 0;
            v.cwiseAbs().maxCoeff(&at);
            if (v(at) < 0) v = -v;
            EXPECT_LT((v - map.components.col(c)).cwiseAbs().maxCoeff(), 1e-6) << seed << " PC" << c + 1;
            EXPECT_NEAR(map.explained[static_cast<std::size_t>(c)], s2(c) / s2.sum(), 1e-6)
                << seed;  // x is made from the float normalised points
            const Eigen::VectorXd coords = x * v;
            EXPECT_LT((coords.cast<float>() - map.points.col(c)).cwiseAbs().maxCoeff(), 1e-4) << seed;
        }
    }
}

TEST(QueryKeyMap, TheSignRuleDoesNotFollowTheData) {
    Prng rng(7);
    const Mat q = randomMat(rng, 30, 6, 1.0f, 0.2f), k = randomMat(rng, 30, 6, 1.0f, -0.2f);
    const QueryKeyMap a = queryKeyMap(q, k), b = queryKeyMap(-q, -k);
    for (int c = 0; c < 2; ++c) {
        Eigen::Index at = 0;
        a.components.col(c).cwiseAbs().maxCoeff(&at);
        EXPECT_GT(a.components(at, c), 0.0);
    }
    EXPECT_LT((a.components - b.components).cwiseAbs().maxCoeff(), 1e-9);
    EXPECT_LT((a.points + b.points).cwiseAbs().maxCoeff(), 1e-4);  // every point mirrored through the centre
}

TEST(QueryKeyMap, LongAndNarrowInputs) {
    Prng rng(11);
    const Mat q = randomMat(rng, 4096, 64, 1.0f, 0.1f), k = randomMat(rng, 4096, 64, 0.7f, -0.4f);
    const QueryKeyMap map = queryKeyMap(q, k);
    EXPECT_EQ(map.points.rows(), 8192);
    EXPECT_EQ(map.queries, 4096);
    EXPECT_TRUE(map.points.allFinite());
    EXPECT_GE(map.explained[0], map.explained[1]);
    // d = 1: one component; the second is zero
    const QueryKeyMap line = queryKeyMap(q.leftCols(1), k.leftCols(1));
    EXPECT_NEAR(line.explained[0], 1.0, 1e-12);
    EXPECT_EQ(line.explained[1], 0.0);
    EXPECT_EQ(line.points.col(1).cwiseAbs().maxCoeff(), 0.0f);
    // zero queries: nothing to balance, a = 1
    EXPECT_EQ(queryKeyMap(Mat::Zero(3, 4), k.topLeftCorner(3, 4)).scale, 1.0);
}

TEST(QueryKeyMap, RefusesWhatIsNotAHead) {
    const Mat q = Mat::Ones(3, 4), k = Mat::Ones(3, 5);
    EXPECT_THROW(queryKeyMap(q, k), InputError);
    EXPECT_THROW(queryKeyMap(Mat(0, 4), Mat::Ones(2, 4)), InputError);
    Mat bad = Mat::Ones(3, 4);
    bad(1, 2) = std::nanf("");
    EXPECT_THROW(queryKeyMap(bad, Mat::Ones(3, 4)), InputError);
}

TEST(QueryKeyMap, StrongestKeys) {
    RowVec row(6);
    row << 0.1f, 0.4f, 0.0f, 0.4f, 0.05f, 0.05f;
    EXPECT_EQ(strongestKeys(row, 3), (std::vector<int>{1, 3, 0}));
    EXPECT_EQ(strongestKeys(row, 10), (std::vector<int>{1, 3, 0, 4, 5}));  // the masked key left out
    EXPECT_TRUE(strongestKeys(row, 0).empty());
}

}  // namespace
}  // namespace attnviz::core
