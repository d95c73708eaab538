// scoreRows and weighValues against double-precision products, over shapes that exercise every
// edge of the tiling (rows not a multiple of 6, keys or values not a multiple of 16, widths of 1
// and odd widths), and attendHead against the stages it fuses.
#include "core/attention/kernels.hpp"
#include "core/attention/permutation.hpp"
#include "core/scenario/model.hpp"
#include "tests/core/kernel_runs.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace attnviz::core {
namespace {

using MatD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

struct Shape {
    Eigen::Index rows, keys, dk;
};

TEST(Kernels, ScoreRowsMatchesADoubleProductOnEveryEdge) {
    for (const Shape s :
         {Shape{1, 1, 1}, Shape{5, 15, 3}, Shape{6, 16, 64}, Shape{7, 17, 64}, Shape{13, 40, 5}, Shape{60, 300, 64}, Shape{61, 513, 33},
          Shape{2, 1024, 128}, Shape{97, 1000, 20}}) {  // the last above the size that splits rows among cores
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

// Rows of non-negative weights that sum to 1, as a softmax leaves them; under `causal`, row r's
// weights past key causalFrom + r are zero.
Mat weightRows(Eigen::Index rows, Eigen::Index keys, Eigen::Index causalFrom = -1) {
    Mat w = Mat::Random(rows, keys).cwiseAbs();
    for (Eigen::Index r = 0; r < rows; ++r) {
        if (causalFrom >= 0) w.row(r).tail(std::max<Eigen::Index>(0, keys - causalFrom - r - 1)).setZero();
        const float sum = w.row(r).sum();
        if (sum > 0.0f) w.row(r) /= sum;
    }
    return w;
}

TEST(Kernels, WeighValuesMatchesADoubleProductOnEveryEdge) {
    for (const Shape s :
         {Shape{1, 1, 1}, Shape{5, 15, 3}, Shape{6, 16, 16}, Shape{7, 17, 64}, Shape{13, 40, 5}, Shape{60, 300, 64}, Shape{61, 513, 33},
          Shape{2, 1024, 128}, Shape{12, 257, 17}, Shape{97, 1000, 20}}) {  // the last above the size that splits rows among cores
        for (const Eigen::Index causalFrom : {Eigen::Index{-1}, Eigen::Index{0}, s.keys / 3}) {
            SCOPED_TRACE(::testing::Message() << s.rows << " queries, " << s.keys << " keys, d_v " << s.dk << ", causal from "
                                              << causalFrom);
            std::srand(static_cast<unsigned>(s.rows * 131 + s.keys * 7 + s.dk + causalFrom));
            const Mat w = weightRows(s.rows, s.keys, causalFrom), v = Mat::Random(s.keys, s.dk);
            PackedColumns packed;
            packColumns(v, packed);
            Mat out(s.rows, s.dk);
            weighValues(w, v, packed, out, causalFrom);
            const MatD reference = w.cast<double>() * v.cast<double>();
            // Averages of values in [-1, 1]: float accumulation over n keys errs by ~n · 2^-24.
            EXPECT_LT((out.cast<double>() - reference).cwiseAbs().maxCoeff(), 1e-7 * static_cast<double>(s.keys) + 1e-6);
            if (causalFrom >= 0) {  // skipping the zero weights changes no output
                Mat full(s.rows, s.dk);
                weighValues(w, v, packed, full);
                EXPECT_TRUE((out.array() == full.array()).all());
            }
        }
    }
}

TEST(Kernels, WeighValuesWritesIntoABlockOfALargerMatrixAndGivesZerosWithoutKeys) {
    const Mat w = weightRows(20, 35), v = Mat::Random(35, 18);
    PackedColumns packed;
    packColumns(v, packed);
    Mat out = Mat::Constant(20, 18, 7.0f);
    weighValues(w.middleRows(6, 7), v, packed, out.middleRows(6, 7));
    const Mat expected = w.middleRows(6, 7) * v;
    EXPECT_LT((out.middleRows(6, 7) - expected).cwiseAbs().maxCoeff(), 1e-6f);
    EXPECT_TRUE((out.topRows(6).array() == 7.0f).all());
    EXPECT_TRUE((out.bottomRows(7).array() == 7.0f).all());
    // No keys at all (every key padded away upstream): the outputs are zeros, not what was there.
    const Mat none(8, 0), noValues(0, 18);
    packColumns(noValues, packed);
    Mat empty = Mat::Constant(8, 18, 7.0f);
    weighValues(none, noValues, packed, empty);
    EXPECT_TRUE((empty.array() == 0.0f).all());
}

TEST(Kernels, MultiplyPackedMatchesADoubleProductHoweverTheRowsWerePacked) {
    // The projections: x [T, d_model] times a head's slice of a weight matrix [d_model, d_k],
    // a block of a wider matrix; x packed once (or not, or packed for another shape: ignored).
    // {1, 520, 512} and {5, 600, 512}: fewer rows than a tile against a wide b, where the cores
    // share b's panels instead of the rows.
    for (const Shape s : {Shape{1, 1, 1}, Shape{5, 15, 3}, Shape{6, 16, 16}, Shape{7, 33, 64}, Shape{61, 40, 512}, Shape{100, 64, 512},
                          Shape{1, 520, 512}, Shape{5, 600, 512}}) {
        SCOPED_TRACE(::testing::Message() << s.rows << " rows, " << s.keys << " columns, d " << s.dk);
        std::srand(static_cast<unsigned>(s.rows * 17 + s.keys * 3 + s.dk));
        const Mat a = Mat::Random(s.rows, s.dk), wide = Mat::Random(s.dk, 3 * s.keys);
        const auto b = wide.middleCols(s.keys, s.keys);
        PackedColumns pb;
        packColumns(b, pb);
        PackedRows pa, other;
        packRows(a, pa);
        packRows(Mat::Random(s.rows + 6, s.dk), other);
        const MatD reference = a.cast<double>() * b.cast<double>();
        // Sums of d products in [-1, 1]: float rounding errs by far less than d · 2^-24 · sqrt(d).
        const double tolerance = 2e-6 * static_cast<double>(s.dk) + 1e-6;
        Mat packedOnce(s.rows, s.keys), packedHere(s.rows, s.keys), packedWrong(s.rows, s.keys);
        multiplyPacked(a, &pa, b, pb, packedOnce);
        multiplyPacked(a, nullptr, b, pb, packedHere);
        multiplyPacked(a, &other, b, pb, packedWrong);
        EXPECT_LT((packedOnce.cast<double>() - reference).cwiseAbs().maxCoeff(), tolerance);
        EXPECT_TRUE((packedOnce.array() == packedHere.array()).all());
        EXPECT_TRUE((packedOnce.array() == packedWrong.array()).all());
        // The same rows inside a taller a (tiles of six, shared by rows): the same bits, so a
        // token appended to a kept pass gets the numbers the whole pass gives it.
        Mat taller = Mat::Random(s.rows + 12, s.dk);
        taller.topRows(s.rows) = a;
        Mat tallOut(taller.rows(), s.keys);
        multiplyPacked(taller, nullptr, b, pb, tallOut);
        EXPECT_TRUE((tallOut.topRows(s.rows).array() == packedOnce.array()).all());
    }
}

TEST(Kernels, AttendHeadGivesTheNumbersOfTheStagesItFuses) {
    // attendHead computes scores, softmax and A·V block by block; scoreHead, weighHead and
    // outputHead each over the whole matrix. Same kernels, same chains: the same bits (with AVX2).
    Scenario s;
    s.sentence = "the cat sat on the mat while the dog slept by the door";
    s.length = 301;  // several blocks, the last one short, rows not a multiple of 6
    s.dModel = 48;
    s.heads = 3;
    s.seed = 5;
    const Model model = buildModel(s);
    for (const int variant : {0, 1, 2}) {
        SCOPED_TRACE(variant == 0 ? "plain" : variant == 1 ? "causal" : "causal with padding");
        Settings settings;
        settings.causal = variant >= 1;
        if (variant == 2) settings.paddedKeys = {0, 7, 300};
        settings.temperature = 0.7f;
        HeadTensors fused, staged;
        projectHead(model, 1, fused);
        staged = fused;
        attendHead(model, settings, fused, true);
        scoreHead(model, settings, staged);
        weighHead(model, settings, staged);
        outputHead(settings, staged);
#if defined(__AVX2__) && defined(__FMA__)
        EXPECT_TRUE((fused.scores.array() == staged.scores.array()).all());
        EXPECT_TRUE((fused.weights.array() == staged.weights.array()).all());
        EXPECT_TRUE((fused.output.array() == staged.output.array()).all());
#else  // Eigen's products, whose sums may run in another order for a block than for the whole
        EXPECT_LT((fused.scores - staged.scores).cwiseAbs().maxCoeff(), 1e-5f);
        EXPECT_LT((fused.weights - staged.weights).cwiseAbs().maxCoeff(), 1e-5f);
#endif
        // And against a double-precision A·V of those weights.
        const MatD reference = staged.weights.cast<double>() * staged.v.cast<double>();
        EXPECT_LT((fused.output.cast<double>() - reference).cwiseAbs().maxCoeff(), 1e-5);
    }
}

TEST(Kernels, TheForwardPassSharingHeadsBlocksAmongCoresGivesEachHeadsOwnNumbers) {
    // runForward shares the heads' blocks of rows among the cores (a head's blocks may run on
    // different cores, its last block first); reattendForward does the same for a new
    // temperature. Each head must get exactly what attendHead gives it alone, and the output what
    // combineHeads makes of those heads.
    Scenario s;
    s.sentence = "the cat sat on the mat while the dog slept by the door";
    s.length = 301;  // two blocks a head (252 rows and 49)
    s.dModel = 48;
    s.heads = 3;
    s.seed = 9;
    s.wo.kind = MatrixSpec::Kind::Random;
    const Model model = buildModel(s);
    for (const bool causal : {false, true}) {
        SCOPED_TRACE(causal ? "causal" : "plain");
        Settings settings;
        settings.causal = causal;
        Forward shared = runForward(model, settings), alone;
        alone.heads.resize(3);
        for (int h = 0; h < 3; ++h) {
            HeadTensors& head = alone.heads[static_cast<std::size_t>(h)];
            projectHead(model, h, head);
            attendHead(model, settings, head, true);
        }
        combineHeads(model, alone);
        const auto same = [&](const char* what) {
            SCOPED_TRACE(what);
            for (std::size_t h = 0; h < 3; ++h) {
                EXPECT_TRUE((shared.heads[h].scores.array() == alone.heads[h].scores.array()).all()) << "head " << h;
                EXPECT_TRUE((shared.heads[h].weights.array() == alone.heads[h].weights.array()).all()) << "head " << h;
                EXPECT_TRUE((shared.heads[h].output.array() == alone.heads[h].output.array()).all()) << "head " << h;
            }
            EXPECT_TRUE((shared.output.array() == alone.output.array()).all());
        };
        same("a new pass");
        settings.temperature = 0.4f;
        reattendForward(model, settings, shared);
        for (HeadTensors& head : alone.heads) attendHead(model, settings, head, false);
        combineHeads(model, alone);
        same("a new temperature");
    }
}

TEST(Kernels, TheProjectionsSharedByRowsGiveEachHeadsOwnBits) {
    // When the heads do not fall evenly to the cores, runForward shares each head's q, k and v
    // among them by blocks of rows (3 heads, 301 rows: 2 blocks a head on 2 cores, 4 on 4, 6 on 7
    // and on 16; on 3 cores a head each). Every head must get the bits projectHead gives it
    // alone, with a checkpoint's biases, q/k norms and RoPE, whatever the count of cores; so must
    // the weights and the output.
    Scenario s;
    s.sentence = "the cat sat on the mat while the dog slept by the door";
    s.length = 301;
    s.dModel = 48;
    s.heads = 3;
    s.seed = 4;
    s.positional = Positional::Rope;
    s.wo.kind = MatrixSpec::Kind::Random;
    Model model = buildModel(s);
    const Eigen::Index width = static_cast<Eigen::Index>(model.heads) * model.dk;
    model.bq = RowVec::Random(width);
    model.bk = RowVec::Random(width);
    model.bv = RowVec::Random(static_cast<Eigen::Index>(model.heads) * model.dv);
    model.qNorm = RowVec::Random(model.dk).cwiseAbs();
    model.kNorm = RowVec::Random(model.dk).cwiseAbs();
    Forward alone;
    alone.heads.resize(3);
    Settings settings;
    settings.causal = true;
    for (int h = 0; h < 3; ++h) {
        HeadTensors& head = alone.heads[static_cast<std::size_t>(h)];
        onCores(1, [&] { projectHead(model, h, head); });
        attendHead(model, settings, head, true);
    }
    combineHeads(model, alone);
    for (const int cores : {2, 3, 4, 7, 16}) {
        SCOPED_TRACE(std::to_string(cores) + " cores");
        Forward shared;
        onCores(cores, [&] { runForward(model, settings, shared); });
        for (std::size_t h = 0; h < 3; ++h) {
            EXPECT_TRUE((shared.heads[h].q.array() == alone.heads[h].q.array()).all()) << "head " << h;
            EXPECT_TRUE((shared.heads[h].k.array() == alone.heads[h].k.array()).all()) << "head " << h;
            EXPECT_TRUE((shared.heads[h].v.array() == alone.heads[h].v.array()).all()) << "head " << h;
            EXPECT_TRUE((shared.heads[h].weights.array() == alone.heads[h].weights.array()).all()) << "head " << h;
        }
        EXPECT_TRUE((shared.output.array() == alone.output.array()).all());
    }
}

TEST(Kernels, TheProjectionsAreSplitOnlyWhereTheHeadsDoNotFallEvenlyToTheCores) {
    // Blocks a head: cores / gcd(heads, cores), each at least 48 rows.
    const auto blocksFor = [](int heads, int length, int cores) {
        Scenario s;
        s.sentence = "a b c d e f";
        s.length = length;
        s.dModel = 8 * heads;
        s.heads = heads;
        const Model model = buildModel(s);
        Eigen::Index blocks = 0;
        onCores(cores, [&] { blocks = projectionBlocks(model, heads); });
        return blocks;
    };
    // A portable build keeps one block: Eigen's product of some rows need not give their bits.
    const auto split = [](Eigen::Index blocks) { return kernelIsa() == KernelIsa::Portable ? 1 : blocks; };
    EXPECT_EQ(blocksFor(8, 1024, 2), 1);           // 4 heads a core
    EXPECT_EQ(blocksFor(3, 1024, 2), split(2));    // 6 tasks, 3 a core
    EXPECT_EQ(blocksFor(8, 1024, 16), split(2));   // 16 tasks
    EXPECT_EQ(blocksFor(12, 1024, 16), split(4));  // 48 tasks, 3 a core
    EXPECT_EQ(blocksFor(1, 1024, 2), split(2));
    EXPECT_EQ(blocksFor(3, 100, 16), split(2));  // 100 rows: 2 blocks of at least 48
    EXPECT_EQ(blocksFor(3, 40, 2), 1);           // too few rows to split
}

TEST(Kernels, GroupedQueryHeadsSharedByRowsReadTheirKeyValueHeadsSlices) {
    // 4 query heads on 2 key/value heads, 8 cores, 120 rows: 2 blocks a head. Each query head's
    // blocks must read its own kv head's slices of W_K and W_V, as projectHead does.
    Scenario s;
    s.sentence = "one two three four five six seven";
    s.length = 120;
    s.dModel = 32;
    s.heads = 4;
    s.kvHeads = 2;
    s.seed = 12;
    const Model model = buildModel(s);
    Settings settings;
    Forward shared;
    onCores(8, [&] { runForward(model, settings, shared); });
    for (int h = 0; h < 4; ++h) {
        HeadTensors head;
        projectHead(model, h, head);
        const HeadTensors& got = shared.heads[static_cast<std::size_t>(h)];
        EXPECT_TRUE((got.q.array() == head.q.array()).all()) << "head " << h;
        EXPECT_TRUE((got.k.array() == head.k.array()).all()) << "head " << h;
        EXPECT_TRUE((got.v.array() == head.v.array()).all()) << "head " << h;
    }
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
TEST(Kernels, PermutedQueriesGiveExactlyPermutedOutputs) {
    // Rows move between tile positions and the leftover rows; each output is the same chain.
    const Mat w = weightRows(37, 45), v = Mat::Random(45, 21);
    std::vector<int> perm(37);
    for (int i = 0; i < 37; ++i) perm[static_cast<std::size_t>(i)] = (i * 10 + 3) % 37;
    PackedColumns packed;
    packColumns(v, packed);
    Mat out(37, 21), permuted(37, 21);
    weighValues(w, v, packed, out);
    weighValues(permuteRows(w, perm), v, packed, permuted);
    for (int i = 0; i < 37; ++i)
        for (int c = 0; c < 21; ++c)
            ASSERT_EQ(permuted(i, c), out(perm[static_cast<std::size_t>(i)], c)) << "query " << i << ", column " << c;
}

TEST(Kernels, EverySplitOfTheRowsAmongCoresGivesTheBitsOfOneChainPerElement) {
    // 67 rows on 1 to 7 cores: shares that begin and end inside a tile of six, so short tiles
    // before a share's first full tile and after its last, on each instruction set; 1000 columns
    // and keys (a padded last panel of weights, 8 columns and keys outside the packed panels).
    // Every element must be the chain of fused multiply-adds over d in order, whatever the split.
    std::srand(67);
    const Mat x = Mat::Random(67, 200), w = Mat::Random(200, 1000) * 0.05f, q = Mat::Random(67, 64), k = Mat::Random(1000, 64);
    PackedWeights weights;
    packWeights(w.data(), WeightType::F32, 200, 1000, false, weights);
    PackedColumns packedW;
    packColumns(w, packedW);
    PackedKeys packedK;
    packKeys(k, packedK);
    PackedRows rows;
    packRows(x, rows);
    Mat chainW(67, 1000), chainK(67, 1000);
    for (Eigen::Index i = 0; i < 67; ++i)
        for (Eigen::Index j = 0; j < 1000; ++j) {
            float a = 0.0f, b = 0.0f;
            for (Eigen::Index c = 0; c < 200; ++c) a = std::fma(x(i, c), w(c, j), a);
            for (Eigen::Index c = 0; c < 64; ++c) b = std::fma(q(i, c), k(j, c), b);
            chainW(i, j) = a, chainK(i, j) = b;
        }
    for (const KernelIsa isa : {KernelIsa::Avx2, KernelIsa::Avx512}) {
        if (!hasKernelIsa(isa)) continue;
        for (const int threads : {1, 2, 3, 4, 5, 7})
            withKernels(isa, [&] {
                SCOPED_TRACE(::testing::Message() << kernelIsaName(isa) << " on " << threads << " cores");
                Mat weighed(67, 1000), weighedRows(67, 1000), packed(67, 1000), scores(67, 1000);
                onCores(threads, [&] {
                    multiplyWeights(x, nullptr, weights, weighed);
                    multiplyWeights(x, &rows, weights, weighedRows);
                    multiplyPacked(x, nullptr, w, packedW, packed);
                    scoreRows(q, k, packedK, scores);
                });
                EXPECT_TRUE((weighed.array() == chainW.array()).all());
                EXPECT_TRUE((weighedRows.array() == chainW.array()).all());
                EXPECT_TRUE((packed.array() == chainW.array()).all());
                EXPECT_TRUE((scores.array() == chainK.array()).all());
            });
    }
}

TEST(Kernels, Avx2AndAvx512GiveTheSameBits) {
    // Both builds of the strips sum each element as one chain of fused multiply-adds in the
    // same order; the AVX-512 one covers four, two or one panels at a time, so the widths here
    // run 1 to 9 panels (every mix of the three) and the leftover columns, rows and keys.
    if (!hasKernelIsa(KernelIsa::Avx512)) GTEST_SKIP() << "this CPU has no AVX-512";
    for (const Shape s : {Shape{5, 15, 3}, Shape{6, 16, 16}, Shape{13, 40, 33}, Shape{61, 513, 64}, Shape{37, 96, 112}, Shape{18, 144, 144},
                          Shape{97, 1000, 20}, Shape{7, 300, 130}}) {
        SCOPED_TRACE(::testing::Message() << s.rows << " rows, " << s.keys << " keys, width " << s.dk);
        std::srand(static_cast<unsigned>(s.rows * 131 + s.keys * 7 + s.dk));
        const Mat q = Mat::Random(s.rows, s.dk), k = Mat::Random(s.keys, s.dk), v = Mat::Random(s.keys, s.dk);
        const Mat b = Mat::Random(s.dk, s.keys), w = weightRows(s.rows, s.keys, s.keys / 4);
        PackedKeys pk;
        packKeys(k, pk);
        PackedColumns pv, pb;
        packColumns(v, pv);
        packColumns(b, pb);
        Mat scores[2], product[2], values[2], causal[2];
        for (int n = 0; n < 2; ++n)
            withKernels(n == 0 ? KernelIsa::Avx2 : KernelIsa::Avx512, [&] {
                scores[n].resize(s.rows, s.keys);
                product[n].resize(s.rows, s.keys);
                values[n].resize(s.rows, s.dk);
                causal[n].resize(s.rows, s.dk);
                scoreRows(q, k, pk, scores[n]);
                multiplyPacked(q, nullptr, b, pb, product[n]);
                weighValues(w, v, pv, values[n]);
                weighValues(w, v, pv, causal[n], s.keys / 4);
            });
        EXPECT_TRUE((scores[0].array() == scores[1].array()).all());
        EXPECT_TRUE((product[0].array() == product[1].array()).all());
        EXPECT_TRUE((values[0].array() == values[1].array()).all());
        EXPECT_TRUE((causal[0].array() == causal[1].array()).all());
        // And a real difference would show: the product is not all zeros.
        EXPECT_GT(product[1].cwiseAbs().maxCoeff(), 0.1f);
    }
    // A whole forward pass, W_O included: the same output and weights, bit for bit.
    Scenario sc;
    sc.sentence = "the cat sat on the mat while the dog slept by the door";
    sc.length = 203;
    sc.dModel = 96;
    sc.heads = 2;  // d_k = d_v = 48: three panels
    sc.wo.kind = MatrixSpec::Kind::Random;
    const Model model = buildModel(sc);
    Forward forward[2];
    for (int n = 0; n < 2; ++n) withKernels(n == 0 ? KernelIsa::Avx2 : KernelIsa::Avx512, [&] { forward[n] = runForward(model, {}); });
    EXPECT_TRUE((forward[0].output.array() == forward[1].output.array()).all());
    for (int h = 0; h < 2; ++h)
        EXPECT_TRUE((forward[0].heads[h].weights.array() == forward[1].heads[h].weights.array()).all()) << "head " << h;
}
#endif

}  // namespace
}  // namespace attnviz::core
