#include "core/attention/kernels.hpp"

#include "core/attention/kernel_strips.hpp"
#include "core/base/float16.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define ATTNVIZ_KERNELS_AVX2 1
#elif defined(__SSE2__)
#include <emmintrin.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

namespace attnviz::core {

bool packs(const PackedColumns& packed, const MatRef& b) { return packed.rows == b.rows() && packed.cols == b.cols(); }
bool packs(const PackedRows& packed, const MatRef& a) { return packed.rows == a.rows() && packed.cols == a.cols(); }

std::size_t weightTypeBytes(WeightType type) { return type == WeightType::F32 ? 4 : 2; }

namespace {

constexpr Eigen::Index kPanel = 16;                  // keys per panel: two 8-float registers
constexpr Eigen::Index kTileRows = kKernelTileRows;  // queries per tile: 6 × 2 accumulators + 2 panel rows + 1 broadcast (AVX2)

// Element i of `type` at src (any alignment) widened to float exactly.
float widenAt(const std::byte* src, WeightType type, Eigen::Index i) {
    if (type == WeightType::F32) {
        float v = 0.0f;
        std::memcpy(&v, src + 4 * i, sizeof v);
        return v;
    }
    std::uint16_t bits = 0;
    std::memcpy(&bits, src + 2 * i, sizeof bits);
    return type == WeightType::F16 ? halfToFloat(bits) : bfloat16ToFloat(bits);
}

#ifdef __SSE2__
// Columns [j, j + 8 or 4) of 8 rows of 16-bit or 4 rows of 32-bit elements, `rowBytes` apart at
// src, into rows j … of a panel (`to` = row j's first of those lanes): one 8 × 8 or 4 × 4
// transpose in registers, its three or two rounds of unpacks.
template <class T>
void transposeBlock(const std::byte* src, Eigen::Index rowBytes, T* to) {
    const auto load = [&](int r) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + r * rowBytes)); };
    const auto store = [&](int c, __m128i v) { _mm_storeu_si128(reinterpret_cast<__m128i*>(to + c * kPanel), v); };
    if constexpr (sizeof(T) == 2) {
        __m128i b[8], c[8];
        for (int r = 0; r < 8; r += 2) {  // b[r]: rows r, r + 1 interleaved, columns 0-3; b[r + 1]: 4-7
            const __m128i x = load(r), y = load(r + 1);
            b[r] = _mm_unpacklo_epi16(x, y), b[r + 1] = _mm_unpackhi_epi16(x, y);
        }
        for (int h = 0; h < 2; ++h)  // c[4h + i]: rows 4h … 4h + 3 of columns 2i, 2i + 1
            for (int i = 0; i < 2; ++i) {
                c[4 * h + 2 * i] = _mm_unpacklo_epi32(b[4 * h + i], b[4 * h + 2 + i]);
                c[4 * h + 2 * i + 1] = _mm_unpackhi_epi32(b[4 * h + i], b[4 * h + 2 + i]);
            }
        for (int i = 0; i < 4; ++i) {  // column 2i and 2i + 1: rows 0-3 from c[i], 4-7 from c[4 + i]
            store(2 * i, _mm_unpacklo_epi64(c[i], c[4 + i]));
            store(2 * i + 1, _mm_unpackhi_epi64(c[i], c[4 + i]));
        }
    } else {
        const __m128i x0 = load(0), x1 = load(1), x2 = load(2), x3 = load(3);
        const __m128i t0 = _mm_unpacklo_epi32(x0, x1), t1 = _mm_unpacklo_epi32(x2, x3);
        const __m128i t2 = _mm_unpackhi_epi32(x0, x1), t3 = _mm_unpackhi_epi32(x2, x3);
        store(0, _mm_unpacklo_epi64(t0, t1)), store(1, _mm_unpackhi_epi64(t0, t1));
        store(2, _mm_unpacklo_epi64(t2, t3)), store(3, _mm_unpackhi_epi64(t2, t3));
    }
}
#endif

// Rows 2m and 2m + 1 of a panel of k rows (`panel` at row 2m) interleaved in place, as
// PackedWeights states for BF16: b(2m, l) to 2l, b(2m + 1, l) to 2l + 1.
template <class T>
void interleavePair(T* pair) {
    T both[2 * kPanel];
    for (Eigen::Index l = 0; l < kPanel; ++l) both[2 * l] = pair[l], both[2 * l + 1] = pair[kPanel + l];
    std::copy_n(both, 2 * kPanel, pair);
}

// packWeights for elements of T (the bits of a float, a half or a bfloat16), copied as they are;
// pairRows: each panel's rows interleaved in pairs (interleavePair), as BF16's are.
template <class T>
void packPanels(const std::byte* src, Eigen::Index k, Eigen::Index n, bool transposed, bool pairRows, T* panels) {
    const Eigen::Index count = (n + kPanel - 1) / kPanel;
    const auto at = [src](Eigen::Index i) {
        T v;
        std::memcpy(&v, src + i * static_cast<Eigen::Index>(sizeof(T)), sizeof(T));
        return v;
    };
    if (!transposed) {
        // Row by row, so that b (megabytes in a mapped file) is read in order: 16 contiguous
        // elements of row j to each panel.
        // A pair of rows at a time, so that a pair is interleaved while it is in L1.
#pragma omp parallel for schedule(static) if (k * count >= (1 << 14))
        for (Eigen::Index j0 = 0; j0 < k; j0 += 2)
            for (Eigen::Index p = 0; p < count; ++p) {
                const Eigen::Index width = std::min(kPanel, n - p * kPanel);
                for (Eigen::Index j = j0; j < std::min(k, j0 + 2); ++j) {
                    T* to = panels + (p * k + j) * kPanel;
                    std::memcpy(to, src + (j * n + p * kPanel) * static_cast<Eigen::Index>(sizeof(T)),
                                sizeof(T) * static_cast<std::size_t>(width));
                    std::fill(to + width, to + kPanel, T{0});
                }
                if (pairRows && j0 + 1 < k) interleavePair(panels + (p * k + j0) * kPanel);
            }
        return;
    }
    // src [n, k]: panel p is rows 16p … 16p + 15 of src side by side. A full panel is transposed
    // in blocks of 16 bytes of each of its rows (16 runs of src read in order, whole panel rows
    // written); the last columns and a last panel of fewer rows, in blocks of 64 columns (2-4 KiB
    // of panel) read and written within L1.
    constexpr Eigen::Index kBlock = 64;
    constexpr Eigen::Index kStep = 16 / static_cast<Eigen::Index>(sizeof(T));  // columns per transposed block
    const Eigen::Index rowBytes = k * static_cast<Eigen::Index>(sizeof(T));
#pragma omp parallel for schedule(static) if (k * count >= (1 << 14))
    for (Eigen::Index p = 0; p < count; ++p) {
        T* panel = panels + p * k * kPanel;
        const Eigen::Index width = std::min(kPanel, n - p * kPanel);
        Eigen::Index first = 0;  // the first column not yet packed
#ifdef __SSE2__
        if (width == kPanel)
            for (; first + kStep <= k; first += kStep)
                for (Eigen::Index l = 0; l < kPanel; l += kStep)
                    transposeBlock(src + (p * kPanel + l) * rowBytes + first * static_cast<Eigen::Index>(sizeof(T)), rowBytes,
                                   panel + first * kPanel + l);
#endif
        for (Eigen::Index j0 = first; j0 < k; j0 += kBlock) {
            const Eigen::Index j1 = std::min(k, j0 + kBlock);
            for (Eigen::Index l = 0; l < kPanel; ++l) {
                if (l >= width) {
                    for (Eigen::Index j = j0; j < j1; ++j) panel[j * kPanel + l] = T{0};
                    continue;
                }
                const Eigen::Index row = (p * kPanel + l) * k;
                for (Eigen::Index j = j0; j < j1; ++j) panel[j * kPanel + l] = at(row + j);
            }
        }
        if (pairRows)
            for (Eigen::Index j = 0; j + 1 < k; j += 2) interleavePair(panel + j * kPanel);
    }
}

}  // namespace

