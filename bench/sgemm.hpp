// The sgemm ceiling the benchmarks compare the products with: Eigen's n × n × n product (n =
// the benchmark's argument), GFLOP/s counted as 2 n³. Shared by attnviz_bench (Eigen built for
// x86-64-v3, like attnviz) and attnviz_sgemm_avx512 (built for AVX-512): separate programs, so
// each compiles this for its own instruction set.
#pragma once

#include "core/base/matrix.hpp"

#include <benchmark/benchmark.h>

inline void timeSgemm(benchmark::State& state) {
    using attnviz::core::Mat;
    const int n = static_cast<int>(state.range(0));
    const Mat a = Mat::Random(n, n), b = Mat::Random(n, n);
    Mat c(n, n);
    for (auto _ : state) {
        c.noalias() = a * b;
        benchmark::DoNotOptimize(c.data());
    }
    state.counters["GFLOP/s"] =
        benchmark::Counter(2.0 * n * n * static_cast<double>(n) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
