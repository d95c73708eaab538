// Timing a model's whole forward pass on this machine: `attnviz --model DIR --bench` and
// scripts/bench_gpt2.py.
#pragma once

#include "core/models/gpt2/gpt2.hpp"

#include <cstdint>
#include <vector>

namespace attnviz::core {

// Floating-point operations of a decoder's pass over T tokens, a multiply-add counted as 2, with
// w = (h + 2g)·d_h the width of q | k | v and h·d_h that of the heads' outputs:
//   per layer  projections 2·T·d·(w + h·d_h + m·n_inner) (m = 2, or 3 with a gated MLP),
//              scores and A·V 2·2·T·T·h·d_h (counted dense: the causal kernels compute about half);
//   the last position's logits 2·d·vocab. Norms, activations and the softmax are not counted.
// GPT-2: 2·T·d·(4d + 2·n_inner) + 4·T²·d per layer.
double passFlops(const decoder::Config& config, long long tokens);

struct ModelBenchResult {
    long long tokens = 0;
    int layers = 0, heads = 0, dModel = 0, runs = 0;
    decoder::PassMaps maps = decoder::PassMaps::Kept;  // what the pass keeps of its maps
    double forwardMs = 0;                              // median, the whole pass
    double appendMs = 0;                               // median, the same tokens as one appended to a kept pass of T - 1
    double gflops = 0;                                 // passFlops / forwardMs
    double sweepMs = 0;  // one sweep over every head's map for its statistics and thumbnails (sweepHeads), maps made on demand or read
    // The last layer's first head as the heatmap reads it: its whole map pooled to at most 1,024
    // texels a side, and the zoomed view's 256 × 256 cells at the end of the diagonal at full
    // resolution (poolMap), medians.
    double poolMs = 0, zoomMs = 0;
    std::uint64_t keptBytes = 0;  // what the pass keeps (keptModelBytes)
};

// Runs the pass over `ids` (and the append) for at least `seconds` and 5 runs each.
// `maps`: what the pass keeps of its maps.
ModelBenchResult benchmarkModel(const decoder::Checkpoint& model, const std::vector<int>& ids, double seconds,
                                decoder::PassMaps maps = decoder::PassMaps::Kept);

}  // namespace attnviz::core