void packWeights(const void* src, WeightType type, Eigen::Index k, Eigen::Index n, bool transposed, PackedWeights& out) {
    const auto* bytes = static_cast<const std::byte*>(src);
    const Eigen::Index count = (n + kPanel - 1) / kPanel;
    out.rows = k;
    out.cols = n;
    out.type = type;
    out.panels.resize(static_cast<std::size_t>(count * k * kPanel) * weightTypeBytes(type));
    if (type == WeightType::F32) packPanels(bytes, k, n, transposed, false, reinterpret_cast<std::uint32_t*>(out.panels.data()));
    else packPanels(bytes, k, n, transposed, type == WeightType::BF16, reinterpret_cast<std::uint16_t*>(out.panels.data()));
}

Eigen::Index packedWeightIndex(const PackedWeights& pw, Eigen::Index c, Eigen::Index j) {
    const Eigen::Index p = j / kPanel, l = j % kPanel, panel = p * pw.rows * kPanel;
    if (pw.type == WeightType::BF16 && (c | 1) < pw.rows) return panel + (c & ~Eigen::Index{1}) * kPanel + 2 * l + (c & 1);
    return panel + c * kPanel + l;
}

void widenRow(const void* src, WeightType type, Eigen::Index n, Eigen::Index r, float* out) {
    const std::byte* row = static_cast<const std::byte*>(src) + static_cast<std::size_t>(r * n) * weightTypeBytes(type);
    for (Eigen::Index i = 0; i < n; ++i) out[i] = widenAt(row, type, i);
}

#ifdef ATTNVIZ_KERNELS_AVX2
namespace {

PanelElement panelElement(WeightType type) {
    switch (type) {
        case WeightType::F16: return PanelElement::F16;
        case WeightType::BF16: return PanelElement::BF16;
        case WeightType::F32: break;
    }
    return PanelElement::F32;
}

// R rows (six, or fewer for a short tile) × 16 columns of sums in 2 R AVX2 registers: every index
// into c is a constant once the loops over the rows are unrolled, so the compiler keeps the array
// in registers.
template <int R>
struct SumsOf {
    __m256 c[R][2];

    SumsOf() {
        for (auto& row : c) row[0] = row[1] = _mm256_setzero_ps();
    }
    // Rows `ld` floats apart.
    void load(const float* out, Eigen::Index ld) {
#pragma GCC unroll 6
        for (int r = 0; r < R; ++r) c[r][0] = _mm256_loadu_ps(out + r * ld), c[r][1] = _mm256_loadu_ps(out + r * ld + 8);
    }
    void store(float* out, Eigen::Index ld) const {
#pragma GCC unroll 6
        for (int r = 0; r < R; ++r) _mm256_storeu_ps(out + r * ld, c[r][0]), _mm256_storeu_ps(out + r * ld + 8, c[r][1]);
    }
    // Row r += x · (b0, b1), one fused multiply-add per register.
    void add(int r, __m256 x, __m256 b0, __m256 b1) {
        c[r][0] = _mm256_fmadd_ps(x, b0, c[r][0]);
        c[r][1] = _mm256_fmadd_ps(x, b1, c[r][1]);
    }
};
using Sums6x16 = SumsOf<static_cast<int>(kTileRows)>;

// What a panel of `E` holds: floats, or the 16 bits of a half or a bfloat16.
template <PanelElement E>
using ElementOf = std::conditional_t<E == PanelElement::F32, float, std::uint16_t>;

// 16 consecutive elements widened to floats, columns 0-7 in b0 and 8-15 in b1: a half exactly by
// F16C's vcvtph2ps (a signalling NaN comes back quiet), a bfloat16 by placing its bits in a
// float's upper half: one load, its quarters reordered (vpermq) and zeros interleaved below each
// element (vpunpck[lh]wd): shuffles only, which leave the multiply-adds' ports to them.
template <PanelElement E>
[[gnu::always_inline]] inline void load16(const ElementOf<E>* p, __m256& b0, __m256& b1) {
    if constexpr (E == PanelElement::F32) {
        b0 = _mm256_loadu_ps(p), b1 = _mm256_loadu_ps(p + 8);
    } else if constexpr (E == PanelElement::F16) {
        b0 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
        b1 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8)));
    } else {
        const __m256i v = _mm256_permute4x64_epi64(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)), _MM_SHUFFLE(3, 1, 2, 0));
        b0 = _mm256_castsi256_ps(_mm256_unpacklo_epi16(_mm256_setzero_si256(), v));
        b1 = _mm256_castsi256_ps(_mm256_unpackhi_epi16(_mm256_setzero_si256(), v));
    }
}

// Rows 2m and 2m + 1 of a BF16 panel (`pair` at row 2m, PackedWeights' interleaved pairs) widened
// to floats: Half 0 row 2m, Half 1 row 2m + 1, columns 0-7 in b0 and 8-15 in b1. Each 32-bit lane
// holds b(2m, l) in its lower half and b(2m + 1, l) in its upper: a shift left by 16 makes the
// first a float, a mask of the upper half the second, one instruction for eight floats.
template <int Half>
[[gnu::always_inline]] inline void loadPairRow(const std::uint16_t* pair, __m256& b0, __m256& b1) {
    const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pair));
    const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pair + kPanel));
    if constexpr (Half == 0) {
        b0 = _mm256_castsi256_ps(_mm256_slli_epi32(lo, 16)), b1 = _mm256_castsi256_ps(_mm256_slli_epi32(hi, 16));
    } else {
        const __m256i upper = _mm256_set1_epi32(static_cast<int>(0xFFFF0000U));
        b0 = _mm256_castsi256_ps(_mm256_and_si256(lo, upper)), b1 = _mm256_castsi256_ps(_mm256_and_si256(hi, upper));
    }
}

// sums[p] row r += q[r] · (b0[p], b1[p]) for the R rows: one step of tileOf.
template <int R, int P>
[[gnu::always_inline]] inline void stepOf(SumsOf<R> (&sums)[P], const __m256 (&b0)[P], const __m256 (&b1)[P], const float* q) {
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
        const __m256 x = _mm256_broadcast_ss(q + r);
#pragma GCC unroll 4
        for (int p = 0; p < P; ++p) sums[p].add(r, x, b0[p], b1[p]);
    }
}

