// Timing the engine on this machine: the numbers behind `attnviz --bench` and bench/.
#pragma once

#include "core/scenario/model.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <utility>
#include <vector>

namespace attnviz::core {

// The middle value (the upper of the two middle ones for an even count); v non-empty.
inline double median(std::vector<double> v) {
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    return v[v.size() / 2];
}

// Median milliseconds of `work`, run at least `minRuns` times and for at least `seconds`, but no
// more than `maxRuns` times.
template <class Work>
double medianMs(double seconds, Work&& work, std::size_t minRuns, std::size_t maxRuns) {
    using Clock = std::chrono::steady_clock;
    std::vector<double> times;
    const auto start = Clock::now();
    while (times.size() < minRuns || (std::chrono::duration<double>(Clock::now() - start).count() < seconds && times.size() < maxRuns)) {
        const auto t0 = Clock::now();
        work();
        times.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    }
    return median(std::move(times));
}

// Floating-point operations of one forward pass, counting a multiply-add as 2:
//   projections 2·T·d_model·h·(2·d_k + d_v), scores 2·h·T_q·T_k·d_k, A·V 2·h·T_q·T_k·d_v,
//   output projection 2·T_q·h·d_v·d_out. The softmax (O(T²) exp) is not counted.
double forwardFlops(const Model& model);

// The softmax of every head again (what a temperature or mask change needs), heads in parallel.
void reweighAll(const Model& model, const Settings& settings, Forward& forward);

struct BenchResult {
    long long tq = 0, tk = 0;
    int heads = 0, dModel = 0, runs = 0;
    double forwardMs = 0;         // median, full forward pass, every weight materialised
    double softmaxMs = 0;         // median, softmax of every head
    double visibleSoftmaxMs = 0;  // median, softmax of one head (the visible one)
    double gflops = 0;            // forwardFlops / forwardMs
    double sgemmGflops = 0;       // Eigen single-precision GEMM on this machine, same run
    std::uint64_t keptBytes = 0;  // every matrix the model and its forward pass hold (keptBytes)
};

// Repeats the forward pass, alternating with an Eigen 1024³ sgemm, for at least `seconds` (and
// 5 runs each) and reports medians; then the softmax timings.
BenchResult benchmark(const Model& model, const Settings& settings, double seconds);

}  // namespace attnviz::core
