#include "core/labs/cost.hpp"

#include "core/attention/attention.hpp"
#include "core/base/error.hpp"
#include "core/base/prng.hpp"
#include "core/scenario/bench.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <limits>
#include <string>
#include <utility>

namespace attnviz::core {

std::vector<MemoryWallRow> memoryWall(const MemoryWall& wall, const std::vector<long long>& tokens, std::uint64_t memoryBytes) {
    std::vector<MemoryWallRow> rows;
    for (long long t : tokens) {
        const double matrix = static_cast<double>(wall.bytesPerValue) * static_cast<double>(t) * static_cast<double>(t);
        const double total = matrix * static_cast<double>(wall.batch * wall.heads * wall.layers);
        rows.push_back({t, matrix / (1024.0 * 1024.0), total / (1024.0 * 1024.0 * 1024.0),
                        memoryBytes > 0 && total <= static_cast<double>(memoryBytes)});
    }
    return rows;
}

std::vector<long long> memoryWallTokens() { return {512, 2048, 8192, 32768, 131072}; }

std::uint64_t physicalMemoryBytes() {
    const long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGE_SIZE);
    return pages > 0 && size > 0 ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(size) : 0;
}

namespace {

// The KV cache's bytes for `kvHeads` kv heads, multiplied out in the formula's order
// (2 · layers · kv_heads · head_dim · bytes [· tokens · batch]), each factor checked before it
// is applied: the field named is the one whose factor would take the count past 2^64 - 1.
std::uint64_t kvBytes(const KvCacheConfig& c, int kvHeads, const char* kvField, bool perSequence) {
    struct Factor {
        const char* field;
        long long value;
    };
    const Factor perToken[] = {{"layers", c.layers}, {kvField, kvHeads}, {"head_dim", c.headDim}, {"bytes_per_value", c.bytesPerValue}};
    const Factor sequence[] = {{"tokens", c.tokens}, {"batch", c.batch}};
    std::uint64_t bytes = 2;  // K and V
    const auto times = [&](const Factor& f) {
        const auto v = static_cast<std::uint64_t>(f.value);  // >= 1, checked before
        if (bytes > std::numeric_limits<std::uint64_t>::max() / v)
            throw InputError(f.field, std::to_string(f.value) + " takes the KV cache past 2^64 - 1 bytes (16 EiB)");
        bytes *= v;
    };
    for (const Factor& f : perToken) times(f);
    if (perSequence)
        for (const Factor& f : sequence) times(f);
    return bytes;
}

}  // namespace

void checkKvCache(const KvCacheConfig& c) {
    const std::pair<const char*, long long> sizes[] = {
        {"layers", c.layers}, {"heads", c.heads}, {"kv_heads", c.kvHeads}, {"head_dim", c.headDim}, {"bytes_per_value", c.bytesPerValue},
        {"tokens", c.tokens}, {"batch", c.batch}};
    for (const auto& [field, value] : sizes)
        if (value < 1) throw InputError(field, "must be at least 1, got " + std::to_string(value));
    if (c.heads % c.kvHeads != 0)
        throw InputError("kv_heads", std::to_string(c.kvHeads) + " does not divide " + std::to_string(c.heads) +
                                         " query heads (each kv head serves heads / kv_heads of them)");
    kvBytes(c, c.kvHeads, "kv_heads", true);  // the whole cache fits in 64 bits
}

std::uint64_t kvCacheBytesPerToken(const KvCacheConfig& c) {
    checkKvCache(c);
    return kvBytes(c, c.kvHeads, "kv_heads", false);
}

std::uint64_t kvCacheBytes(const KvCacheConfig& c) {
    checkKvCache(c);
    return kvBytes(c, c.kvHeads, "kv_heads", true);
}