// out[0..R)[0..16 P) = q[0..R) · P panelsᵀ (`stride` elements apart), out rows `ldo` floats apart
// (R = 6, or fewer for a short tile). qp: the six query rows interleaved, [d_k][6]; a panel:
// [d_k][16]. Reading q through one pointer keeps the loop's addresses in registers (six row
// pointers did not fit beside the accumulators, and the compiler spilled the loop counter to the
// stack). A short tile of one or two rows takes 4 or 2 panels at a time: its 2 R chains of
// multiply-adds alone would wait on each other's latency.
template <int R, int P, PanelElement E>
[[gnu::always_inline]] inline void tileOf(const float* qp, const ElementOf<E>* panel, Eigen::Index stride, Eigen::Index dk, float* out,
                                          Eigen::Index ldo, bool accumulate) {
    SumsOf<R> sums[P];
    if (accumulate)
#pragma GCC unroll 4
        for (int p = 0; p < P; ++p) sums[p].load(out + p * kPanel, ldo);
    Eigen::Index d = 0;
    if constexpr (E == PanelElement::BF16)  // rows in pairs, the steps in order
        for (; d + 2 <= dk; d += 2, qp += 2 * kTileRows, panel += 2 * kPanel) {
            __m256 b0[P], b1[P];
#pragma GCC unroll 4
            for (int p = 0; p < P; ++p) loadPairRow<0>(panel + p * stride, b0[p], b1[p]);
            stepOf<R, P>(sums, b0, b1, qp);
            // The second row's reads wait for the first row's multiply-adds (as in the AVX-512
            // build: left free, the compiler widens both rows at once and spills sums).
            const ElementOf<E>* second = panel;
#pragma GCC unroll 4
            for (int p = 0; p < P; ++p)
#pragma GCC unroll 6
                for (int r = 0; r < R; ++r) __asm__("" : "+x"(sums[p].c[r][0]), "+x"(sums[p].c[r][1]), "+r"(second));
#pragma GCC unroll 4
            for (int p = 0; p < P; ++p) loadPairRow<1>(second + p * stride, b0[p], b1[p]);
            stepOf<R, P>(sums, b0, b1, qp + kTileRows);
        }
    for (; d < dk; ++d, qp += kTileRows, panel += kPanel) {  // a BF16 panel's last odd row is as it is
        __m256 b0[P], b1[P];
#pragma GCC unroll 4
        for (int p = 0; p < P; ++p) load16<E>(panel + p * stride, b0[p], b1[p]);
        stepOf<R, P>(sums, b0, b1, qp);
    }
#pragma GCC unroll 4
    for (int p = 0; p < P; ++p) sums[p].store(out + p * kPanel, ldo);
}

template <int R, PanelElement E>
[[gnu::always_inline]] inline void tile6(const float* qp, const ElementOf<E>* panel, Eigen::Index dk, float* out, Eigen::Index ldo,
                                         bool accumulate) {
    tileOf<R, 1, E>(qp, panel, 0, dk, out, ldo, accumulate);
}

// One query row against one panel (the rows left over after the 6-row tiles).
template <PanelElement E>
void tile1(const float* q, const ElementOf<E>* panel, Eigen::Index dk, float* out) {
    __m256 c0 = _mm256_setzero_ps(), c1 = c0;
    Eigen::Index d = 0;
    if constexpr (E == PanelElement::BF16)  // rows in pairs
        for (; d + 2 <= dk; d += 2) {
            __m256 b0, b1;
            loadPairRow<0>(panel + d * kPanel, b0, b1);
            const __m256 a0 = _mm256_broadcast_ss(q + d);
            c0 = _mm256_fmadd_ps(a0, b0, c0);
            c1 = _mm256_fmadd_ps(a0, b1, c1);
            loadPairRow<1>(panel + d * kPanel, b0, b1);
            const __m256 a1 = _mm256_broadcast_ss(q + d + 1);
            c0 = _mm256_fmadd_ps(a1, b0, c0);
            c1 = _mm256_fmadd_ps(a1, b1, c1);
        }
    for (; d < dk; ++d) {
        const __m256 a = _mm256_broadcast_ss(q + d);
        __m256 b0, b1;
        load16<E>(panel + d * kPanel, b0, b1);
        c0 = _mm256_fmadd_ps(a, b0, c0);
        c1 = _mm256_fmadd_ps(a, b1, c1);
    }
    _mm256_storeu_ps(out, c0), _mm256_storeu_ps(out + 8, c1);
}

// out[0..6)[0..16) (+)= w[0..6)[0..keys) · panel[0..keys); w rows `ldw` floats apart, out rows
// `ldo`; panel: [keys][16]. `accumulate` continues sums left in out by an earlier chunk of keys,
// so chunking the keys leaves every output's chain of multiply-adds unchanged. The six rows are
// read through two pointers (rows 0-2 and 3-5) at offsets 0, ldw and 2 ldw, which x86 addresses
// directly.
void valueTile6(const float* w, Eigen::Index ldw, const float* panel, Eigen::Index keys, float* out, Eigen::Index ldo, bool accumulate) {
    Sums6x16 sums;
    if (accumulate) sums.load(out, ldo);
    const float* a = w;
    const float* b = w + 3 * ldw;
    for (Eigen::Index j = 0; j < keys; ++j, ++a, ++b, panel += kPanel) {
        const __m256 v0 = _mm256_loadu_ps(panel), v1 = _mm256_loadu_ps(panel + 8);
#pragma GCC unroll 6
        for (int r = 0; r < kTileRows; ++r) sums.add(r, _mm256_broadcast_ss(r < 3 ? a + r * ldw : b + (r - 3) * ldw), v0, v1);
    }
    sums.store(out, ldo);
}

// One row of weights against one panel (the rows left over after the 6-row tiles).
void valueTile1(const float* w, const float* panel, Eigen::Index keys, float* out, bool accumulate) {
    __m256 c0 = accumulate ? _mm256_loadu_ps(out) : _mm256_setzero_ps();
    __m256 c1 = accumulate ? _mm256_loadu_ps(out + 8) : _mm256_setzero_ps();
    for (Eigen::Index j = 0; j < keys; ++j, panel += kPanel) {
        const __m256 x = _mm256_broadcast_ss(w + j);
        c0 = _mm256_fmadd_ps(x, _mm256_loadu_ps(panel), c0);
        c1 = _mm256_fmadd_ps(x, _mm256_loadu_ps(panel + 8), c1);
    }
    _mm256_storeu_ps(out, c0), _mm256_storeu_ps(out + 8, c1);
}

// A short tile's strip (interleaved): its first R rows, one panel at a time.
template <int R, PanelElement E>
void avx2ShortStrip(const StripArgs& g) {
    const auto* panels = static_cast<const ElementOf<E>*>(g.panels);
    constexpr int kAtOnce = R == 1 ? 4 : R == 2 ? 2 : 1;  // panels one tileOf call takes
    KernelIndex p = 0;
    for (; p + kAtOnce <= g.panelCount; p += kAtOnce)
        tileOf<R, kAtOnce, E>(g.a, panels + p * g.panelStride, g.panelStride, g.steps, g.out + p * kPanel, g.ldo, g.accumulate);
    for (; p < g.panelCount; ++p) tile6<R, E>(g.a, panels + p * g.panelStride, g.steps, g.out + p * kPanel, g.ldo, g.accumulate);
}

