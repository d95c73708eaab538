// Eigen's sgemm built for AVX-512: the GEMM ceiling of the kernels' AVX-512 build, where
// attnviz_bench's BM_Sgemm is Eigen built for x86-64-v3 (AVX2), like the rest of attnviz.
// A program of its own: Eigen's inline functions compiled for AVX-512 must not be linked into
// code that runs on any CPU. Run: ./build/attnviz_sgemm_avx512 (beside ./build/attnviz_bench).
#include <Eigen/Core>
#include <benchmark/benchmark.h>

namespace {

using Mat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

void BM_SgemmAvx512(benchmark::State& state) {
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512f")) {
        state.SkipWithError("this CPU has no AVX-512");
        return;
    }
    const int n = static_cast<int>(state.range(0));
    const Mat a = Mat::Random(n, n), b = Mat::Random(n, n);
    Mat c(n, n);
    for (auto _ : state) {
        c.noalias() = a * b;
        benchmark::DoNotOptimize(c.data());
    }
    state.counters["GFLOP/s"] = benchmark::Counter(2.0 * n * n * static_cast<double>(n) * 1e-9,
                                                   benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_SgemmAvx512)->Arg(1024)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
