// The products over weights kept in their checkpoint's element type (F32, F16, BF16): each
// against the F32 kernels on the same matrix widened by halfToFloat / bfloat16ToFloat, bit for
// bit, on AVX2 and on AVX-512, over shapes at every edge of the tiling (n not a multiple of 16
// or 64, k = 1, fewer rows than a tile, rows not a multiple of 6, out a block of a wider
// matrix); the logits' row sums against a double sum and against the order kernels.hpp states.
#include "core/attention/kernels.hpp"
#include "core/base/float16.hpp"
#include "tests/core/kernel_runs.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace attnviz::core {
namespace {

using MatD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

#if defined(__AVX2__) && defined(__FMA__)
constexpr bool kKernels = true;  // the register-tiled kernels: bit-exact claims hold
#else
constexpr bool kKernels = false;  // a portable build: Eigen's product
#endif

const char* typeName(WeightType type) { return type == WeightType::F32 ? "F32" : type == WeightType::F16 ? "F16" : "BF16"; }

// splitmix64: the same elements on every machine.
struct Bits {
    std::uint64_t state;
    std::uint64_t next() {
        std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        return z ^ (z >> 31);
    }
};

// A weight matrix's elements as its file holds them, `count` of `type`, placed one byte past an
// aligned address (a safetensors tensor may start anywhere): values of a trained layer's size,
// |w| in [2^-7, 2), one in 16 of them tiny (subnormal as a half), and a few zeros.
struct Source {
    std::vector<std::byte> storage;
    const void* data() const { return storage.data() + 1; }
};

Source randomSource(WeightType type, Eigen::Index count, std::uint64_t seed) {
    Bits bits{seed};
    const std::size_t size = weightTypeBytes(type);
    Source s;
    s.storage.resize(static_cast<std::size_t>(count) * size + 1);
    for (Eigen::Index i = 0; i < count; ++i) {
        const std::uint64_t r = bits.next();
        const auto sign = static_cast<std::uint32_t>(r & 1U), mantissa = static_cast<std::uint32_t>(r >> 8);
        const bool tiny = ((r >> 1) & 15U) == 0, zero = ((r >> 5) & 63U) == 0;
        const int exponent = tiny ? -20 : -7 + static_cast<int>((r >> 40) % 8);  // 2^-20: a half subnormal
        const float value =
            zero ? 0.0f : (sign ? -1.0f : 1.0f) * std::ldexp(1.0f + static_cast<float>(mantissa & 0xFFFFU) / 65536.0f, exponent);
        std::byte* to = s.storage.data() + 1 + static_cast<std::size_t>(i) * size;
        if (type == WeightType::F32) {
            std::memcpy(to, &value, 4);
        } else if (type == WeightType::BF16) {
            const auto b = static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(value) >> 16);
            std::memcpy(to, &b, 2);
        } else {  // a half with the value's sign, a random 10-bit mantissa and the exponent above
            const std::uint32_t e = tiny ? 0U : static_cast<std::uint32_t>(exponent + 15);
            const auto h = static_cast<std::uint16_t>(zero ? 0U : (sign << 15) | (e << 10) | (mantissa & 0x3FFU));
            std::memcpy(to, &h, 2);
        }
    }
    return s;
}

// Element i of the source widened as the checkpoint reader widens it.
float widened(const Source& s, WeightType type, Eigen::Index i) {
    const auto* p = static_cast<const std::byte*>(s.data()) + static_cast<std::size_t>(i) * weightTypeBytes(type);
    if (type == WeightType::F32) {
        float v = 0.0f;
        std::memcpy(&v, p, 4);
        return v;
    }
    std::uint16_t b = 0;
    std::memcpy(&b, p, 2);
    return type == WeightType::F16 ? halfToFloat(b) : bfloat16ToFloat(b);
}

// b [k, n] widened to F32: the source is b itself or (transposed) bᵀ [n, k].
Mat widenedMatrix(const Source& s, WeightType type, Eigen::Index k, Eigen::Index n, bool transposed) {
    Mat b(k, n);
    for (Eigen::Index c = 0; c < k; ++c)
        for (Eigen::Index j = 0; j < n; ++j) b(c, j) = widened(s, type, transposed ? j * k + c : c * n + j);
    return b;
}