// The AVX2 build of a strip (kernel_strips.hpp): one 6 × 16 tile at a time.
template <PanelElement E>
void avx2StripOf(const StripArgs& g) {
    switch (g.rows) {
        case 1: return avx2ShortStrip<1, E>(g);
        case 2: return avx2ShortStrip<2, E>(g);
        case 3: return avx2ShortStrip<3, E>(g);
        case 4: return avx2ShortStrip<4, E>(g);
        case 5: return avx2ShortStrip<5, E>(g);
        default: break;
    }
    const auto* panels = static_cast<const ElementOf<E>*>(g.panels);
    for (KernelIndex p = 0; p < g.panelCount; ++p) {
        const ElementOf<E>* panel = panels + p * g.panelStride;
        float* out = g.out + p * kPanel;
        if constexpr (E == PanelElement::F32) {
            if (g.lda != 0) {
                valueTile6(g.a, g.lda, panel, g.steps, out, g.ldo, g.accumulate);
                continue;
            }
        }
        tile6<static_cast<int>(kTileRows), E>(g.a, panel, g.steps, out, g.ldo, g.accumulate);
    }
}

void avx2Strip(const StripArgs& g) {
    if (g.a2 != nullptr) {  // two tiles of six rows: one after the other (6 × 16 is AVX2's tile)
        StripArgs first = g, second = g;
        first.a2 = second.a2 = nullptr;
        second.a = g.a2;
        second.out = g.out2;
        avx2Strip(first);
        avx2Strip(second);
        return;
    }
    switch (g.element) {
        case PanelElement::F16: return avx2StripOf<PanelElement::F16>(g);
        case PanelElement::BF16: return avx2StripOf<PanelElement::BF16>(g);
        case PanelElement::F32: return avx2StripOf<PanelElement::F32>(g);
    }
}

// The 16 lanes' sum (c0: lanes 0-7, c1: 8-15) in the order kernels.hpp states: halves, then
// quarters, then pairs, as the AVX-512 build adds them.
float sumLanes(__m256 c0, __m256 c1) {
    float lanes[kPanel];
    _mm256_storeu_ps(lanes, c0), _mm256_storeu_ps(lanes + 8, c1);
    for (Eigen::Index half = kPanel / 2; half >= 1; half /= 2)
        for (Eigen::Index l = 0; l < half; ++l) lanes[l] += lanes[l + half];
    return lanes[0];
}

// Rows [0, R) of src · x (R independent chains in flight); the last cols mod 16 columns are
// loaded padded with zeros (0 · 0 added to a lane changes no sum). Prefetches the R rows at
// `ahead` as it goes (see the AVX-512 build).
template <int R, PanelElement E>
void rowsOf(const std::byte* src, Eigen::Index cols, const float* x, float* out, const std::byte* ahead) {
    using T = ElementOf<E>;
    __m256 c[R][2];
    for (auto& row : c) row[0] = row[1] = _mm256_setzero_ps();
    const auto rowAt = [&](int r, Eigen::Index j) {
        return reinterpret_cast<const T*>(src + (r * cols + j) * static_cast<Eigen::Index>(sizeof(T)));
    };
    const Eigen::Index whole = cols / kPanel * kPanel;
    for (Eigen::Index j = 0; j < whole; j += kPanel) {
        const __m256 x0 = _mm256_loadu_ps(x + j), x1 = _mm256_loadu_ps(x + j + 8);
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) {
            __m256 b0, b1;
            load16<E>(rowAt(r, j), b0, b1);
            c[r][0] = _mm256_fmadd_ps(b0, x0, c[r][0]);
            c[r][1] = _mm256_fmadd_ps(b1, x1, c[r][1]);
            _mm_prefetch(reinterpret_cast<const char*>(ahead + (r * cols + j) * static_cast<Eigen::Index>(sizeof(T))), _MM_HINT_T0);
        }
    }
    if (whole < cols) {
        const auto left = static_cast<std::size_t>(cols - whole);
        alignas(32) float xt[kPanel] = {};
        std::memcpy(xt, x + whole, left * sizeof(float));
        const __m256 x0 = _mm256_load_ps(xt), x1 = _mm256_load_ps(xt + 8);
        for (int r = 0; r < R; ++r) {
            alignas(32) T wt[kPanel] = {};
            std::memcpy(wt, rowAt(r, whole), left * sizeof(T));
            __m256 b0, b1;
            load16<E>(wt, b0, b1);
            c[r][0] = _mm256_fmadd_ps(b0, x0, c[r][0]);
            c[r][1] = _mm256_fmadd_ps(b1, x1, c[r][1]);
        }
    }
    for (int r = 0; r < R; ++r) out[r] = sumLanes(c[r][0], c[r][1]);
}

// The AVX2 build of multiplyRowsByVector over rows [0, rows) of src.
template <PanelElement E>
void avx2RowsByVectorOf(const void* src, Eigen::Index rows, Eigen::Index cols, const float* x, float* out) {
    const auto* s = static_cast<const std::byte*>(src);
    const Eigen::Index rowBytes = cols * static_cast<Eigen::Index>(sizeof(ElementOf<E>));
    Eigen::Index i = 0;
    for (; i + 4 <= rows; i += 4) rowsOf<4, E>(s + i * rowBytes, cols, x, out + i, s + (i + 8 <= rows ? i + 4 : i) * rowBytes);
    for (; i < rows; ++i) rowsOf<1, E>(s + i * rowBytes, cols, x, out + i, s + i * rowBytes);
}

// Whether this build has the AVX-512 strips and this CPU (and its OS) can run them.
bool cpuHasAvx512() {
#ifdef ATTNVIZ_KERNELS_AVX512
    __builtin_cpu_init();  // may run before libgcc's own constructor has filled in the features
    return __builtin_cpu_supports("avx512f");
#else
    return false;
#endif
}

std::atomic<KernelIsa>& isaInUse() {
    static std::atomic<KernelIsa> isa{cpuHasAvx512() ? KernelIsa::Avx512 : KernelIsa::Avx2};
    return isa;
}

// The columns of the register tile of the instruction set in use (kernel_strips.hpp).
Eigen::Index tileColumns() { return isaInUse().load(std::memory_order_relaxed) == KernelIsa::Avx512 ? 4 * kPanel : kPanel; }

void strip(const StripArgs& args) {
#ifdef ATTNVIZ_KERNELS_AVX512
    if (isaInUse().load(std::memory_order_relaxed) == KernelIsa::Avx512) return avx512::strip(args);
#endif
    avx2Strip(args);
}

void rowsByVector(const void* src, PanelElement element, Eigen::Index rows, Eigen::Index cols, const float* x, float* out) {
#ifdef ATTNVIZ_KERNELS_AVX512
    if (isaInUse().load(std::memory_order_relaxed) == KernelIsa::Avx512) return avx512::rowsByVector(src, element, rows, cols, x, out);
#endif
    switch (element) {
        case PanelElement::F16: return avx2RowsByVectorOf<PanelElement::F16>(src, rows, cols, x, out);
        case PanelElement::BF16: return avx2RowsByVectorOf<PanelElement::BF16>(src, rows, cols, x, out);
        case PanelElement::F32: return avx2RowsByVectorOf<PanelElement::F32>(src, rows, cols, x, out);
    }
}

}  // namespace

KernelIsa kernelIsa() { return isaInUse().load(); }

bool hasKernelIsa(KernelIsa isa) { return isa == KernelIsa::Avx2 || (isa == KernelIsa::Avx512 && cpuHasAvx512()); }

KernelIsa useKernelIsa(KernelIsa isa) {
    if (!hasKernelIsa(isa)) isa = KernelIsa::Avx2;
    isaInUse().store(isa);
    return isa;
}

