// The machine's ceiling the benchmarks compare the products with: every core issuing fused
// multiply-adds and nothing else (ten independent chains per core, enough to cover the latency),
// what no product can exceed. One function per register width; each core runs `steps` of ten,
// and the sums leave through an empty asm statement, so that the loop is not optimised away.
// Shared by attnviz_bench and attnviz_blas_bench. The AVX-512 one is compiled for AVX-512 alone
// (a target attribute, the program being built for x86-64-v3): call it only where
// hasKernelIsa(KernelIsa::Avx512).
#pragma once

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

inline void fmaChainsAvx2(long steps) {
    __m256 a0 = _mm256_set1_ps(1.0f), a1 = _mm256_set1_ps(1.1f), a2 = _mm256_set1_ps(1.2f), a3 = _mm256_set1_ps(1.3f),
           a4 = _mm256_set1_ps(1.4f), a5 = _mm256_set1_ps(1.5f), a6 = _mm256_set1_ps(1.6f), a7 = _mm256_set1_ps(1.7f),
           a8 = _mm256_set1_ps(1.8f), a9 = _mm256_set1_ps(1.9f);
    const __m256 m = _mm256_set1_ps(0.9999999f), c = _mm256_set1_ps(1e-7f);
    for (long k = 0; k < steps; ++k) {
        a0 = _mm256_fmadd_ps(a0, m, c), a1 = _mm256_fmadd_ps(a1, m, c), a2 = _mm256_fmadd_ps(a2, m, c);
        a3 = _mm256_fmadd_ps(a3, m, c), a4 = _mm256_fmadd_ps(a4, m, c), a5 = _mm256_fmadd_ps(a5, m, c);
        a6 = _mm256_fmadd_ps(a6, m, c), a7 = _mm256_fmadd_ps(a7, m, c), a8 = _mm256_fmadd_ps(a8, m, c);
        a9 = _mm256_fmadd_ps(a9, m, c);
    }
    asm volatile("" : : "v"(a0), "v"(a1), "v"(a2), "v"(a3), "v"(a4), "v"(a5), "v"(a6), "v"(a7), "v"(a8), "v"(a9));
}

// Sixteen-float AVX-512 fused multiply-adds: the ceiling of the kernels' AVX-512 build.
[[gnu::target("avx512f")]] inline void fmaChainsAvx512(long steps) {
    __m512 a0 = _mm512_set1_ps(1.0f), a1 = _mm512_set1_ps(1.1f), a2 = _mm512_set1_ps(1.2f), a3 = _mm512_set1_ps(1.3f),
           a4 = _mm512_set1_ps(1.4f), a5 = _mm512_set1_ps(1.5f), a6 = _mm512_set1_ps(1.6f), a7 = _mm512_set1_ps(1.7f),
           a8 = _mm512_set1_ps(1.8f), a9 = _mm512_set1_ps(1.9f);
    const __m512 m = _mm512_set1_ps(0.9999999f), c = _mm512_set1_ps(1e-7f);
    for (long k = 0; k < steps; ++k) {
        a0 = _mm512_fmadd_ps(a0, m, c), a1 = _mm512_fmadd_ps(a1, m, c), a2 = _mm512_fmadd_ps(a2, m, c);
        a3 = _mm512_fmadd_ps(a3, m, c), a4 = _mm512_fmadd_ps(a4, m, c), a5 = _mm512_fmadd_ps(a5, m, c);
        a6 = _mm512_fmadd_ps(a6, m, c), a7 = _mm512_fmadd_ps(a7, m, c), a8 = _mm512_fmadd_ps(a8, m, c);
        a9 = _mm512_fmadd_ps(a9, m, c);
    }
    asm volatile("" : : "v"(a0), "v"(a1), "v"(a2), "v"(a3), "v"(a4), "v"(a5), "v"(a6), "v"(a7), "v"(a8), "v"(a9));
}
#endif