// The instruction sets this CPU and build run the kernels on.
std::vector<KernelIsa> isas() {
    std::vector<KernelIsa> out;
    for (const KernelIsa isa : {KernelIsa::Avx2, KernelIsa::Avx512, KernelIsa::Portable})
        if (hasKernelIsa(isa)) out.push_back(isa);
    return out;
}

bool sameBits(const Eigen::Ref<const Mat>& x, const Eigen::Ref<const Mat>& y) {
    for (Eigen::Index i = 0; i < x.rows(); ++i)
        for (Eigen::Index j = 0; j < x.cols(); ++j)
            if (std::bit_cast<std::uint32_t>(x(i, j)) != std::bit_cast<std::uint32_t>(y(i, j))) return false;
    return true;
}

struct Shape {
    Eigen::Index rows, k, n;
};

TEST(WeightKernels, MultiplyWeightsGivesTheBitsOfTheWidenedF32Product) {
    // {1, 520, 600} and {5, 600, 90}: fewer rows than a tile against a wide b (the cores share the
    // panels); {12, 600, 1100}: several blocks of depth and of columns; {97, 64, 700}: rows split
    // among the cores; k = 1; n below one panel, between panels, above a multiple of 64.
    const Shape shapes[] = {{1, 1, 1},      {5, 7, 17},      {6, 16, 16},   {7, 33, 70},    {13, 1, 100},   {2, 40, 3},
                            {61, 300, 129}, {12, 600, 1100}, {97, 64, 700}, {1, 520, 600},  {5, 600, 90},   {18, 48, 200},
                            {3, 260, 1024}, {100, 1, 33},    {6, 257, 64},  {25, 770, 143}, {11, 128, 1030}};
    for (const WeightType type : {WeightType::F32, WeightType::F16, WeightType::BF16})
        for (const bool transposed : {false, true})
            for (const Shape s : shapes) {
                SCOPED_TRACE(::testing::Message()
                             << typeName(type) << (transposed ? " transposed " : " ") << s.rows << " rows, k " << s.k << ", n " << s.n);
                const auto seed = static_cast<std::uint64_t>(s.rows * 1000003 + s.k * 1009 + s.n) * 3 + static_cast<std::uint64_t>(type);
                const Source src = randomSource(type, s.k * s.n, seed);
                PackedWeights pw;
                packWeights(src.data(), type, s.k, s.n, transposed, pw);
                ASSERT_EQ(pw.rows, s.k);
                ASSERT_EQ(pw.cols, s.n);
                ASSERT_EQ(pw.type, type);
                const Mat b = widenedMatrix(src, type, s.k, s.n, transposed);
                PackedColumns pb;
                packColumns(b, pb);
                std::srand(static_cast<unsigned>(seed));
                const Mat a = Mat::Random(s.rows, s.k);
                PackedRows pa;
                packRows(a, pa);
                for (const KernelIsa isa : isas())
                    withKernels(isa, [&] {
                        SCOPED_TRACE(kernelIsaName(isa));
                        Mat reference(s.rows, s.n);
                        multiplyPacked(a, &pa, b, pb, reference);
                        // Into a block of a wider matrix, whose other columns stay as they were.
                        Mat wide = Mat::Constant(s.rows, s.n + 21, 7.0f), here(s.rows, s.n);
                        multiplyWeights(a, &pa, pw, wide.middleCols(5, s.n));
                        multiplyWeights(a, nullptr, pw, here);
                        EXPECT_TRUE((wide.leftCols(5).array() == 7.0f).all());
                        EXPECT_TRUE((wide.rightCols(16).array() == 7.0f).all());
                        if (kKernels) {
                            EXPECT_TRUE(sameBits(wide.middleCols(5, s.n), reference));
                            EXPECT_TRUE(sameBits(here, reference));
                        }
                        // And the product is a product (in a portable build, Eigen's): against double precision.
                        const MatD exact = a.cast<double>() * b.cast<double>();
                        EXPECT_LT((here.cast<double>() - exact).cwiseAbs().maxCoeff(), 2e-6 * static_cast<double>(s.k) + 1e-6);
                    });
            }
}