void packKeys(const MatRef& k, PackedKeys& out) {
    const Eigen::Index panels = k.rows() / kPanel, dk = k.cols();
    out.panels.resize(static_cast<std::size_t>(panels * dk * kPanel));
    for (Eigen::Index p = 0; p < panels; ++p)
        for (Eigen::Index d = 0; d < dk; ++d)
            for (Eigen::Index l = 0; l < kPanel; ++l)
                out.panels[static_cast<std::size_t>((p * dk + d) * kPanel + l)] = k(p * kPanel + l, d);
}

namespace {

// The full 6-row tiles of rows [r0, r1) of a [rows, d], each [d][6], one after another.
void packTiles(const MatRef& a, Eigen::Index r0, Eigen::Index r1, float* tiles) {
    const Eigen::Index d = a.cols();
    for (Eigen::Index i = r0; i + kTileRows <= r1; i += kTileRows, tiles += d * kTileRows)
        for (Eigen::Index c = 0; c < d; ++c)
            for (Eigen::Index l = 0; l < kTileRows; ++l) tiles[c * kTileRows + l] = a(i + l, c);
}

// A product's right operand b [d, n] as the strips read it: `count` panels of [d][16] elements
// of `element`, either ⌊n/16⌋ (packColumns: the last n mod 16 columns are read from b) or ⌈n/16⌉
// (packWeights: the last panel padded with zero columns).
struct Panels {
    const void* data;
    PanelElement element;
    Eigen::Index count;

    // The panels' element at `offset` elements from the first.
    const void* at(Eigen::Index offset) const {
        return static_cast<const std::byte*>(data) + offset * (element == PanelElement::F32 ? 4 : 2);
    }
};

// packTiles of rows [r0, r1) of a, into this thread's scratch (for a that was not packed once).
const float* packedScratch(const MatRef& a, Eigen::Index r0, Eigen::Index r1) {
    thread_local std::vector<float> scratch;
    scratch.resize(static_cast<std::size_t>((r1 - r0) * a.cols()));
    packTiles(a, r0, r1, scratch.data());
    return scratch.data();
}

// Fewer than six rows of a [rows, d], [begin, begin + count): a short tile, packed as a tile of six
// padded with zero rows, and its sums across the packed panels, `width` floats a row.
struct ShortTile {
    Eigen::Index begin = 0, count = 0;
    std::vector<float> tile, out;

    void pack(const MatRef& a, Eigen::Index width) {
        const Eigen::Index d = a.cols();
        tile.assign(static_cast<std::size_t>(d * kTileRows), 0.0f);
        for (Eigen::Index c = 0; c < d; ++c)
            for (Eigen::Index l = 0; l < count; ++l) tile[static_cast<std::size_t>(c * kTileRows + l)] = a(begin + l, c);
        out.resize(static_cast<std::size_t>(count * width));
    }
};

// Rows [r0, r1) of out [rows, n] = a [rows, d] · b [d, n], where `panels` holds b's columns, b(c, j)
// reads any element of b (the last n mod 16 columns when they are not packed), and pa, when not
// null, packRows(a).
// The full tiles are the tiles of six rows that start at multiples of kTileRows within [r0, r1)
// (pa's tiles, else packed here); the rows before the first and after the last are short tiles,
// each computed for its own rows alone, so that the cores' shares may be split by rows.
// Blocked as a GEMM is (blocking.hpp): kernelBlocking()'s depth steps of d, then its columns, then the tiles of rows; a
// later block of depth continues the sums the earlier one left in out, so each element is still
// one chain of fused multiply-adds over d in order. A short tile is summed into its scratch and
// copied out; so is a padded last panel (its zero columns add nothing to the columns before them,
// which out may not have room for).
template <class ElementOfB>
void productRange(const MatRef& a, const PackedRows* pa, const Panels& panels, Eigen::Index n, const ElementOfB& b, Eigen::Ref<Mat>& out,
                  Eigen::Index r0, Eigen::Index r1) {
    const Eigen::Index d = a.cols(), whole = n / kPanel, ldo = out.outerStride();
    const bool padded = panels.count > whole;
    const Eigen::Index fullBegin = std::min(r1, (r0 + kTileRows - 1) / kTileRows * kTileRows);
    const Eigen::Index fullEnd = std::max(fullBegin, r1 / kTileRows * kTileRows), width = panels.count * kPanel;
    const Eigen::Index covered = padded ? n : whole * kPanel;  // columns the strips compute
    const float* tiles = fullBegin == fullEnd ? nullptr : pa ? pa->tiles.data() + fullBegin * d : packedScratch(a, fullBegin, fullEnd);
    thread_local ShortTile before, after;
    thread_local std::vector<float> paddedOut;
    before.begin = r0, before.count = fullBegin - r0;
    after.begin = fullEnd, after.count = r1 - fullEnd;
    ShortTile* const shortTiles[2] = {&before, &after};
    if (panels.count > 0)
        for (ShortTile* s : shortTiles)
            if (s->count > 0) s->pack(a, width);
    if (padded) paddedOut.resize(static_cast<std::size_t>((fullEnd - fullBegin) * kPanel));
    // 1. Packed panels.
    const KernelBlocking blocking = kernelBlocking();
    const Eigen::Index blockPanels = std::max<Eigen::Index>(1, blocking.columns / kPanel);
    // even, so that every block of depth starts at a pair of a BF16 panel's rows (PackedWeights)
    Eigen::Index depth = width <= tileColumns() ? blocking.narrowDepth : blocking.depth;
    depth += depth & 1;
    const bool pairRows = blocking.rowTiles == 2;
    // A short tile's strip over `count` panels from `panel`, into its sums from column `column`.
    const auto shortStrip = [&](ShortTile& s, const void* panel, Eigen::Index count, Eigen::Index k0, Eigen::Index steps,
                                Eigen::Index column) {
        StripArgs g{s.tile.data() + k0 * kTileRows, 0,     panel,  d * kPanel,    count, steps,
                    s.out.data() + column,          width, k0 > 0, panels.element};
        g.rows = static_cast<int>(s.count);
        strip(g);
    };
    for (Eigen::Index k0 = 0; k0 < d; k0 += depth) {
        const Eigen::Index steps = std::min(depth, d - k0);
        for (Eigen::Index p0 = 0; p0 < whole; p0 += blockPanels) {
            const Eigen::Index p1 = std::min(whole, p0 + blockPanels);
            const void* block = panels.at(p0 * d * kPanel + k0 * kPanel);
            for (Eigen::Index i = fullBegin; i < fullEnd; i += pairRows ? 2 * kTileRows : kTileRows) {
                StripArgs g{tiles + (i - fullBegin) * d + k0 * kTileRows, 0,   block,  d * kPanel,    p1 - p0, steps,
                            out.data() + i * ldo + p0 * kPanel,           ldo, k0 > 0, panels.element};
                if (pairRows && i + kTileRows < fullEnd) g.a2 = g.a + kTileRows * d, g.out2 = g.out + kTileRows * ldo;
                strip(g);
            }
            for (ShortTile* s : shortTiles)
                if (s->count > 0) shortStrip(*s, block, p1 - p0, k0, steps, p0 * kPanel);
        }
        if (padded) {
            const void* last = panels.at(whole * d * kPanel + k0 * kPanel);
            for (Eigen::Index i = fullBegin; i < fullEnd; i += kTileRows)
                strip({tiles + (i - fullBegin) * d + k0 * kTileRows, 0, last, d * kPanel, 1, steps,
                       paddedOut.data() + (i - fullBegin) * kPanel, kPanel, k0 > 0, panels.element});
            for (ShortTile* s : shortTiles)
                if (s->count > 0) shortStrip(*s, last, 1, k0, steps, whole * kPanel);
        }
    }
    if (panels.count > 0)
        for (const ShortTile* s : shortTiles)
            for (Eigen::Index l = 0; l < s->count; ++l) std::copy_n(s->out.data() + l * width, covered, out.data() + (s->begin + l) * ldo);
    if (padded)
        for (Eigen::Index i = fullBegin; i < fullEnd; ++i)
            std::copy_n(paddedOut.data() + (i - fullBegin) * kPanel, n - whole * kPanel, out.data() + i * ldo + whole * kPanel);
    // 2. The last n mod 16 columns when they are not packed: the same chain of fused multiply-adds,
    // one element at a time.
    for (Eigen::Index i = r0; i < r1; ++i)
        for (Eigen::Index j = covered; j < n; ++j) {
            float acc = 0.0f;
            for (Eigen::Index c = 0; c < d; ++c) acc = std::fma(a(i, c), b(c, j), acc);
            out(i, j) = acc;
        }
}

// Calls rangeOf(r0, r1) for each core's share of the rows, on every core when `parallel` (inside
// the forward pass's parallel heads this is one share: nested regions run on one thread). The
// shares are whole multiples of `Align` rows but the last, and differ by `Align` rows at most. The
// products split by single rows (Align 1): a share's rows before its first tile of six and after
// its last are short tiles (productRange), so 128 rows on two cores are 64 and 64, not 66 and 62
// with a tile of six computed for the last 2. A·V splits by tiles (Align kTileRows): its rows
// after the last tile go one at a time.
template <Eigen::Index Align, class RangeOf>
void forEachShare(Eigen::Index rows, bool parallel, const RangeOf& rangeOf) {
#pragma omp parallel if (parallel)
    {
        Eigen::Index threads = 1, id = 0;
#ifdef _OPENMP
        threads = omp_get_num_threads();
        id = omp_get_thread_num();
#endif
        const Eigen::Index units = (rows + Align - 1) / Align;
        const Eigen::Index r0 = std::min(rows, units * id / threads * Align), r1 = std::min(rows, units * (id + 1) / threads * Align);
        if (r0 < r1) rangeOf(r0, r1);
    }
}

}  // namespace

