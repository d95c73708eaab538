// The kernels' strips for AVX-512 (see kernel_strips.hpp): this file alone is compiled with
// -mavx512f, and kernels.cpp calls it only when the CPU has AVX-512.
#include "core/attention/kernel_strips.hpp"

#include <immintrin.h>

namespace attnviz::core::avx512 {

namespace {

constexpr KernelIndex kPanel = 16;  // columns per panel: one 16-float register
constexpr int kRows = 6;

// out[0..6)[0..16 P) (+)= a · P panels: 6 × P accumulators, P panel rows and one broadcast in
// registers (P = 4: 29 of the 32). Each accumulator is one chain of fused multiply-adds over s.
template <int P, bool Interleaved>
[[gnu::always_inline]] inline void tile(const StripArgs& g, const float* panel, float* out) {
    __m512 c[kRows][P];
#pragma GCC unroll 6
    for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 4
        for (int p = 0; p < P; ++p) c[r][p] = g.accumulate ? _mm512_loadu_ps(out + r * g.ldo + p * kPanel) : _mm512_setzero_ps();
    const float* a = g.a;
    const float* a3 = g.a + 3 * g.lda;  // rows 3-5 of a row layout: offsets 0, lda, 2 lda again
    const KernelIndex stride = g.panelStride, lda = g.lda, steps = g.steps;
    for (KernelIndex s = 0; s < steps; ++s, panel += kPanel) {
        __m512 b[P];
#pragma GCC unroll 4
        for (int p = 0; p < P; ++p) b[p] = _mm512_loadu_ps(panel + p * stride);
#pragma GCC unroll 6
        for (int r = 0; r < kRows; ++r) {
            const float x = Interleaved ? a[s * kRows + r] : (r < 3 ? a[r * lda + s] : a3[(r - 3) * lda + s]);
            const __m512 xs = _mm512_set1_ps(x);
#pragma GCC unroll 4
            for (int p = 0; p < P; ++p) c[r][p] = _mm512_fmadd_ps(xs, b[p], c[r][p]);
        }
    }
#pragma GCC unroll 6
    for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 4
        for (int p = 0; p < P; ++p) _mm512_storeu_ps(out + r * g.ldo + p * kPanel, c[r][p]);
}

template <bool Interleaved>
void stripOf(const StripArgs& g) {
    KernelIndex p = 0;
    for (; p + 4 <= g.panelCount; p += 4) tile<4, Interleaved>(g, g.panels + p * g.panelStride, g.out + p * kPanel);
    for (; p + 2 <= g.panelCount; p += 2) tile<2, Interleaved>(g, g.panels + p * g.panelStride, g.out + p * kPanel);
    for (; p < g.panelCount; ++p) tile<1, Interleaved>(g, g.panels + p * g.panelStride, g.out + p * kPanel);
}

}  // namespace

void strip(const StripArgs& args) {
    if (args.lda == 0) stripOf<true>(args);
    else stripOf<false>(args);
}

}  // namespace attnviz::core::avx512