TEST(WeightKernels, PackWeightsPacksEveryColumnPaddedWithZerosTheSameFromEitherLayout) {
    // b [k, n] from b itself and from bᵀ: the same panels, byte for byte, ⌈n/16⌉ of [k][16], the
    // columns past n zero; a BF16 panel's rows in interleaved pairs (b(2m, l) at 2l and
    // b(2m + 1, l) at 2l + 1 of the pair's 32), a last odd row as it is.
    for (const WeightType type : {WeightType::F32, WeightType::F16, WeightType::BF16})
        for (const Shape s : {Shape{0, 1, 1}, Shape{0, 3, 17}, Shape{0, 130, 64}, Shape{0, 200, 333}, Shape{0, 1100, 70}}) {
            SCOPED_TRACE(::testing::Message() << typeName(type) << " k " << s.k << ", n " << s.n);
            const Source src = randomSource(type, s.k * s.n, static_cast<std::uint64_t>(s.k * 7 + s.n));
            // bᵀ [n, k] written out element by element.
            const std::size_t size = weightTypeBytes(type);
            Source transposed;
            transposed.storage.resize(src.storage.size());
            for (Eigen::Index c = 0; c < s.k; ++c)
                for (Eigen::Index j = 0; j < s.n; ++j)
                    std::memcpy(transposed.storage.data() + 1 + static_cast<std::size_t>(j * s.k + c) * size,
                                src.storage.data() + 1 + static_cast<std::size_t>(c * s.n + j) * size, size);
            PackedWeights direct, fromTransposed;
            packWeights(src.data(), type, s.k, s.n, false, direct);
            packWeights(transposed.data(), type, s.k, s.n, true, fromTransposed);
            const Eigen::Index panels = (s.n + 15) / 16;
            ASSERT_EQ(direct.panels.size(), static_cast<std::size_t>(panels * s.k * 16) * size);
            ASSERT_EQ(fromTransposed.panels.size(), direct.panels.size());
            EXPECT_EQ(std::memcmp(direct.panels.data(), fromTransposed.panels.data(), direct.panels.size()), 0);
            // Panel p, row c, lane l holds b(c, 16 p + l), or zero past n.
            for (Eigen::Index p = 0; p < panels; ++p)
                for (Eigen::Index c = 0; c < s.k; ++c)
                    for (Eigen::Index l = 0; l < 16; ++l) {
                        const Eigen::Index j = p * 16 + l;
                        const bool paired = type == WeightType::BF16 && c - c % 2 + 1 < s.k;
                        const Eigen::Index at = paired ? (p * s.k + c - c % 2) * 16 + 2 * l + c % 2 : (p * s.k + c) * 16 + l;
                        EXPECT_EQ(packedWeightIndex(direct, c, j), at);
                        const std::byte* got = direct.panels.data() + static_cast<std::size_t>(at) * size;
                        const std::byte* want = src.storage.data() + 1 + static_cast<std::size_t>(c * s.n + j) * size;
                        const std::byte zeros[4] = {};
                        ASSERT_EQ(std::memcmp(got, j < s.n ? want : zeros, size), 0) << "panel " << p << ", row " << c << ", lane " << l;
                    }
        }
}

// The sum kernels.hpp states for one row: 16 lanes, each a chain of fused multiply-adds over
// the columns l, l + 16, …, then the lanes added pairwise.
float laneSum(const Source& s, WeightType type, Eigen::Index row, Eigen::Index cols, const float* x) {
    float lanes[16] = {};
    for (Eigen::Index j = 0; j < cols; ++j) lanes[j % 16] = std::fma(widened(s, type, row * cols + j), x[j], lanes[j % 16]);
    for (int half = 8; half >= 1; half /= 2)
        for (int l = 0; l < half; ++l) lanes[l] += lanes[l + half];
    return lanes[0];
}

// multiplyRowsByVector on `threads` cores (all of them when 0).
std::vector<float> rowsByVector(const Source& s, WeightType type, Eigen::Index rows, Eigen::Index cols, const std::vector<float>& x,
                                int threads) {
    std::vector<float> out(static_cast<std::size_t>(rows), -1.0f);
    onCores(threads, [&] { multiplyRowsByVector(s.data(), type, rows, cols, x.data(), out.data()); });
    return out;
}