void scoreRows(const MatRef& q, const MatRef& k, const PackedKeys& packed, Eigen::Ref<Mat> scores) {
    // scores = q · kᵀ: kᵀ's columns are k's rows, packed by packKeys.
    forEachShare<1>(q.rows(), q.rows() * k.rows() >= (1 << 16), [&](Eigen::Index r0, Eigen::Index r1) {
        productRange(
            q, nullptr, Panels{packed.panels.data(), PanelElement::F32, k.rows() / kPanel}, k.rows(),
            [&](Eigen::Index c, Eigen::Index j) { return k(j, c); }, scores, r0, r1);
    });
}

void packRows(const MatRef& a, PackedRows& out) {
    out.tiles.resize(static_cast<std::size_t>(a.rows() / kTileRows * kTileRows * a.cols()));
    out.rows = a.rows();
    out.cols = a.cols();
    packTiles(a, 0, a.rows(), out.tiles.data());
}

namespace {

// out [rows, n] = a [rows, d] · b [d, n] from b's panels (multiplyPacked, multiplyWeights); b(c, j)
// reads the columns that are not packed.
template <class ElementOfB>
void multiplyPanels(const MatRef& a, const PackedRows* pa, const Panels& panels, Eigen::Index n, const ElementOfB& b,
                    Eigen::Ref<Mat>& out) {
    if (pa && !packs(*pa, a)) pa = nullptr;
    // Fewer rows than a tile (a token appended to a kept pass) against a wide b: the work is
    // reading b's panels once, so the cores share the panels rather than the rows (one share of
    // rows would leave every other core idle). Each element is the same chain as below.
    const Eigen::Index d = a.cols(), whole = n / kPanel;
    if (a.rows() < kTileRows && panels.count >= 2 && a.rows() * d * n >= (1 << 18)) {
        const Eigen::Index lda = a.outerStride(), ldo = out.outerStride();
#pragma omp parallel
        {
            Eigen::Index threads = 1, id = 0;
#ifdef _OPENMP
            threads = omp_get_num_threads();
            id = omp_get_thread_num();
#endif
            const Eigen::Index share = panels.count / threads, extra = panels.count % threads;
            const Eigen::Index p0 = id * share + std::min(id, extra), p1 = p0 + share + (id < extra ? 1 : 0);
            for (Eigen::Index i = 0; i < a.rows(); ++i)
                for (Eigen::Index p = p0; p < p1; ++p) {
                    float padded[kPanel];  // the padded last panel: only its first n mod 16 columns go to out
                    float* o = p < whole ? out.data() + i * ldo + p * kPanel : padded;
                    const float* row = a.data() + i * lda;
                    const void* panel = panels.at(p * d * kPanel);
                    switch (panels.element) {
                        case PanelElement::F16: tile1<PanelElement::F16>(row, static_cast<const std::uint16_t*>(panel), d, o); break;
                        case PanelElement::BF16: tile1<PanelElement::BF16>(row, static_cast<const std::uint16_t*>(panel), d, o); break;
                        case PanelElement::F32: tile1<PanelElement::F32>(row, static_cast<const float*>(panel), d, o); break;
                    }
                    if (p >= whole) std::copy_n(padded, n - whole * kPanel, out.data() + i * ldo + whole * kPanel);
                }
        }
        if (panels.count == whole)
            for (Eigen::Index i = 0; i < a.rows(); ++i)  // the last n mod 16 columns, as productRange does
                for (Eigen::Index j = whole * kPanel; j < n; ++j) {
                    float acc = 0.0f;
                    for (Eigen::Index c = 0; c < d; ++c) acc = std::fma(a(i, c), b(c, j), acc);
                    out(i, j) = acc;
                }
        return;
    }
    forEachShare<1>(a.rows(), a.rows() * n >= (1 << 16),
                    [&](Eigen::Index r0, Eigen::Index r1) { productRange(a, pa, panels, n, b, out, r0, r1); });
}

}  // namespace

void multiplyPacked(const MatRef& a, const PackedRows* pa, const MatRef& b, const PackedColumns& pb, Eigen::Ref<Mat> out) {
    multiplyPanels(
        a, pa, Panels{pb.panels.data(), PanelElement::F32, b.cols() / kPanel}, b.cols(),
        [&](Eigen::Index c, Eigen::Index j) { return b(c, j); }, out);
}

void multiplyPackedRows(const MatRef& a, const PackedRows* pa, const MatRef& b, const PackedColumns& pb, Eigen::Ref<Mat> out,
                        Eigen::Index r0, Eigen::Index r1) {
    eigen_assert(0 <= r0 && r0 <= r1 && r1 <= a.rows() && out.rows() == a.rows() && out.cols() == b.cols());
    if (pa && !packs(*pa, a)) pa = nullptr;
    if (r0 < r1)
        productRange(
            a, pa, Panels{pb.panels.data(), PanelElement::F32, b.cols() / kPanel}, b.cols(),
            [&](Eigen::Index c, Eigen::Index j) { return b(c, j); }, out, r0, r1);
}

