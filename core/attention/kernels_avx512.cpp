// The kernels' strips for AVX-512 (see kernel_strips.hpp): this file alone is compiled with
// -mavx512f, and kernels.cpp calls it only when the CPU has AVX-512.
#include "core/attention/kernel_strips.hpp"

#include <immintrin.h>

#include <cstring>

namespace attnviz::core::avx512 {

namespace {

constexpr KernelIndex kPanel = 16;  // columns per panel: one 16-float register
constexpr int kRows = 6;

// What a panel of `E` holds: floats, or the 16 bits of a half or a bfloat16.
template <PanelElement E>
struct Element {
    using Type = unsigned short;
};
template <>
struct Element<PanelElement::F32> {
    using Type = float;
};

constexpr __mmask16 kAll = 0xFFFF;

// 16 consecutive elements widened to floats: a half exactly by vcvtph2ps (a signalling NaN comes
// back quiet), a bfloat16 by placing its bits in a float's upper half. (The zero-masking forms
// with every lane set compile to the plain instructions; GCC 12's plain ones start from an
// undefined register its own -Wmaybe-uninitialized reports.)
template <PanelElement E>
[[gnu::always_inline]] inline __m512 load16(const typename Element<E>::Type* p) {
    if constexpr (E == PanelElement::F32) {
        return _mm512_loadu_ps(p);
    } else if constexpr (E == PanelElement::F16) {
        return _mm512_maskz_cvtph_ps(kAll, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    } else {
        const __m512i wide = _mm512_maskz_cvtepu16_epi32(kAll, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
        return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(kAll, wide, 16));
    }
}

// out[0..6 T)[0..16 P) (+)= a · P panels, for T tiles of six rows (the second at g.a2, g.out2):
// 6 T × P accumulators, P panel rows and one broadcast in registers (6 × 4 or 12 × 2: 24
// accumulators, 29 or 27 of the 32). Each accumulator is one chain of fused multiply-adds over s.
// R < 6: a short tile, its first R rows alone.
template <int T, int P, bool Interleaved, PanelElement E, int R = kRows>
[[gnu::always_inline]] inline void tile(const StripArgs& g, const typename Element<E>::Type* panel, KernelIndex column) {
    float* out[2] = {g.out + column, T == 2 ? g.out2 + column : nullptr};
    const float* a[2] = {g.a, T == 2 ? g.a2 : nullptr};
    // Rows 3-5 of a row layout: offsets 0, lda, 2 lda again (what an address can scale).
    const float* a3[2] = {g.a + 3 * g.lda, T == 2 ? g.a2 + 3 * g.lda : nullptr};
    __m512 c[T][R][P];
#pragma GCC unroll 2
    for (int t = 0; t < T; ++t)
#pragma GCC unroll 6
        for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
            for (int p = 0; p < P; ++p) c[t][r][p] = g.accumulate ? _mm512_loadu_ps(out[t] + r * g.ldo + p * kPanel) : _mm512_setzero_ps();
    const KernelIndex stride = g.panelStride, lda = g.lda, steps = g.steps;
    KernelIndex s = 0;
    if constexpr (E == PanelElement::BF16) {
        // Rows in pairs (PackedWeights): one 64-byte load a panel holds both rows' 16 elements, a
        // shift left by 16 widens the first, a mask of each lane's upper half the second, one
        // instruction for 16 floats where a row alone needs two (vpmovzxwd, vpslld). The steps
        // stay in order: row s's multiply-adds, then row s + 1's.
        static_assert(Interleaved, "a bfloat16 panel is read with the interleaved layout only");
        const __m512i upper = _mm512_set1_epi32(static_cast<int>(0xFFFF0000U));
        for (; s + 2 <= steps; s += 2, panel += 2 * kPanel)
#pragma GCC unroll 2
            for (int half = 0; half < 2; ++half) {
                // The second row's panel reads wait for the first row's multiply-adds: left free,
                // the compiler widens both rows at once, eight panel registers beside the 24 sums,
                // and spills sums to the stack.
                const typename Element<E>::Type* at = panel;
                if (half == 1)
#pragma GCC unroll 2
                    for (int t = 0; t < T; ++t)
#pragma GCC unroll 6
                        for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
                            for (int p = 0; p < P; ++p) __asm__("" : "+v"(c[t][r][p]), "+r"(at));
                __m512 b[P];
#pragma GCC unroll 4
                for (int p = 0; p < P; ++p) {
                    const __m512i both = _mm512_loadu_si512(at + p * stride);
                    b[p] = _mm512_castsi512_ps(half == 0 ? _mm512_maskz_slli_epi32(kAll, both, 16)
                                                         : _mm512_maskz_and_epi32(kAll, both, upper));
                    __asm__("" : "+v"(b[p]));  // as below
                }
#pragma GCC unroll 2
                for (int t = 0; t < T; ++t)
#pragma GCC unroll 6
                    for (int r = 0; r < R; ++r) {
                        const __m512 xs = _mm512_set1_ps(a[t][(s + half) * kRows + r]);
#pragma GCC unroll 4
                        for (int p = 0; p < P; ++p) c[t][r][p] = _mm512_fmadd_ps(xs, b[p], c[t][r][p]);
                    }
            }
    }
    for (; s < steps; ++s, panel += kPanel) {  // a BF16 panel's last odd row is as it is
        __m512 b[P];
#pragma GCC unroll 4
        for (int p = 0; p < P; ++p) {
            b[p] = load16<E>(panel + p * stride);
            // Kept in a register: with registers to spare (a short tile) the compiler would
            // otherwise load the panel row again inside each row's multiply-add, R loads of 64
            // bytes where one does, and the loads, not the multiply-adds, would set the pace.
            __asm__("" : "+v"(b[p]));
        }
#pragma GCC unroll 2
        for (int t = 0; t < T; ++t)
#pragma GCC unroll 6
            for (int r = 0; r < R; ++r) {
                const __m512 xs =
                    _mm512_set1_ps(Interleaved ? a[t][s * kRows + r] : (r < 3 ? a[t][r * lda + s] : a3[t][(r - 3) * lda + s]));
#pragma GCC unroll 4
                for (int p = 0; p < P; ++p) c[t][r][p] = _mm512_fmadd_ps(xs, b[p], c[t][r][p]);
            }
    }
#pragma GCC unroll 2
    for (int t = 0; t < T; ++t)
#pragma GCC unroll 6
        for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
            for (int p = 0; p < P; ++p) _mm512_storeu_ps(out[t] + r * g.ldo + p * kPanel, c[t][r][p]);
}

// A short tile's strip: its first R rows (interleaved), four panels at a time.
template <int R, PanelElement E>
void shortStrip(const StripArgs& g) {
    const auto* panels = static_cast<const typename Element<E>::Type*>(g.panels);
    KernelIndex p = 0;
    for (; p + 4 <= g.panelCount; p += 4) tile<1, 4, true, E, R>(g, panels + p * g.panelStride, p * kPanel);
    for (; p + 2 <= g.panelCount; p += 2) tile<1, 2, true, E, R>(g, panels + p * g.panelStride, p * kPanel);
    for (; p < g.panelCount; ++p) tile<1, 1, true, E, R>(g, panels + p * g.panelStride, p * kPanel);
}

template <bool Interleaved, PanelElement E>
void stripOf(const StripArgs& g) {
    if constexpr (Interleaved) {
        switch (g.rows) {
            case 1: return shortStrip<1, E>(g);
            case 2: return shortStrip<2, E>(g);
            case 3: return shortStrip<3, E>(g);
            case 4: return shortStrip<4, E>(g);
            case 5: return shortStrip<5, E>(g);
            default: break;
        }
    }
    const auto* panels = static_cast<const typename Element<E>::Type*>(g.panels);
    KernelIndex p = 0;
    if (g.a2 != nullptr) {
        // Twelve rows: 12 × 32 reads half the panels' bytes per multiply-add of 6 × 64.
        for (; p + 2 <= g.panelCount; p += 2) tile<2, 2, Interleaved, E>(g, panels + p * g.panelStride, p * kPanel);
        for (; p < g.panelCount; ++p) tile<2, 1, Interleaved, E>(g, panels + p * g.panelStride, p * kPanel);
        return;
    }
    for (; p + 4 <= g.panelCount; p += 4) tile<1, 4, Interleaved, E>(g, panels + p * g.panelStride, p * kPanel);
    for (; p + 2 <= g.panelCount; p += 2) tile<1, 2, Interleaved, E>(g, panels + p * g.panelStride, p * kPanel);
    for (; p < g.panelCount; ++p) tile<1, 1, Interleaved, E>(g, panels + p * g.panelStride, p * kPanel);
}

// The 16 lanes' sum in kernels.cpp's order: halves, then quarters, then pairs (in memory: GCC
// 12's casts and extracts of a 512-bit register start from an undefined one, which its own
// -Wmaybe-uninitialized reports).
float sumLanes(__m512 c) {
    float lanes[kPanel];
    _mm512_storeu_ps(lanes, c);
    for (KernelIndex half = kPanel / 2; half >= 1; half /= 2)
        for (KernelIndex l = 0; l < half; ++l) lanes[l] += lanes[l + half];
    return lanes[0];
}

// Rows [0, rows) of src · x, R rows at a time (R independent chains in flight); the last cols mod
// 16 columns are loaded padded with zeros (0 · 0 added to a lane changes no sum). Each step also
// prefetches the same columns of the R rows at `ahead` (the next block, or this one when it is the
// last): a block of R rows is R streams, which the hardware's prefetchers follow less far ahead
// than one, and the logits, which read the whole vocabulary matrix from memory, ran 7-10 % faster
// for it (Zen 4).
template <int R, PanelElement E>
void rowsOf(const typename Element<E>::Type* src, KernelIndex cols, const float* x, float* out, const typename Element<E>::Type* ahead) {
    __m512 c[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) c[r] = _mm512_setzero_ps();
    const KernelIndex whole = cols / kPanel * kPanel;
    for (KernelIndex j = 0; j < whole; j += kPanel) {
        const __m512 xs = _mm512_loadu_ps(x + j);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            c[r] = _mm512_fmadd_ps(load16<E>(src + r * cols + j), xs, c[r]);
            _mm_prefetch(reinterpret_cast<const char*>(ahead + r * cols + j), _MM_HINT_T0);
        }
    }
    if (whole < cols) {
        const auto mask = static_cast<__mmask16>((1U << (cols - whole)) - 1U);
        const __m512 xs = _mm512_maskz_loadu_ps(mask, x + whole);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            __m512 w;
            if constexpr (E == PanelElement::F32) {
                w = _mm512_maskz_loadu_ps(mask, src + r * cols + whole);
            } else {
                alignas(32) unsigned short tail[kPanel] = {};
                // memcpy: a tensor in a mapped file may start at an odd byte.
                std::memcpy(tail, src + r * cols + whole, static_cast<std::size_t>(cols - whole) * sizeof(tail[0]));
                w = load16<E>(tail);
            }
            c[r] = _mm512_fmadd_ps(w, xs, c[r]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) out[r] = sumLanes(c[r]);
}

template <PanelElement E>
void rowsByVectorOf(const void* src, KernelIndex rows, KernelIndex cols, const float* x, float* out) {
    const auto* s = static_cast<const typename Element<E>::Type*>(src);
    KernelIndex i = 0;
    for (; i + 8 <= rows; i += 8) rowsOf<8, E>(s + i * cols, cols, x, out + i, s + (i + 16 <= rows ? i + 8 : i) * cols);
    for (; i < rows; ++i) rowsOf<1, E>(s + i * cols, cols, x, out + i, s + i * cols);
}

}  // namespace

void strip(const StripArgs& args) {
    switch (args.element) {
        case PanelElement::F16: return stripOf<true, PanelElement::F16>(args);
        case PanelElement::BF16: return stripOf<true, PanelElement::BF16>(args);
        case PanelElement::F32: break;
    }
    if (args.lda == 0) stripOf<true, PanelElement::F32>(args);
    else stripOf<false, PanelElement::F32>(args);
}

void rowsByVector(const void* src, PanelElement element, KernelIndex rows, KernelIndex cols, const float* x, float* out) {
    switch (element) {
        case PanelElement::F16: return rowsByVectorOf<PanelElement::F16>(src, rows, cols, x, out);
        case PanelElement::BF16: return rowsByVectorOf<PanelElement::BF16>(src, rows, cols, x, out);
        case PanelElement::F32: return rowsByVectorOf<PanelElement::F32>(src, rows, cols, x, out);
    }
}

}  // namespace attnviz::core::avx512
