// The machine's ceiling the benchmarks compare the products with: every core issuing fused
// multiply-adds and nothing else (ten independent chains per core, enough to cover the latency),
// what no product can exceed. One function per register width; each core runs `steps` of ten,
// and the sums leave through an empty asm statement, so that the loop is not optimised away.
// Shared by attnviz_bench and attnviz_blas_bench, which both measure the peak with
// chainsOnEveryThread. The AVX-512 one is compiled for AVX-512 alone (a target attribute, the
// program being built for x86-64-v3): call it only where hasKernelIsa(KernelIsa::Avx512).
#pragma once

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

#include <ctime>

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

inline double threadSeconds() {
    timespec now{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

// chains(steps) on every thread at once; the sum over threads of each one's multiply-adds per
// second of its own CPU time (`floats` wide, 2 flops each), in GFLOP/s: what the cores deliver
// while they run it, whether or not another process takes turns on them.
inline double chainsOnEveryThread(void (*chains)(long), long steps, int floats) {
    double gflops = 0;
#pragma omp parallel reduction(+ : gflops)
    {
        const double start = threadSeconds();
        chains(steps);
        gflops += static_cast<double>(steps) * 10 * 2 * floats / (threadSeconds() - start) * 1e-9;
    }
    return gflops;
}
#endif