void multiplyWeights(const MatRef& a, const PackedRows* pa, const PackedWeights& pb, Eigen::Ref<Mat> out) {
    eigen_assert(a.cols() == pb.rows && out.rows() == a.rows() && out.cols() == pb.cols);
    if (pb.rows == 0) {
        out.setZero();
        return;
    }
    const Panels panels{pb.panels.data(), panelElement(pb.type), (pb.cols + kPanel - 1) / kPanel};
    multiplyPanels(
        a, pa, panels, pb.cols, [](Eigen::Index, Eigen::Index) { return 0.0f; }, out);
}

void multiplyRowsByVector(const void* src, WeightType type, Eigen::Index rows, Eigen::Index cols, const float* x, float* out) {
    // Blocks of 64 rows (a multiple of the kernels' four at a time): each output is its row's own
    // sum, so how the blocks fall to the cores changes no bit.
    constexpr Eigen::Index kRowBlock = 64;
    const Eigen::Index blocks = (rows + kRowBlock - 1) / kRowBlock;
    const std::size_t rowBytes = static_cast<std::size_t>(cols) * weightTypeBytes(type);
    const PanelElement element = panelElement(type);
#pragma omp parallel for schedule(static) if (rows * cols >= (1 << 16))
    for (Eigen::Index blk = 0; blk < blocks; ++blk) {
        const Eigen::Index i0 = blk * kRowBlock, count = std::min(kRowBlock, rows - i0);
        rowsByVector(static_cast<const std::byte*>(src) + static_cast<std::size_t>(i0) * rowBytes, element, count, cols, x, out + i0);
    }
}

void packColumns(const MatRef& v, PackedColumns& out) {
    const Eigen::Index panels = v.cols() / kPanel, tk = v.rows();
    out.rows = v.rows();
    out.cols = v.cols();
    out.panels.resize(static_cast<std::size_t>(panels * tk * kPanel));
    // Row by row, so that v (a weight of megabytes in a mapped file) is read in order: 16
    // contiguous floats of row j to each panel. A model's weights on every core.
#pragma omp parallel for schedule(static) if (tk * panels >= (1 << 14))
    for (Eigen::Index j = 0; j < tk; ++j) {
        const float* row = v.row(j).data();
        for (Eigen::Index p = 0; p < panels; ++p)
            std::memcpy(out.panels.data() + (p * tk + j) * kPanel, row + p * kPanel, sizeof(float) * kPanel);
    }
}

namespace {

// Rows [r0, r1) of out = weights · v: tiles of six rows from r0 (the weights read where they
// are), then the rows left over one at a time. causalFrom as in weighValues.
void valueRange(const MatRef& weights, const MatRef& v, const PackedColumns& packed, Eigen::Ref<Mat>& out, Eigen::Index causalFrom,
                Eigen::Index r0, Eigen::Index r1) {
    const Eigen::Index tk = v.rows(), dv = v.cols(), panels = dv / kPanel;
    const Eigen::Index ldw = weights.outerStride(), ldo = out.outerStride();
    const Eigen::Index fullEnd = r0 + (r1 - r0) / kTileRows * kTileRows;
    // The keys rows [i, i + n) read: all, or under a causal mask those up to the last row's query.
    const auto keysOf = [&](Eigen::Index i, Eigen::Index n) { return causalFrom < 0 ? tk : std::min(tk, causalFrom + i + n); };
    // 1. Full panels, a chunk of keys at a time so that its slice of v stays in L1/L2 across
    // the rows; the sums carry over from chunk to chunk in out.
    const Eigen::Index lastKey = std::max<Eigen::Index>(keysOf(r0, r1 - r0), 1);  // one pass even with no keys: zeros
    const KernelBlocking blocking = kernelBlocking();
    const Eigen::Index chunk = dv <= tileColumns() ? blocking.narrowDepth : blocking.keys;
    for (Eigen::Index j0 = 0; j0 < lastKey; j0 += chunk) {
        for (Eigen::Index i = r0; i < r1;) {
            const Eigen::Index n = i < fullEnd ? kTileRows : 1;
            const Eigen::Index keys = std::min(chunk, keysOf(i, n) - j0);
            if (keys > 0 || j0 == 0) {
                const float* panel = packed.panels.data() + j0 * kPanel;
                float* o = out.data() + i * ldo;
                const float* w = weights.data() + i * ldw + j0;
                if (n == kTileRows) strip({w, ldw, panel, tk * kPanel, panels, std::max<Eigen::Index>(keys, 0), o, ldo, j0 > 0});
                else
                    for (Eigen::Index p = 0; p < panels; ++p)
                        valueTile1(w, panel + p * tk * kPanel, std::max<Eigen::Index>(keys, 0), o + p * kPanel, j0 > 0);
            }
            i += n;
        }
    }
    // 2. The last d_v mod 16 columns: the same chain of fused multiply-adds, one output at a time.
    for (Eigen::Index i = r0; i < r1; ++i)
        for (Eigen::Index c = panels * kPanel; c < dv; ++c) {
            float acc = 0.0f;
            for (Eigen::Index j = 0; j < keysOf(i, 1); ++j) acc = std::fma(weights(i, j), v(j, c), acc);
            out(i, c) = acc;
        }
}

}  // namespace

void weighValues(const MatRef& weights, const MatRef& v, const PackedColumns& packed, Eigen::Ref<Mat> out, Eigen::Index causalFrom) {
    forEachShare<kTileRows>(weights.rows(), weights.rows() * v.rows() >= (1 << 16),
                            [&](Eigen::Index r0, Eigen::Index r1) { valueRange(weights, v, packed, out, causalFrom, r0, r1); });
}

void scoreTile(const MatRef& q, const PackedRows* pq, const MatRef& k, const PackedKeys& packed, Eigen::Index j0, Eigen::Ref<Mat> scores) {
    const Eigen::Index n = scores.cols(), d = k.cols();
    // The tile's keys that packKeys packed (k's first ⌊T_k/16⌋ panels), from j0's panel on; past
    // them (the last T_k mod 16 keys), the same chain of fused multiply-adds one score at a time.
    const Eigen::Index packedKeys = std::clamp<Eigen::Index>((k.rows() / kPanel * kPanel - j0) / kPanel * kPanel, 0, n / kPanel * kPanel);
    Eigen::Ref<Mat> left = scores.leftCols(packedKeys);
    productRange(
        q, pq && packs(*pq, q) ? pq : nullptr, Panels{packed.panels.data() + j0 * d, PanelElement::F32, packedKeys / kPanel}, packedKeys,
        [&](Eigen::Index c, Eigen::Index j) { return k(j0 + j, c); }, left, 0, q.rows());
    for (Eigen::Index i = 0; i < q.rows(); ++i)
        for (Eigen::Index j = packedKeys; j < n; ++j) {
            float acc = 0.0f;
            for (Eigen::Index c = 0; c < d; ++c) acc = std::fma(q(i, c), k(j0 + j, c), acc);
            scores(i, j) = acc;
        }
}

