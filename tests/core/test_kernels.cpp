// scoreRows against a double-precision product, over shapes that exercise every edge of the
// tiling (rows not a multiple of 6, keys not a multiple of 16, d_k of 1 and odd widths).
#include "core/kernels.hpp"
#include "core/model.hpp"
#include "core/permutation.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace attnviz::core {
namespace {

using MatD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

struct Shape {
    Eigen::Index rows, keys, dk;
};

TEST(Kernels, ScoreRowsMatchesADoubleProductOnEveryEdge) {
    for (const Shape s : {Shape{1, 1, 1}, Shape{5, 15, 3}, Shape{6, 16, 64}, Shape{7, 17, 64}, Shape{13, 40, 5},
                          Shape{60, 300, 64}, Shape{61, 513, 33}, Shape{2, 1024, 128},
                          Shape{97, 1000, 20}}) {  // the last above the size that splits rows among cores
        SCOPED_TRACE(::testing::Message() << s.rows << " queries, " << s.keys << " keys, d_k " << s.dk);
        std::srand(static_cast<unsigned>(s.rows * 131 + s.keys * 7 + s.dk));
        const Mat q = Mat::Random(s.rows, s.dk), k = Mat::Random(s.keys, s.dk);
        PackedKeys packed;
        packKeys(k, packed);
        Mat scores(s.rows, s.keys);
        scoreRows(q, k, packed, scores);
        const MatD reference = q.cast<double>() * k.cast<double>().transpose();
        // |q·k| <= d_k here; float accumulation over d_k terms in [-1, 1] errs by ~d_k · 2^-24 · d_k.
        const double tolerance = 1e-6 * static_cast<double>(s.dk * s.dk) + 1e-6;
        EXPECT_LT((scores.cast<double>() - reference).cwiseAbs().maxCoeff(), tolerance);
    }
}

TEST(Kernels, ScoreRowsWritesIntoABlockOfALargerMatrix) {
    // The forward pass hands it a block of rows of the full scores matrix; the rows around it
    // must stay untouched.
    const Mat q = Mat::Random(20, 8), k = Mat::Random(35, 8);
    PackedKeys packed;
    packKeys(k, packed);
    Mat scores = Mat::Constant(20, 35, 7.0f);
    scoreRows(q.middleRows(6, 7), k, packed, scores.middleRows(6, 7));
    const Mat expected = q.middleRows(6, 7) * k.transpose();
    EXPECT_LT((scores.middleRows(6, 7) - expected).cwiseAbs().maxCoeff(), 1e-5f);
    EXPECT_TRUE((scores.topRows(6).array() == 7.0f).all());
    EXPECT_TRUE((scores.bottomRows(7).array() == 7.0f).all());
}

#if defined(__AVX2__) && defined(__FMA__)
TEST(Kernels, PermutedTokensGiveExactlyPermutedScores) {
    // 37 tokens: rows move between tile positions and the leftover rows, keys between panels and
    // the leftover keys; every score is still the same chain of fused multiply-adds.
    const Mat q = Mat::Random(37, 24), k = Mat::Random(37, 24);
    std::vector<int> perm(37);
    for (int i = 0; i < 37; ++i) perm[static_cast<std::size_t>(i)] = (i * 10 + 3) % 37;
    const Mat pq = permuteRows(q, perm), pk = permuteRows(k, perm);
    PackedKeys packed, permutedPacked;
    packKeys(k, packed);
    packKeys(pk, permutedPacked);
    Mat scores(37, 37), permuted(37, 37);
    scoreRows(q, k, packed, scores);
    scoreRows(pq, pk, permutedPacked, permuted);
    for (int i = 0; i < 37; ++i)
        for (int j = 0; j < 37; ++j)
            ASSERT_EQ(permuted(i, j), scores(perm[static_cast<std::size_t>(i)], perm[static_cast<std::size_t>(j)]))
                << "query " << i << ", key " << j;
}
#endif

}  // namespace
}  // namespace attnviz::core