std::array<KvCacheRow, 3> kvCacheRows(const KvCacheConfig& c) {
    checkKvCache(c);
    // MHA's kv_heads is `heads`, so that is the field to name when its cache alone is too large
    const auto row = [&](const char* name, int kv, const char* kvField) {
        return KvCacheRow{name, kv, kvBytes(c, kv, kvField, false), kvBytes(c, kv, kvField, true), c.heads / kv};
    };
    const char* own = c.kvHeads == c.heads ? "MHA" : c.kvHeads == 1 ? "MQA" : "GQA";
    return {row("MHA", c.heads, "heads"), row(own, c.kvHeads, "kv_heads"), row("MQA", 1, "kv_heads")};
}

// Two published configurations, from each model's config.json on Hugging Face
// (num_hidden_layers, num_attention_heads, num_key_value_heads, hidden_size / num_attention_heads
// = head_dim, torch_dtype, max_position_embeddings as the tokens):
//   meta-llama/Llama-2-7b-hf: 32 layers, 32 heads, 32 kv heads (MHA: the Llama 2 paper, Touvron
//     et al. 2023, gives GQA to 34B and 70B only), 4096 / 32 = 128, float16, 4096 tokens
//       2 · 32 · 32 · 128 · 2 = 524,288 bytes = 512 KiB a token; × 4096 = 2^31 bytes = 2 GiB
//   meta-llama/Meta-Llama-3-8B: 32 layers, 32 heads, 8 kv heads (GQA, groups of 4; also in "The
//     Llama 3 Herd of Models", 2024), 4096 / 32 = 128, bfloat16, 8192 tokens
//       2 · 32 · 8 · 128 · 2 = 131,072 bytes = 128 KiB a token; × 8192 = 2^30 bytes = 1 GiB
// (Mistral 7B has Llama 3 8B's shape, but its sliding window of 4096 caps the cache at 4096
// tokens' worth, so it is not offered: its cache at 8192 tokens is not this formula's.)
const std::vector<KvCachePreset>& kvCachePresets() {
    static const std::vector<KvCachePreset> presets = {
        {"Llama 2 7B", "32 layers, 32 heads, MHA, head_dim 128, fp16, 4096 tokens", {32, 32, 32, 128, 2, 4096, 1}},
        {"Llama 3 8B", "32 layers, 32 heads, 8 kv heads (GQA), head_dim 128, bf16, 8192 tokens", {32, 32, 8, 128, 2, 8192, 1}},
    };
    return presets;
}

namespace {

Mat gaussian(Eigen::Index rows, Eigen::Index cols, std::uint64_t seed, float scale) {
    Prng prng(seed);
    Mat m(rows, cols);
    for (Eigen::Index i = 0; i < rows; ++i)
        for (Eigen::Index j = 0; j < cols; ++j) m(i, j) = scale * static_cast<float>(prng.normal());
    return m;
}

}  // namespace

CostPoint measureCost(long long tokens, int width, double seconds) {
    const Eigen::Index T = tokens, d = width;
    const Mat x = gaussian(T, d, 1, 1.0f);
    const float init = 1.0f / std::sqrt(static_cast<float>(d));
    const Mat wh = gaussian(d, d, 2, init), wx = gaussian(d, d, 3, init);
    CostPoint p;
    p.tokens = tokens;
    p.width = width;
    // RNN: T matrix-vector steps, each waiting for the last (row vectors: h W)
    RowVec h(d), pre(d);
    p.rnnMs = medianMs(
        seconds / 2,
        [&] {
            p.rnnSteps = 0;
            p.rnnMultiplyAdds = 0;
            h.setZero();
            for (Eigen::Index t = 0; t < T; ++t) {
                pre.noalias() = h * wh;
                pre.noalias() += x.row(t) * wx;
                h = pre.array().tanh();
                ++p.rnnSteps;
                p.rnnMultiplyAdds += static_cast<double>(wh.size() + wx.size());
            }
        },
        3, 200);
    // attention: one T × T product, the softmax, one product with V, on every core (its steps
    // are independent; the RNN's are not)
    Mat scores(T, T), weights(T, T), out(T, d);
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));
    p.attentionMs = medianMs(
        seconds / 2,
        [&] {
            scores.noalias() = x * x.transpose();
            softmaxRows(scores, scale, Settings{}, weights);
            out.noalias() = weights * x;
        },
        3, 200);
    const auto products = [](const Mat& a, const Mat& result) {  // multiply-adds of result = a · b
        return static_cast<double>(result.size()) * static_cast<double>(a.cols());
    };
    p.attentionMultiplyAdds = products(x, scores) + products(weights, out);
    p.attentionExps = static_cast<double>(weights.size());
    return p;
}

