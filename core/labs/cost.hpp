// The cost of attention (seed 000 §39.3): the memory wall of stored T × T matrices, the KV
// cache a decoder keeps while it generates (MHA, GQA, MQA), and a live timing of self-attention
// against an RNN cell of the same width.
#pragma once

#include "core/base/matrix.hpp"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace attnviz::core {

// Bytes of attention matrices stored for backprop: bytes · B · h · L · T² (one T × T matrix
// per example, head and layer).
struct MemoryWall {
    long long batch = 1, heads = 16, layers = 32;
    int bytesPerValue = 2;    // fp16
    long long tokens = 4096;  // a T of the user's own, beside the seed's
};

struct MemoryWallRow {
    long long tokens = 0;
    double perMatrixMiB = 0;  // one T × T matrix
    double totalGiB = 0;      // every example, head and layer
    bool fits = false;        // totalGiB within the given memory
};

// One row per T; `memoryBytes` is what counts as fitting (this machine's RAM, say).
std::vector<MemoryWallRow> memoryWall(const MemoryWall& wall, const std::vector<long long>& tokens, std::uint64_t memoryBytes);
// The seed's T = 512, 2048, 8192, 32768, 131072.
std::vector<long long> memoryWallTokens();
// Physical memory of this machine, in bytes (0 when unknown).
std::uint64_t physicalMemoryBytes();

// The KV cache: while a decoder generates, every layer keeps each past token's K and V for each
// of its kv heads, so the cache grows by the same bytes with every token:
//   per token:    2 (K and V) · layers · kv_heads · head_dim · bytes_per_value
//   per sequence: per token · tokens · batch
// Query heads share kv heads in groups of heads / kv_heads: multi-head attention (MHA) has
// kv_heads = heads, grouped-query (GQA) 1 < kv_heads < heads, multi-query (MQA) kv_heads = 1.
// `heads` (query heads) does not enter the bytes; it fixes what MHA and the grouping mean.
struct KvCacheConfig {
    int layers = 32, heads = 32, kvHeads = 8, headDim = 128;
    int bytesPerValue = 2;  // fp16 / bf16
    long long tokens = 8192;
    long long batch = 1;
    bool operator==(const KvCacheConfig&) const = default;
};

// Each throws InputError naming the field ("kv_heads", "tokens", …) when a value is below 1,
// when kv_heads does not divide heads, or when the bytes would not fit in 64 bits (named by the
// field whose factor takes the product past 2^64 - 1); a result never wraps.
void checkKvCache(const KvCacheConfig& config);
std::uint64_t kvCacheBytesPerToken(const KvCacheConfig& config);
std::uint64_t kvCacheBytes(const KvCacheConfig& config);  // the whole sequence (times batch)

// One way of sharing kv heads, for the configuration's layers, head_dim, bytes and tokens.
struct KvCacheRow {
    const char* name = "";  // "MHA", "GQA", "MQA"
    int kvHeads = 0;
    std::uint64_t perToken = 0, perSequence = 0;
    int groups = 1;  // query heads per kv head: this row's bytes are MHA's / groups
};
// MHA (kv_heads = heads), the configuration's own kv_heads, MQA (kv_heads = 1), in that order.
// The middle row is named for what it is: "GQA", or "MHA" / "MQA" when kv_heads is heads or 1.
// Throws as kvCacheBytes does, for MHA's bytes (the largest of the three).
std::array<KvCacheRow, 3> kvCacheRows(const KvCacheConfig& config);

// Published configurations to check the arithmetic against (sources and derivations in cost.cpp).
struct KvCachePreset {
    const char* name;  // "Llama 2 7B"
    const char* note;  // what the numbers come from, one line
    KvCacheConfig config;
};
const std::vector<KvCachePreset>& kvCachePresets();

// Milliseconds for one forward pass over T tokens of width d, median of runs for about
// `seconds` (at least 3):
//   RNN:       h_t = tanh(W_h h_{t-1} + W_x x_t), t = 1 … T in sequence: O(T d²), one core
//   attention: softmax(Q Kᵀ / √d) V with Q = K = V = X: O(T² d), every core (no step waits)
// Beside the times, the work one pass of each did, counted from what the timed code ran: the RNN's steps and multiply-adds (2 d² a step), attention's multiply-adds (T² d for Q Kᵀ
// and as many for A·V) and softmax exponentials (T²). The times depend on the machine; the work
// does not.
struct CostPoint {
    long long tokens = 0;
    int width = 0;
    double rnnMs = 0, attentionMs = 0;
    long long rnnSteps = 0;
    double rnnMultiplyAdds = 0, attentionMultiplyAdds = 0, attentionExps = 0;

    // How many times longer the RNN took than attention (what the panel prints).
    double rnnOverAttention() const { return rnnMs / attentionMs; }
};
CostPoint measureCost(long long tokens, int width, double seconds);
// The work of one pass of each at T tokens and width d, without timing anything: the counts
// measureCost reports (times left at 0).
CostPoint costWork(long long tokens, int width);

// The floating-point operations of one self-attention layer (seed 002, exercise 4), a
// multiply-add counted as 2: n tokens, model width d, h query heads of widths d_k and d_v, and
// kv key/value heads (h without grouped-query attention).
//   projections  Q, K, V = X W         2 n d (h d_k + kv d_k + kv d_v)
//   scores       Q Kᵀ                  2 n² h d_k
//   softmax      exp, sum, divide      3 n² h
//   weighted     A V                   2 n² h d_v
//   output       concat W_O            2 n h d_v d
// At n = 1000, d = d_k = d_v = 512, one head: 1.573 + 1.024 + 0.003 + 1.024 = 3.62 GFLOP, and
// 4.15 with W_O.
struct LayerFlops {
    double projections = 0, scores = 0, softmax = 0, weighted = 0, output = 0;
    double withoutOutput() const { return projections + scores + softmax + weighted; }
    double total() const { return withoutOutput() + output; }
};
LayerFlops layerFlops(long long n, long long d, long long heads, long long dk, long long dv, long long kvHeads);

// What a sweep's times say, in words that agree with its curve:
//   ratio:   at the longest T, "attention 213× slower than the RNN at T = 4096" (or "faster",
//            or "about as fast as" within 10 %)
//   verdict: where attention was faster and where slower, e.g. "Attention was faster up to
//            T = 512 and slower from T = 1024: its work grows as T², the RNN's as T."
// Both empty for no points.
struct CostSummary {
    std::string ratio, verdict;
};
CostSummary summariseCost(const std::vector<CostPoint>& points);

}  // namespace attnviz::core
