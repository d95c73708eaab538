// The kernels' blocking: derived by hand for known caches, read from a sysfs-shaped folder, and
// never a change to any bit of any product.
#include "core/attention/blocking.hpp"
#include "core/attention/kernels.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <bit>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <vector>

namespace attnviz::core {
namespace {

CpuCaches caches(long l1, int l1Ways, long l2, int l2Ways) {
    CpuCaches c;
    c.l1 = {l1, l1Ways};
    c.l2 = {l2, l2Ways};
    c.source = "test";
    return c;
}

TEST(Blocking, DerivedByHandForKnownCaches) {
    constexpr long kKiB = 1024;
    // 32 KiB 8-way L1, 1 MiB 8-way L2, the 6 × 64 tile of AVX-512:
    //   depth = 7/8 · 32768 / (70 · 4) = 102.4 → 96; columns = 6/8 · 1048576 / (96 · 4) = 2048;
    //   one tile wide: 6/8 · 1048576 / (64 · 4) = 3072.
    EXPECT_EQ(deriveBlocking(caches(32 * kKiB, 8, 1024 * kKiB, 8), 6, 64), (KernelBlocking{96, 2048, 96, 3072}));
    // The same caches, the 6 × 16 tile of AVX2: depth = 28672 / 88 = 325.8 → 320;
    //   columns = 786432 / 1280 = 614.4 → 608 (a multiple of 16); one tile wide: 786432 / 64 =
    //   12288, clamped to 4096.
    EXPECT_EQ(deriveBlocking(caches(32 * kKiB, 8, 1024 * kKiB, 8), 6, 16), (KernelBlocking{320, 608, 320, 4096}));
    // A 512 KiB L2: columns = 393216 / 1280 = 307.2 → 304.
    EXPECT_EQ(deriveBlocking(caches(32 * kKiB, 8, 512 * kKiB, 8), 6, 16), (KernelBlocking{320, 304, 320, 4096}));
    // A 256 KiB 4-way L2, AVX-512: one tile wide, 2/4 · 262144 / 256 = 512.
    EXPECT_EQ(deriveBlocking(caches(32 * kKiB, 8, 256 * kKiB, 4), 6, 64).narrowDepth, 512);
    // 48 KiB 12-way L1, 2 MiB 16-way L2, AVX-512: depth = 11/12 · 49152 / 280 = 160.9 → 160;
    //   columns = 14/16 · 2097152 / 640 = 2867.2 → 2816 (a multiple of 64); one tile wide: 7168 → 4096.
    EXPECT_EQ(deriveBlocking(caches(48 * kKiB, 12, 2048 * kKiB, 16), 6, 64), (KernelBlocking{160, 2816, 160, 4096}));
    // Unknown sizes and ways: the assumed 32 KiB 8-way L1 and 512 KiB 8-way L2.
    EXPECT_EQ(deriveBlocking(CpuCaches{}, 6, 16), deriveBlocking(caches(32 * kKiB, 8, 512 * kKiB, 8), 6, 16));
    EXPECT_EQ(deriveBlocking(caches(32 * kKiB, 0, 1024 * kKiB, 0), 6, 64), deriveBlocking(caches(32 * kKiB, 8, 1024 * kKiB, 8), 6, 64));
    // Clamped: a tiny L1 still gives 16 steps, a huge L2 at most 4096 columns.
    EXPECT_EQ(deriveBlocking(caches(1 * kKiB, 2, 64 * kKiB, 4), 6, 64).depth, 16);
    EXPECT_EQ(deriveBlocking(caches(32 * kKiB, 8, 256 * 1024 * kKiB, 16), 6, 64).columns, 4096);
}

// A folder laid out as /sys/devices/system/cpu/cpu0/cache, removed when the test ends.
struct CacheFolder {
    std::filesystem::path root = std::filesystem::temp_directory_path() / ("attnviz-caches-" + std::to_string(::getpid()));
    CacheFolder() { std::filesystem::create_directories(root); }
    ~CacheFolder() {
        std::error_code ignored;
        std::filesystem::remove_all(root, ignored);
    }
    CacheFolder(const CacheFolder&) = delete;
    CacheFolder& operator=(const CacheFolder&) = delete;
    void index(int i, const char* level, const char* type, const char* size, const char* ways) const {
        const auto dir = root / ("index" + std::to_string(i));
        std::filesystem::create_directories(dir);
        std::ofstream(dir / "level") << level << "\n";
        std::ofstream(dir / "type") << type << "\n";
        std::ofstream(dir / "size") << size << "\n";
        std::ofstream(dir / "ways_of_associativity") << ways << "\n";
    }
};

TEST(Blocking, ReadsTheDataCachesOfASysfsFolder) {
    const CacheFolder folder;
    folder.index(0, "1", "Data", "48K", "12");
    folder.index(1, "1", "Instruction", "32K", "8");  // not data: skipped
    folder.index(2, "2", "Unified", "2048K", "16");
    folder.index(3, "3", "Unified", "105M", "15");
    const CpuCaches c = readCaches(folder.root.string());
    EXPECT_EQ(c.l1.bytes, 48 * 1024);
    EXPECT_EQ(c.l1.ways, 12);
    EXPECT_EQ(c.l2.bytes, 2048 * 1024);
    EXPECT_EQ(c.l2.ways, 16);
    EXPECT_EQ(c.l3.bytes, 105L * 1024 * 1024);
    EXPECT_EQ(c.source, "sysfs");
    // Sizes that are not sizes stay unknown; so does a folder that is not there.
    folder.index(0, "1", "Data", "lots", "x");
    EXPECT_EQ(readCaches(folder.root.string()).l1.bytes, 0);
    EXPECT_EQ(readCaches((folder.root / "absent").string()).l2.bytes, 0);
}

TEST(Blocking, ThisCpusCachesAreKnownAndItsBlockingIsDerivedFromThem) {
    const CpuCaches& c = kernelCaches();
    EXPECT_GT(c.l1.bytes, 0);
    EXPECT_GT(c.l2.bytes, 0);
    const int tile = kernelIsa() == KernelIsa::Avx512 ? 64 : 16;
    EXPECT_EQ(kernelBlocking(), deriveBlocking(c, 6, tile));
}

// The bits of a float matrix, for exact comparison (NaN-safe).
std::vector<std::uint32_t> bitsOf(const Mat& m) {
    std::vector<std::uint32_t> bits(static_cast<std::size_t>(m.size()));
    for (Eigen::Index i = 0; i < m.size(); ++i) bits[static_cast<std::size_t>(i)] = std::bit_cast<std::uint32_t>(m.data()[i]);
    return bits;
}

// Restores the derived blocking however the test ends.
struct DerivedBlockingAfter {
    DerivedBlockingAfter() = default;
    ~DerivedBlockingAfter() { useKernelBlocking({}); }
    DerivedBlockingAfter(const DerivedBlockingAfter&) = delete;
    DerivedBlockingAfter& operator=(const DerivedBlockingAfter&) = delete;
};

TEST(Blocking, EveryBlockingGivesTheSameBits) {
    const DerivedBlockingAfter restore;
    std::srand(38);
    // Depth 777 (not a multiple of any block), 1000 columns (a padded last panel), 67 rows (an odd
    // count of full tiles and a short last one), and per-head shapes for the scores and A·V.
    const Mat x = Mat::Random(67, 777), w = Mat::Random(777, 1000) * 0.05f;
    const Mat q = Mat::Random(67, 64), k = Mat::Random(700, 64), v = Mat::Random(700, 80);
    const Mat weights = Mat::Random(67, 700).cwiseAbs() / 700.0f;
    // One register tile wide or less (a head's q from x; A·V at d_v = 64 and 16).
    const Mat w64 = w.leftCols(64), w16 = w.leftCols(16), v64 = v.leftCols(64), v16 = v.leftCols(16);
    std::vector<std::uint16_t> bf16(static_cast<std::size_t>(w.size()));
    for (std::size_t i = 0; i < bf16.size(); ++i) bf16[i] = static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(w.data()[i]) >> 16);
    PackedWeights f32Weights, bf16Weights;
    packWeights(w.data(), WeightType::F32, 777, 1000, false, f32Weights);
    packWeights(bf16.data(), WeightType::BF16, 777, 1000, false, bf16Weights);
    PackedColumns packedW, packedV, packedW64, packedW16, packedV64, packedV16;
    packColumns(w, packedW);
    packColumns(v, packedV);
    packColumns(w64, packedW64);
    packColumns(w16, packedW16);
    packColumns(v64, packedV64);
    packColumns(v16, packedV16);
    PackedKeys packedK;
    packKeys(k, packedK);
    PackedRows rows;
    packRows(x, rows);