TEST(WeightKernels, MultiplyRowsByVectorIsOneFixedSumPerRowOnAnyCoresAndInstructionSet) {
    // Rows not a multiple of the four summed together, columns not a multiple of 16; the last two
    // above the size that splits the rows among the cores.
    for (const WeightType type : {WeightType::F32, WeightType::F16, WeightType::BF16})
        for (const Shape s : {Shape{1, 1, 0}, Shape{3, 15, 0}, Shape{4, 16, 0}, Shape{5, 17, 0}, Shape{67, 100, 0}, Shape{1003, 900, 0},
                              Shape{4100, 33, 0}}) {
            const Eigen::Index rows = s.rows, cols = s.k;
            SCOPED_TRACE(::testing::Message() << typeName(type) << " " << rows << " rows, " << cols << " columns");
            const Source src = randomSource(type, rows * cols, static_cast<std::uint64_t>(rows * 31 + cols));
            std::srand(static_cast<unsigned>(rows + cols));
            const Vec xv = Vec::Random(cols);
            const std::vector<float> x(xv.data(), xv.data() + cols);
            std::vector<std::vector<float>> results;
            for (const KernelIsa isa : isas())
                withKernels(isa, [&] {
                    SCOPED_TRACE(kernelIsaName(isa));
                    const std::vector<float> one = rowsByVector(src, type, rows, cols, x, 1),
                                             two = rowsByVector(src, type, rows, cols, x, 2);
                    for (Eigen::Index i = 0; i < rows; ++i) {
                        const auto u = static_cast<std::size_t>(i);
                        ASSERT_EQ(std::bit_cast<std::uint32_t>(one[u]), std::bit_cast<std::uint32_t>(two[u])) << "row " << i;
                        ASSERT_EQ(std::bit_cast<std::uint32_t>(one[u]), std::bit_cast<std::uint32_t>(laneSum(src, type, i, cols, x.data())))
                            << "row " << i;
                        double exact = 0.0, magnitude = 0.0;
                        for (Eigen::Index j = 0; j < cols; ++j) {
                            const double term = static_cast<double>(widened(src, type, i * cols + j)) * x[static_cast<std::size_t>(j)];
                            exact += term;
                            magnitude += std::abs(term);
                        }
                        // Float rounding over chains of ⌈cols/16⌉ and four pairwise adds.
                        const double bound = std::ldexp(magnitude, -24) * (static_cast<double>(cols) / 16.0 + 6.0) + 1e-30;
                        ASSERT_LE(std::abs(static_cast<double>(one[u]) - exact), bound) << "row " << i;
                    }
                    results.push_back(one);
                });
            for (std::size_t n = 1; n < results.size(); ++n) EXPECT_TRUE(results[n] == results[0]) << "instruction sets differ";
        }
}

TEST(WeightKernels, WidenRowIsExactForEveryBitPattern) {
    // Every half and bfloat16 as a [256, 256] matrix (subnormals, infinities, NaN with their
    // payloads), one byte past an aligned address; F32 copied bit for bit, NaN included.
    for (const WeightType type : {WeightType::F16, WeightType::BF16, WeightType::F32}) {
        SCOPED_TRACE(typeName(type));
        const Eigen::Index n = 256, rows = 256;
        const std::size_t size = weightTypeBytes(type);
        std::vector<std::byte> storage(static_cast<std::size_t>(n * rows) * size + 1);
        for (std::uint32_t i = 0; i < 65536; ++i) {
            std::byte* to = storage.data() + 1 + i * size;
            if (type == WeightType::F32) {
                const std::uint32_t bits = i * 65537U ^ 0x7F801234U;  // spans NaN, infinities, subnormals
                std::memcpy(to, &bits, 4);
            } else {
                const auto bits = static_cast<std::uint16_t>(i);
                std::memcpy(to, &bits, 2);
            }
        }
        std::vector<float> row(static_cast<std::size_t>(n));
        for (Eigen::Index r = 0; r < rows; ++r) {
            widenRow(storage.data() + 1, type, n, r, row.data());
            for (Eigen::Index j = 0; j < n; ++j) {
                const std::byte* from = storage.data() + 1 + static_cast<std::size_t>(r * n + j) * size;
                std::uint32_t want = 0;
                if (type == WeightType::F32) {
                    std::memcpy(&want, from, 4);
                } else {
                    std::uint16_t bits = 0;
                    std::memcpy(&bits, from, 2);
                    want = std::bit_cast<std::uint32_t>(type == WeightType::F16 ? halfToFloat(bits) : bfloat16ToFloat(bits));
                }
                ASSERT_EQ(std::bit_cast<std::uint32_t>(row[static_cast<std::size_t>(j)]), want) << "row " << r << ", column " << j;
            }
        }
    }
}

}  // namespace
}  // namespace attnviz::core
