// Timing the engine on this machine: the numbers behind `attnviz --bench` and bench/.
#pragma once

#include "core/model.hpp"

namespace attnviz::core {

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
};

// Repeats the forward pass, alternating with an Eigen 1024³ sgemm, for at least `seconds` (and
// 5 runs each) and reports medians; then the softmax timings.
BenchResult benchmark(const Model& model, const Settings& settings, double seconds);

}  // namespace attnviz::core