void weighValueTile(const MatRef& weights, const MatRef& v, const PackedColumns& packed, Eigen::Index j0, Eigen::Ref<Mat> out,
                    bool accumulate) {
    const Eigen::Index tk = v.rows(), dv = v.cols(), panels = dv / kPanel, keys = weights.cols(), rows = weights.rows();
    const Eigen::Index ldw = weights.outerStride(), ldo = out.outerStride(), fullEnd = rows / kTileRows * kTileRows;
    const float* panel = packed.panels.data() + j0 * kPanel;  // key j0's row of every panel of v's columns
    for (Eigen::Index i = 0; i < rows;) {
        const Eigen::Index n = i < fullEnd ? kTileRows : 1;
        float* o = out.data() + i * ldo;
        const float* w = weights.data() + i * ldw;
        if (n == kTileRows) strip({w, ldw, panel, tk * kPanel, panels, keys, o, ldo, accumulate});
        else
            for (Eigen::Index p = 0; p < panels; ++p) valueTile1(w, panel + p * tk * kPanel, keys, o + p * kPanel, accumulate);
        i += n;
    }
    for (Eigen::Index i = 0; i < rows; ++i)  // the last d_v mod 16 columns
        for (Eigen::Index c = panels * kPanel; c < dv; ++c) {
            float acc = accumulate ? out(i, c) : 0.0f;
            for (Eigen::Index j = 0; j < keys; ++j) acc = std::fma(weights(i, j), v(j0 + j, c), acc);
            out(i, c) = acc;
        }
}

#else  // portable build: Eigen's product

KernelIsa kernelIsa() { return KernelIsa::Portable; }
bool hasKernelIsa(KernelIsa isa) { return isa == KernelIsa::Portable; }
KernelIsa useKernelIsa(KernelIsa) { return KernelIsa::Portable; }

void packKeys(const MatRef&, PackedKeys& out) { out.panels.clear(); }

void scoreRows(const MatRef& q, const MatRef& k, const PackedKeys&, Eigen::Ref<Mat> scores) { scores.noalias() = q * k.transpose(); }

void packColumns(const MatRef& b, PackedColumns& out) {
    out.panels.clear();
    out.rows = b.rows();
    out.cols = b.cols();
}

void packRows(const MatRef& a, PackedRows& out) {
    out.tiles.clear();
    out.rows = a.rows();
    out.cols = a.cols();
}

void multiplyPacked(const MatRef& a, const PackedRows*, const MatRef& b, const PackedColumns&, Eigen::Ref<Mat> out) {
    out.noalias() = a * b;
}

void multiplyPackedRows(const MatRef& a, const PackedRows*, const MatRef& b, const PackedColumns&, Eigen::Ref<Mat> out, Eigen::Index r0,
                        Eigen::Index r1) {
    out.middleRows(r0, r1 - r0).noalias() = a.middleRows(r0, r1 - r0) * b;
}

void weighValues(const MatRef& weights, const MatRef& v, const PackedColumns&, Eigen::Ref<Mat> out, Eigen::Index) {
    out.noalias() = weights * v;
}

void scoreTile(const MatRef& q, const PackedRows*, const MatRef& k, const PackedKeys&, Eigen::Index j0, Eigen::Ref<Mat> scores) {
    scores.noalias() = q * k.middleRows(j0, scores.cols()).transpose();
}

void weighValueTile(const MatRef& weights, const MatRef& v, const PackedColumns&, Eigen::Index j0, Eigen::Ref<Mat> out, bool accumulate) {
    if (accumulate) out.noalias() += weights * v.middleRows(j0, weights.cols());
    else out.noalias() = weights * v.middleRows(j0, weights.cols());
}

void multiplyWeights(const MatRef& a, const PackedRows*, const PackedWeights& pb, Eigen::Ref<Mat> out) {
    // packWeights' panels widened 64 columns at a time into b's block, then Eigen's product.
    const Eigen::Index k = pb.rows, n = pb.cols;
    const auto* panels = pb.panels.data();
    Mat block(k, 4 * kPanel);
    for (Eigen::Index j0 = 0; j0 < n; j0 += block.cols()) {
        const Eigen::Index width = std::min(block.cols(), n - j0);
        for (Eigen::Index c = 0; c < k; ++c)
            for (Eigen::Index j = 0; j < width; ++j) {
                block(c, j) = widenAt(panels, pb.type, packedWeightIndex(pb, c, j0 + j));
            }
        out.middleCols(j0, width).noalias() = a * block.leftCols(width);
    }
}

void multiplyRowsByVector(const void* src, WeightType type, Eigen::Index rows, Eigen::Index cols, const float* x, float* out) {
    // The sum kernels.hpp states, one lane at a time: 16 chains of fused multiply-adds, then the
    // lanes added pairwise.
    const std::byte* bytes = static_cast<const std::byte*>(src);
#pragma omp parallel for schedule(static) if (rows * cols >= (1 << 16))
    for (Eigen::Index i = 0; i < rows; ++i) {
        float lanes[kPanel] = {};
        for (Eigen::Index j = 0; j < cols; ++j) {
            float& lane = lanes[j % kPanel];
            lane = std::fma(widenAt(bytes, type, i * cols + j), x[j], lane);
        }
        for (Eigen::Index half = kPanel / 2; half >= 1; half /= 2)
            for (Eigen::Index l = 0; l < half; ++l) lanes[l] += lanes[l + half];
        out[i] = lanes[0];
    }
}

#endif

namespace {

// useKernelBlocking's blocking; depth 0: none (the derived one).
struct BlockingOverride {
    std::atomic<Eigen::Index> depth{0}, columns{0}, keys{0}, narrowDepth{0};
    std::atomic<int> rowTiles{1};
};
BlockingOverride& blockingOverride() {
    static BlockingOverride set;
    return set;
}

}  // namespace

Eigen::Index scoreBlockRows(Eigen::Index keys, Eigen::Index most) {
    return std::clamp<Eigen::Index>((1 << 17) / std::max<Eigen::Index>(keys, 1) / kTileRows * kTileRows, kTileRows, most);
}

const CpuCaches& kernelCaches() {
    static const CpuCaches caches = detectCaches();
    return caches;
}

KernelBlocking kernelBlocking() {
    const BlockingOverride& set = blockingOverride();
    const KernelBlocking chosen{set.depth.load(std::memory_order_relaxed), set.columns.load(std::memory_order_relaxed),
                                set.keys.load(std::memory_order_relaxed), set.narrowDepth.load(std::memory_order_relaxed),
                                set.rowTiles.load(std::memory_order_relaxed)};
    if (chosen.depth > 0) return chosen;
    // The register tiles: 6 rows × 16 columns (AVX2, and the portable build's nominal one) or 6 × 64.
    static const KernelBlocking narrow = deriveBlocking(kernelCaches(), kTileRows, kPanel),
                                wide = deriveBlocking(kernelCaches(), kTileRows, 4 * kPanel);
    return kernelIsa() == KernelIsa::Avx512 ? wide : narrow;
}

KernelBlocking useKernelBlocking(const KernelBlocking& blocking) {
    const KernelBlocking before = kernelBlocking();
    const bool valid = blocking.depth > 0 && blocking.columns > 0 && blocking.keys > 0 && blocking.narrowDepth > 0;
    BlockingOverride& set = blockingOverride();
    set.columns.store(valid ? blocking.columns : 0);
    set.keys.store(valid ? blocking.keys : 0);
    set.narrowDepth.store(valid ? blocking.narrowDepth : 0);
    set.rowTiles.store(valid && blocking.rowTiles == 2 ? 2 : 1);
    set.depth.store(valid ? blocking.depth : 0);
    return before;
}

const char* kernelIsaName(KernelIsa isa) {
    switch (isa) {
        case KernelIsa::Avx512: return "avx512";
        case KernelIsa::Avx2: return "avx2";
        case KernelIsa::Portable: break;
    }
    return "portable";
}

}  // namespace attnviz::core
