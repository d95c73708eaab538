// Eigen's sgemm built for AVX-512: the GEMM ceiling of the kernels' AVX-512 build, where
// attnviz_bench's BM_Sgemm is Eigen built for x86-64-v3 (AVX2), like the rest of attnviz.
// A program of its own: Eigen's inline functions compiled for AVX-512 must not be linked into
// code that runs on any CPU. Run: ./build/attnviz_sgemm_avx512 (beside ./build/attnviz_bench).
#include "bench/sgemm.hpp"

#include <benchmark/benchmark.h>

namespace {

void BM_SgemmAvx512(benchmark::State& state) {
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512f")) {
        state.SkipWithError("this CPU has no AVX-512");
        return;
    }
    timeSgemm(state);
}
BENCHMARK(BM_SgemmAvx512)->Arg(1024)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