    struct Results {
        Mat f32, bf16, packed, scores, values, causal, narrow64, narrow16, values64, values16;
    };
    const auto products = [&] {
        Results r{Mat(67, 1000), Mat(67, 1000), Mat(67, 1000), Mat(67, 700), Mat(67, 80),
                  Mat(67, 80),   Mat(67, 64),   Mat(67, 16),   Mat(67, 64),  Mat(67, 16)};
        multiplyPacked(x, &rows, w64, packedW64, r.narrow64);
        multiplyPacked(x, nullptr, w16, packedW16, r.narrow16);
        weighValues(weights, v64, packedV64, r.values64);
        weighValues(weights, v16, packedV16, r.values16, 300);
        multiplyWeights(x, nullptr, f32Weights, r.f32);
        multiplyWeights(x, &rows, bf16Weights, r.bf16);
        multiplyPacked(x, nullptr, w, packedW, r.packed);
        scoreRows(q, k, packedK, r.scores);
        weighValues(weights, v, packedV, r.values);
        weighValues(weights, v, packedV, r.causal, 600);
        return r;
    };
    for (const KernelIsa isa : {KernelIsa::Avx2, KernelIsa::Avx512}) {
        if (!hasKernelIsa(isa)) continue;
        const KernelIsa before = useKernelIsa(isa);
        useKernelBlocking({});
        const Results derived = products();
        for (const KernelBlocking b :
             {KernelBlocking{16, 16, 16, 16}, KernelBlocking{48, 64, 112, 80}, KernelBlocking{256, 512, 256, 4096},
              KernelBlocking{1024, 4096, 1024, 32}, KernelBlocking{48, 64, 112, 80, 2}, KernelBlocking{256, 512, 256, 4096, 2}}) {
            SCOPED_TRACE(::testing::Message() << kernelIsaName(isa) << ": depth " << b.depth << ", columns " << b.columns << ", keys "
                                              << b.keys << ", one tile wide " << b.narrowDepth << ", tiles of rows " << b.rowTiles);
            useKernelBlocking(b);
            EXPECT_EQ(kernelBlocking(), b);
            const Results r = products();
            EXPECT_EQ(bitsOf(r.f32), bitsOf(derived.f32));
            EXPECT_EQ(bitsOf(r.bf16), bitsOf(derived.bf16));
            EXPECT_EQ(bitsOf(r.packed), bitsOf(derived.packed));
            EXPECT_EQ(bitsOf(r.scores), bitsOf(derived.scores));
            EXPECT_EQ(bitsOf(r.values), bitsOf(derived.values));
            EXPECT_EQ(bitsOf(r.causal), bitsOf(derived.causal));
            EXPECT_EQ(bitsOf(r.narrow64), bitsOf(derived.narrow64));
            EXPECT_EQ(bitsOf(r.narrow16), bitsOf(derived.narrow16));
            EXPECT_EQ(bitsOf(r.values64), bitsOf(derived.values64));
            EXPECT_EQ(bitsOf(r.values16), bitsOf(derived.values16));
        }
        useKernelBlocking({});
        useKernelIsa(before);
    }
    // And the products are right, not only alike: against double precision.
    const Results r = products();
    using MatD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    const MatD reference = x.cast<double>() * w.cast<double>();
    EXPECT_LT((r.f32.cast<double>() - reference).cwiseAbs().maxCoeff(), 1e-4);
    const MatD values = weights.cast<double>() * v.cast<double>();
    EXPECT_LT((r.values.cast<double>() - values).cwiseAbs().maxCoeff(), 1e-5);
    const MatD narrow = x.cast<double>() * w64.cast<double>();
    EXPECT_LT((r.narrow64.cast<double>() - narrow).cwiseAbs().maxCoeff(), 1e-4);
}

}  // namespace
}  // namespace attnviz::core