CostPoint costWork(long long tokens, int width) {
    const double T = static_cast<double>(tokens), d = width;
    CostPoint p;
    p.tokens = tokens;
    p.width = width;
    p.rnnSteps = tokens;
    p.rnnMultiplyAdds = T * 2 * d * d;        // h W_h and x_t W_x, a step
    p.attentionMultiplyAdds = 2 * T * T * d;  // Q Kᵀ and A·V
    p.attentionExps = T * T;
    return p;
}

namespace {

std::string times(double r) {
    char buf[32];
    std::snprintf(buf, sizeof buf, r < 9.95 ? "%.1f×" : "%.0f×", r);
    return buf;
}

}  // namespace

CostSummary summariseCost(const std::vector<CostPoint>& points) {
    CostSummary out;
    if (points.empty()) return out;
    const CostPoint& last = points.back();
    const double slower = last.attentionMs / last.rnnMs;  // > 1: attention took longer
    const std::string at = " at T = " + std::to_string(last.tokens);
    if (slower > 1.1) out.ratio = "attention " + times(slower) + " slower than the RNN" + at;
    else if (slower < 1 / 1.1) out.ratio = "attention " + times(1 / slower) + " faster than the RNN" + at;
    else out.ratio = "attention about as fast as the RNN" + at;

    std::vector<bool> faster(points.size());
    std::transform(points.begin(), points.end(), faster.begin(), [](const CostPoint& p) { return p.attentionMs < p.rnnMs; });
    const auto count = static_cast<std::size_t>(std::count(faster.begin(), faster.end(), true));
    const std::string why = ": its work grows as T², the RNN's as T.";
    if (count == points.size()) {
        out.verdict =
            "Attention was faster at every T measured: its T × T products use every core, while each of the RNN's T steps "
            "waits for the one before.";
    } else if (count == 0) {
        out.verdict = "Attention was slower at every T measured" + why;
    } else {
        // the first T from which attention stayed slower
        std::size_t from = points.size();
        while (from > 0 && !faster[from - 1]) --from;
        if (std::count(faster.begin(), faster.begin() + static_cast<std::ptrdiff_t>(from), false) == 0)
            out.verdict = "Attention was faster up to T = " + std::to_string(points[from - 1].tokens) +
                          " and slower from T = " + std::to_string(points[from].tokens) + why;
        else
            out.verdict = "Attention was faster at " + std::to_string(count) + " of " + std::to_string(points.size()) +
                          " lengths, with no single crossing (timings this close vary from run to run)" + why;
    }
    return out;
}

LayerFlops layerFlops(long long n, long long d, long long heads, long long dk, long long dv, long long kvHeads) {
    const double N = static_cast<double>(n), D = static_cast<double>(d), H = static_cast<double>(heads);
    const double KV = static_cast<double>(kvHeads);
    const double K = static_cast<double>(dk), V = static_cast<double>(dv);
    LayerFlops f;
    f.projections = 2.0 * N * D * (H * K + KV * (K + V));
    f.scores = 2.0 * N * N * H * K;
    f.softmax = 3.0 * N * N * H;
    f.weighted = 2.0 * N * N * H * V;
    f.output = 2.0 * N * H * V * D;
    return f;
}

}  // namespace attnviz::core
