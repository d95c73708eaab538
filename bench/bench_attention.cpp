// Google Benchmark of the engine: forward pass, softmax-only recompute (temperature change),
// mask toggle, and the texture-ready conversion, against the machine's Eigen sgemm.
// Run: ./build/attnviz_bench   (compare rows of one run: the ratios are what count)
#include "bench/fma_chains.hpp"
#include "bench/sgemm.hpp"
#include "core/attention/attention.hpp"
#include "core/attention/kernel_strips.hpp"
#include "core/attention/kernels.hpp"
#include "core/attention/query_key_map.hpp"
#include "core/attention/rollout.hpp"
#include "core/base/prng.hpp"
#include "core/scenario/bench.hpp"
#include "core/scenario/model.hpp"

#include <benchmark/benchmark.h>
#include <omp.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

using namespace attnviz::core;

namespace {

constexpr int kDModel = 512;
constexpr int kHeads = 8;

// The kernels' instruction set `isa` for one benchmark, the one in use before restored at its end;
// on a CPU or build without it the benchmark is skipped (ok() is false).
class KernelIsaScope {
public:
    KernelIsaScope(benchmark::State& state, KernelIsa isa) : m_before(kernelIsa()), m_ok(hasKernelIsa(isa)) {
        if (m_ok) useKernelIsa(isa);
        else state.SkipWithError("this CPU or build lacks that instruction set");
    }
    ~KernelIsaScope() { useKernelIsa(m_before); }
    KernelIsaScope(const KernelIsaScope&) = delete;
    KernelIsaScope& operator=(const KernelIsaScope&) = delete;
    bool ok() const { return m_ok; }

private:
    KernelIsa m_before;
    bool m_ok;
};

// One model per T: d_model 512, 8 heads (d_k = d_v = 64), W_O, distinct random tokens.
struct Fixture {
    Model model;
    Settings settings;
    Forward forward;
};

Fixture& fixture(int T) {
    static std::map<int, std::unique_ptr<Fixture>> cache;
    auto& f = cache[T];
    if (!f) {
        f = std::make_unique<Fixture>();
        Scenario s;
        std::vector<std::string> tokens;
        for (int t = 0; t < T; ++t) tokens.push_back("w" + std::to_string(t));
        s.tokens = tokens;
        s.dModel = kDModel;
        s.heads = kHeads;
        s.seed = 1;
        s.wo.kind = MatrixSpec::Kind::Random;
        f->model = buildModel(s);
        f->settings = buildSettings(s, f->model);
        f->forward = runForward(f->model, f->settings);
    }
    return *f;
}

const std::vector<std::int64_t> kSizes = {128, 256, 512, 1024, 2048, 4096};

void sizes(benchmark::internal::Benchmark* b) {
    for (std::int64_t T : kSizes) b->Arg(T);
    b->Unit(benchmark::kMillisecond)->UseRealTime();
}

void BM_Sgemm(benchmark::State& state) { timeSgemm(state); }
BENCHMARK(BM_Sgemm)->Arg(1024)->Unit(benchmark::kMillisecond)->UseRealTime();

#if defined(__AVX2__) && defined(__FMA__)
// chains(steps) on every core at once, as attnviz_blas_bench measures it: each thread's rate over
// its own CPU time, summed (chainsOnEveryThread); the counter is the median of the iterations.
void timeFmaPeak(benchmark::State& state, void (*chains)(long), int floats) {
    std::vector<double> rates;
    for (auto _ : state) rates.push_back(chainsOnEveryThread(chains, 1 << 22, floats));
    std::sort(rates.begin(), rates.end());
    state.counters["GFLOP/s"] = rates.empty() ? 0.0 : rates[rates.size() / 2];
}

void BM_FmaPeak(benchmark::State& state) { timeFmaPeak(state, fmaChainsAvx2, 8); }
BENCHMARK(BM_FmaPeak)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_FmaPeakAvx512(benchmark::State& state) {
    if (!hasKernelIsa(KernelIsa::Avx512)) {
        state.SkipWithError("this CPU has no AVX-512");
        return;
    }
    timeFmaPeak(state, fmaChainsAvx512, 16);
}
BENCHMARK(BM_FmaPeakAvx512)->Unit(benchmark::kMillisecond)->UseRealTime();
#endif

// Full forward: projections, every head's T x T scores and weights, A V, W_O.
void BM_Forward(benchmark::State& state) {
    Fixture& f = fixture(static_cast<int>(state.range(0)));
    Forward out = runForward(f.model, f.settings);
    for (auto _ : state) {
        runForward(f.model, f.settings, out);  // steady state: the app keeps its matrices
        benchmark::DoNotOptimize(out.output.data());
    }
    state.counters["GFLOP/s"] = benchmark::Counter(forwardFlops(f.model) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Forward)->Apply(sizes);

// The same on each of the kernels' instruction sets, second argument 1: AVX2, 2: AVX-512
// (skipped on a CPU without it). The products give the same bits on both.
void BM_ForwardKernels(benchmark::State& state) {
    const auto wanted = static_cast<KernelIsa>(state.range(1));
    const KernelIsaScope scope(state, wanted);
    if (!scope.ok()) return;
    Fixture& f = fixture(static_cast<int>(state.range(0)));
    Forward out = runForward(f.model, f.settings);
    for (auto _ : state) {
        runForward(f.model, f.settings, out);
        benchmark::DoNotOptimize(out.output.data());
    }
    state.SetLabel(kernelIsaName(wanted));
    state.counters["GFLOP/s"] = benchmark::Counter(forwardFlops(f.model) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_ForwardKernels)
    ->ArgsProduct({{1024, 2048}, {static_cast<int>(KernelIsa::Avx2), static_cast<int>(KernelIsa::Avx512)}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// A temperature change: new softmax for all heads (scores reused).
void BM_SoftmaxAllHeads(benchmark::State& state) {
    Fixture& f = fixture(static_cast<int>(state.range(0)));
    Settings hot = f.settings;
    hot.temperature = 0.5f;
    for (auto _ : state) {
        reweighAll(f.model, hot, f.forward);
        benchmark::DoNotOptimize(f.forward.heads[0].weights.data());
    }
}
BENCHMARK(BM_SoftmaxAllHeads)->Apply(sizes);

// What the user waits for after a temperature change: the visible head's softmax.
void BM_SoftmaxVisibleHead(benchmark::State& state) {
    Fixture& f = fixture(static_cast<int>(state.range(0)));
    Settings hot = f.settings;
    hot.temperature = 0.5f;
    for (auto _ : state) {
        weighHead(f.model, hot, f.forward.heads[0]);
        benchmark::DoNotOptimize(f.forward.heads[0].weights.data());
    }
}
BENCHMARK(BM_SoftmaxVisibleHead)->Apply(sizes);

// At most one texel per pixel of the heatmap, 770 pixels wide in the app's default window: the
// pooling factor the app uses for a T-token map (gfx::poolFactor).
int screenFactor(int T) { return (T + 769) / 770; }

// Causal toggle for the visible head: softmax under the mask and the texture-ready texels,
// pooled to the screen (masked cells marked). Second argument 0: softmax, then pooling (which
// reads the T x T weights back); 1: both in one pass, as the app does (softmaxPooled).
void BM_MaskToggleVisibleHead(benchmark::State& state) {
    const int T = static_cast<int>(state.range(0));
    const bool onePass = state.range(1) != 0;
    Fixture& f = fixture(T);
    Settings causal = f.settings;
    causal.causal = true;
    std::vector<float> texels;
    for (auto _ : state) {
        if (onePass) {
            weighHead(f.model, causal, f.forward.heads[0], screenFactor(T), texels);
        } else {
            weighHead(f.model, causal, f.forward.heads[0]);
            poolTexels(f.forward.heads[0].weights, causal, screenFactor(T), texels);
        }
        benchmark::DoNotOptimize(texels.data());
    }
}
BENCHMARK(BM_MaskToggleVisibleHead)->ArgsProduct({kSizes, {0, 1}})->Unit(benchmark::kMillisecond)->UseRealTime();

// Weights -> texels (causal), the CPU side of a heatmap update: second argument 1 pooled to the
// screen as the app does, 0 every cell.
void BM_Texels(benchmark::State& state) {
    const int T = static_cast<int>(state.range(0));
    Fixture& f = fixture(T);
    Settings causal = f.settings;
    causal.causal = true;
    const int factor = state.range(1) ? screenFactor(T) : 1;
    std::vector<float> texels;
    for (auto _ : state) {
        poolTexels(f.forward.heads[0].weights, causal, factor, texels);
        benchmark::DoNotOptimize(texels.data());
    }
}
BENCHMARK(BM_Texels)->ArgsProduct({kSizes, {0, 1}})->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

// Times one product of a T-token head as the forward pass computes it: pack() (the kernels'
// operands; nothing for Eigen's product), then product(r0, rows) for each block of rows, as
// attendHead splits them at d_k = 64; `out` is the result.
template <class Pack, class Product>
void timeByBlocks(benchmark::State& state, Eigen::Index T, const Pack& pack, const Product& product, const Mat& out) {
    const Eigen::Index block = std::max<Eigen::Index>(6, (1 << 17) / T / 6 * 6);
    for (auto _ : state) {
        pack();
        for (Eigen::Index r0 = 0; r0 < T; r0 += block) product(r0, std::min(block, T - r0));
        benchmark::DoNotOptimize(out.data());
    }
}

// One head's Q Kᵀ by blocks of rows, as the forward pass computes it: Eigen's product (second
// argument 0, which repacks kᵀ for every block) or the register-tiled kernel (1, k packed once).
void BM_ScoresByBlocks(benchmark::State& state) {
    Fixture& f = fixture(static_cast<int>(state.range(0)));
    const bool kernel = state.range(1) != 0;
    const HeadTensors& h = f.forward.heads[0];
    const Eigen::Index T = h.q.rows();
    Mat scores(T, h.k.rows());
    PackedKeys packed;
    timeByBlocks(
        state, T,
        [&] {
            if (kernel) packKeys(h.k, packed);
        },
        [&](Eigen::Index r0, Eigen::Index rows) {
            if (kernel) scoreRows(h.q.middleRows(r0, rows), h.k, packed, scores.middleRows(r0, rows));
            else scores.middleRows(r0, rows).noalias() = h.q.middleRows(r0, rows) * h.k.transpose();
        },
        scores);
    state.counters["GFLOP/s"] =
        benchmark::Counter(2.0 * static_cast<double>(T * T * h.q.cols()) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_ScoresByBlocks)->ArgsProduct({{1024, 2048}, {0, 1}})->Unit(benchmark::kMillisecond)->UseRealTime();

// A layer's causal attention at long T, as a model's pass computes it when it keeps no map: the
// blocks of rows of 4 query heads over 2 kv heads (d_h = the second argument) shared among the
// cores, each block either against every key at once (third argument 0: the row-block softmax,
// scoreRows, softmaxRows and weighValues over the block's whole rows, as few rows as keep them in
// cache) or a tile of 256 keys at a time with an online softmax (1: attendTiled, 96 rows a block).
// GFLOP/s counts the causal products' useful multiply-adds, 2 · 2 · d_h · T(T+1)/2 a head.
void BM_LongCausalAttention(benchmark::State& state) {
    const Eigen::Index T = state.range(0), dh = state.range(1);
    const bool tiled = state.range(2) != 0;
    constexpr int kQueryHeads = 4, kKvHeads = 2;
    const auto random = [](Eigen::Index rows, Eigen::Index cols, std::uint64_t seed) {
        Prng rng(seed);
        Mat m(rows, cols);
        for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = static_cast<float>(rng.uniform() * 2.0 - 1.0);
        return m;
    };
    std::vector<Mat> q, k, v;
    for (int h = 0; h < kQueryHeads; ++h) q.push_back(random(T, dh, 1 + h));
    std::vector<PackedKeys> keys(kKvHeads);
    std::vector<PackedColumns> values(kKvHeads);
    for (int g = 0; g < kKvHeads; ++g) {
        k.push_back(random(T, dh, 100 + g));
        v.push_back(random(T, dh, 200 + g));
        packKeys(k.back(), keys[static_cast<std::size_t>(g)]);
        packColumns(v.back(), values[static_cast<std::size_t>(g)]);
    }
    const float scale = 1.0f / std::sqrt(static_cast<float>(dh));
    const Eigen::Index block = tiled ? 96 : scoreBlockRows(T, 48), blocks = (T + block - 1) / block;
    Mat out(T, kQueryHeads * dh);
    std::vector<float> top(static_cast<std::size_t>(kQueryHeads * T)), sum(top.size());
    Settings causal;
    causal.causal = true;
    for (auto _ : state) {
#pragma omp parallel for schedule(dynamic)
        for (Eigen::Index task = 0; task < kQueryHeads * blocks; ++task) {
            const Eigen::Index h = task / blocks, r0 = (blocks - 1 - task % blocks) * block, n = std::min(block, T - r0);
            const std::size_t g = static_cast<std::size_t>(h * kKvHeads / kQueryHeads);
            auto o = out.block(r0, h * dh, n, dh);
            if (tiled) {
                attendTiled(q[static_cast<std::size_t>(h)].middleRows(r0, n), nullptr, k[g], keys[g], v[g], values[g], scale, 0, {}, r0,
                            top.data() + h * T + r0, sum.data() + h * T + r0, o);
                continue;
            }
            thread_local Mat scores, weights;
            const Eigen::Index width = r0 + n;
            scores.resize(n, width);
            weights.resize(n, width);
            scoreRows(q[static_cast<std::size_t>(h)].middleRows(r0, n), k[g].topRows(width), keys[g], scores);
            softmaxRows(scores, scale, causal, Eigen::Ref<Mat>(weights), r0);
            weighValues(weights, v[g].topRows(width), values[g], o, r0);
        }
        benchmark::DoNotOptimize(out.data());
    }
    const double flops = 4.0 * static_cast<double>(dh) * static_cast<double>(T) * static_cast<double>(T + 1) / 2.0 * kQueryHeads;
    state.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_LongCausalAttention)
    ->ArgsProduct({{2048, 8192, 32768}, {64, 128}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(1);

// One head's A·V by blocks of rows, as the forward pass computes it: Eigen's product (second
// argument 0, which repacks v for every block) or the register-tiled kernel (1, v packed once);
// third argument 1: under a causal mask (the kernel skips the keys past each block's last query).
void BM_ValuesByBlocks(benchmark::State& state) {
    Fixture& f = fixture(static_cast<int>(state.range(0)));
    const bool kernel = state.range(1) != 0, causal = state.range(2) != 0;
    Settings settings = f.settings;
    settings.causal = causal;
    HeadTensors h = f.forward.heads[0];
    weighHead(f.model, settings, h);
    const Eigen::Index T = h.q.rows();
    Mat out(T, h.v.cols());
    PackedColumns packed;
    timeByBlocks(
        state, T,
        [&] {
            if (kernel) packColumns(h.v, packed);
        },
        [&](Eigen::Index r0, Eigen::Index rows) {
            if (kernel) weighValues(h.weights.middleRows(r0, rows), h.v, packed, out.middleRows(r0, rows), causal ? r0 : -1);
            else out.middleRows(r0, rows).noalias() = h.weights.middleRows(r0, rows) * h.v;
        },
        out);
    // The full product's multiply-adds, so that the causal rows show the keys skipped as speed.
    state.counters["GFLOP/s"] =
        benchmark::Counter(2.0 * static_cast<double>(T * T * h.v.cols()) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_ValuesByBlocks)->ArgsProduct({{1024, 2048}, {0, 1}, {0, 1}})->Unit(benchmark::kMillisecond)->UseRealTime();

// concat · W_O, the forward pass's last product ([T, 512] · [512, 512]): Eigen's product on
// every core (second argument 0) or the register-tiled kernel on every core with W_O packed in
// the loop, as each forward pass packs it (1).
void BM_OutputProjection(benchmark::State& state) {
    Fixture& f = fixture(static_cast<int>(state.range(0)));
    const bool kernel = state.range(1) != 0;
    const Mat& concat = f.forward.concat;
    const Mat& wo = f.model.wo;
    Mat out(concat.rows(), wo.cols());
    PackedColumns packed;
    for (auto _ : state) {
        if (kernel) {
            packColumns(wo, packed);
            multiplyPacked(concat, nullptr, wo, packed, out);
        } else {
            out.noalias() = concat * wo;
        }
        benchmark::DoNotOptimize(out.data());
    }
    state.counters["GFLOP/s"] = benchmark::Counter(2.0 * static_cast<double>(concat.rows() * concat.cols() * wo.cols()) * 1e-9,
                                                   benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_OutputProjection)->ArgsProduct({{1024, 2048}, {0, 1}})->Unit(benchmark::kMillisecond)->UseRealTime();

// A projection of GPT-2's shapes with its weight packed once (as a checkpoint's are): x [T, k] ·
// W [k, n] by the register-tiled kernel on every core. Arguments T, k, n: c_attn (768 → 2304),
// attn.c_proj (768 → 768), mlp.c_fc (768 → 3072) and mlp.c_proj (3072 → 768) of GPT-2 small;
// the fourth, 1: each product reads the next of 16 weights (over 100 MB, as a pass reads its
// layers' weights from memory), 0: the same weight again (from the caches).
void BM_Projection(benchmark::State& state) {
    const Eigen::Index t = state.range(0), k = state.range(1), n = state.range(2);
    const std::size_t count = state.range(3) != 0 ? 16 : 1;
    const Mat x = Mat::Random(t, k);
    std::vector<PackedColumns> packed(count);
    const Mat w = Mat::Random(k, n) * 0.02f;
    for (PackedColumns& p : packed) packColumns(w, p);
    Mat out(t, n);
    std::size_t next = 0;
    for (auto _ : state) {
        multiplyPacked(x, nullptr, w, packed[next], out);
        next = (next + 1) % count;
        benchmark::DoNotOptimize(out.data());
    }
    state.counters["GFLOP/s"] =
        benchmark::Counter(2.0 * static_cast<double>(t * k * n) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Projection)
    ->ArgsProduct({{128, 512}, {768}, {768, 2304, 3072}, {0, 1}})
    ->ArgsProduct({{128, 512}, {3072}, {768}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// One core's share of a product that is not a whole number of tiles of six rows: x [rows, 768] ·
// W [768, 128] on one core (W, 384 KiB, stays in L2: what is timed is the strips), rows 6 to 12,
// then the instruction set (1: AVX2, 2: AVX-512). Rows 7 to 11 are a tile and a short tile of 1
// to 5 rows, what a core's share of the rows ends with when they are split evenly (128 rows on
// two cores are 64 each: ten tiles and four rows). If a short tile's rows cost what a tile's do,
// GFLOP/s is the same for all seven.
void BM_RowsPastTiles(benchmark::State& state) {
    const Eigen::Index rows = state.range(0), k = 768, n = 128;
    const auto isa = static_cast<KernelIsa>(state.range(1));
    const KernelIsaScope scope(state, isa);
    if (!scope.ok()) return;
    const Mat x = Mat::Random(rows, k), w = Mat::Random(k, n);
    PackedColumns packed;
    packColumns(w, packed);
    Mat out(rows, n);
    const int threads = omp_get_max_threads();
    omp_set_num_threads(1);  // the whole product is one share
    for (auto _ : state) {
        multiplyPacked(x, nullptr, w, packed, out);
        benchmark::DoNotOptimize(out.data());
    }
    omp_set_num_threads(threads);
    state.SetLabel(std::to_string(rows / 6) + " tile(s) and " + std::to_string(rows % 6) + " row(s), " + kernelIsaName(isa));
    state.counters["GFLOP/s"] =
        benchmark::Counter(2.0 * static_cast<double>(rows * k * n) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_RowsPastTiles)
    ->ArgsProduct({{6, 7, 8, 9, 10, 11, 12}, {static_cast<int>(KernelIsa::Avx2), static_cast<int>(KernelIsa::Avx512)}})
    ->UseRealTime();

#ifdef ATTNVIZ_KERNELS_AVX512
// One AVX-512 strip on one core, its block of weights in L2 (96 steps × 2048 columns, 768 KiB,
// the blocking derived for Zen 4) and its tile of rows in L1; argument: the rows, 6 (a 6 × 64
// strip: 24 multiply-adds per 256 bytes of weights read), 3 (a short tile: 12 multiply-adds per
// 256 bytes, the bytes per multiply-add a 6-row strip needs from L2 on a CPU with two full-width
// 512-bit units) or 12 (two tiles of six, 12 × 32: 24 per 128 bytes). If L2 keeps up, the rows
// of 3 run at the rate of the rows of 6.
void BM_StripFromL2(benchmark::State& state) {
    const KernelIsaScope scope(state, KernelIsa::Avx512);
    if (!scope.ok()) return;
    const int rows = static_cast<int>(state.range(0));
    constexpr KernelIndex kSteps = 96, kColumns = 2048, kPanels = kColumns / 16;
    std::vector<float> panels(static_cast<std::size_t>(kPanels * kSteps * 16), 0.5f), a(6 * kSteps, 0.25f), a2(6 * kSteps, 0.25f),
        out(6 * kColumns), out2(6 * kColumns);
    bool accumulate = false;
    for (auto _ : state) {
        StripArgs g{a.data(), 0, panels.data(), kSteps * 16, kPanels, kSteps, out.data(), kColumns, accumulate};
        if (rows == 12) g.a2 = a2.data(), g.out2 = out2.data();
        else g.rows = rows;
        avx512::strip(g);
        accumulate = true;
        benchmark::DoNotOptimize(out.data());
    }
    state.counters["GFLOP/s"] = benchmark::Counter(2.0 * rows * kColumns * kSteps * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
    state.counters["weights GB/s"] =
        benchmark::Counter(4.0 * static_cast<double>(kColumns * kSteps) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_StripFromL2)->Arg(6)->Arg(3)->Arg(12);
#endif

// A product over a checkpoint's weight kept in its element type, x [T, k] · W [k, n], on every
// core: argument 0 names the weight's form, 0: F32 by multiplyPacked (packColumns, the baseline),
// 1: F32, 2: F16, 3: BF16 by multiplyWeights (packWeights); then the instruction set (1: AVX2,
// 2: AVX-512) and T, k, n: Qwen2.5-0.5B's MLP (896 → 4864 and 4864 → 896) over 512 tokens, GPT-2
// small's mlp.c_fc over 128. The ratios of rows 1-3 to row 0 of one run are the cost of widening
// in registers.
void BM_MultiplyWeights(benchmark::State& state) {
    const int form = static_cast<int>(state.range(0));
    const auto isa = static_cast<KernelIsa>(state.range(1));
    const Eigen::Index t = state.range(2), k = state.range(3), n = state.range(4);
    const KernelIsaScope scope(state, isa);
    if (!scope.ok()) return;
    const Mat x = Mat::Random(t, k);
    const Mat w = Mat::Random(k, n) * 0.02f;
    PackedColumns packed;
    PackedWeights weights;
    const WeightType type = form == 2 ? WeightType::F16 : form == 3 ? WeightType::BF16 : WeightType::F32;
    if (form == 0) {
        packColumns(w, packed);
    } else {  // w's values in the form's element type (truncated: timing only)
        std::vector<std::uint16_t> halves(static_cast<std::size_t>(k * n));
        for (std::size_t i = 0; i < halves.size(); ++i)
            halves[i] = type == WeightType::F16 ? static_cast<std::uint16_t>(0x2000U + (i * 7919U) % 0x1800U)
                                                : static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(w.data()[i]) >> 16);
        packWeights(type == WeightType::F32 ? static_cast<const void*>(w.data()) : halves.data(), type, k, n, false, weights);
    }
    Mat out(t, n);
    for (auto _ : state) {
        if (form == 0) multiplyPacked(x, nullptr, w, packed, out);
        else multiplyWeights(x, nullptr, weights, out);
        benchmark::DoNotOptimize(out.data());
    }
    state.SetLabel(std::string(form == 0   ? "packed F32"
                               : form == 1 ? "weights F32"
                               : form == 2 ? "weights F16"
                                           : "weights BF16") +
                   ", " + kernelIsaName(isa));
    state.counters["GFLOP/s"] =
        benchmark::Counter(2.0 * static_cast<double>(t * k * n) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_MultiplyWeights)
    ->ArgsProduct({{0, 1, 2, 3}, {static_cast<int>(KernelIsa::Avx2), static_cast<int>(KernelIsa::Avx512)}, {512}, {896}, {4864}})
    ->ArgsProduct({{0, 1, 2, 3}, {static_cast<int>(KernelIsa::Avx2), static_cast<int>(KernelIsa::Avx512)}, {512}, {4864}, {896}})
    ->ArgsProduct({{0, 1, 2, 3}, {static_cast<int>(KernelIsa::Avx2), static_cast<int>(KernelIsa::Avx512)}, {128}, {768}, {3072}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The blocking (blocking.hpp) against others, on GPT-2 small's products at T = 512: argument 0
// is the product (0: x · W_qkv 768 → 2304, 1: the MLP's up 768 → 3072, 2: its down 3072 → 768),
// 1 and 2 the depth and columns (0: the blocking derived from this CPU's caches), 3 the
// instruction set (1: AVX2, 2: AVX-512), 4 the tiles of six rows a strip sums at once (AVX-512:
// 1 for 6 × 64, 2 for 12 × 32).
// Every blocking gives the same bits; this is only about time.
void BM_Blocking(benchmark::State& state) {
    constexpr Eigen::Index kRows = 512;
    const Eigen::Index shapes[3][2] = {{768, 2304}, {768, 3072}, {3072, 768}};
    const auto which = static_cast<std::size_t>(state.range(0));
    const Eigen::Index k = shapes[which][0], n = shapes[which][1];
    const auto isa = static_cast<KernelIsa>(state.range(3));
    const KernelIsaScope scope(state, isa);
    if (!scope.ok()) return;
    const KernelBlocking derived = kernelBlocking();
    KernelBlocking chosen = derived;
    if (state.range(1) > 0) chosen.depth = state.range(1);
    if (state.range(2) > 0) chosen.columns = state.range(2);
    chosen.rowTiles = static_cast<int>(state.range(4));
    const Mat x = Mat::Random(kRows, k);
    const Mat w = Mat::Random(k, n) * 0.02f;
    PackedWeights weights;
    packWeights(w.data(), WeightType::F32, k, n, false, weights);
    Mat out(kRows, n);
    useKernelBlocking(chosen);
    for (auto _ : state) {
        multiplyWeights(x, nullptr, weights, out);
        benchmark::DoNotOptimize(out.data());
    }
    useKernelBlocking({});
    state.SetLabel(std::string(kernelIsaName(isa)) + ", depth " + std::to_string(chosen.depth) + ", columns " +
                   std::to_string(chosen.columns) + ", " + std::to_string(6 * chosen.rowTiles) + " rows" +
                   (chosen == derived ? " (derived)" : ""));
    state.counters["GFLOP/s"] =
        benchmark::Counter(2.0 * static_cast<double>(kRows * k * n) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Blocking)
    ->ArgsProduct({{0, 1, 2}, {0, 96, 256, 768}, {0}, {static_cast<int>(KernelIsa::Avx2), static_cast<int>(KernelIsa::Avx512)}, {1}})
    ->ArgsProduct({{0, 1, 2}, {0}, {512, 4096}, {static_cast<int>(KernelIsa::Avx2), static_cast<int>(KernelIsa::Avx512)}, {1}})
    ->ArgsProduct({{0, 1, 2}, {0, 256}, {0}, {static_cast<int>(KernelIsa::Avx512)}, {2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// packWeights over an nn.Linear weight [n, k] (transposed: as a Llama or Qwen checkpoint stores
// it) of BF16, argument 1, or GPT-2's Conv1D [k, n] (0), on every core: the source's GB/s, which
// bounds opening a checkpoint.
void BM_PackWeights(benchmark::State& state) {
    const bool transposed = state.range(0) != 0;
    const Eigen::Index k = 896, n = 4864;
    std::vector<std::uint16_t> src(static_cast<std::size_t>(k * n));
    for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::uint16_t>(0x3C00U + i % 977U);
    PackedWeights packed;
    for (auto _ : state) {
        packWeights(src.data(), WeightType::BF16, k, n, transposed, packed);
        benchmark::DoNotOptimize(packed.panels.data());
    }
    state.counters["GB/s"] = benchmark::Counter(static_cast<double>(src.size() * 2) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_PackWeights)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

// The next token's logits, on every core: argument 1 F32, GPT-2 small's tied embedding (50,257
// rows × 768, 154 MB); 2 F16, 3 BF16, Qwen2.5-0.5B's (151,936 rows × 896, 272 MB); read once
// from memory · the last hidden state. Second argument: the instruction set.
void BM_MultiplyRowsByVector(benchmark::State& state) {
    const WeightType type = state.range(0) == 1 ? WeightType::F32 : state.range(0) == 2 ? WeightType::F16 : WeightType::BF16;
    const auto isa = static_cast<KernelIsa>(state.range(1));
    const KernelIsaScope scope(state, isa);
    if (!scope.ok()) return;
    const bool gpt2 = type == WeightType::F32;
    const Eigen::Index rows = gpt2 ? 50257 : 151936, cols = gpt2 ? 768 : 896;
    // Halves or bfloat16s, or pairs of them as floats (of magnitude 2^-31 to 2^-29).
    std::vector<std::uint16_t> src(static_cast<std::size_t>(rows * cols) * (gpt2 ? 2 : 1));
    for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::uint16_t>(0x3000U + i % 977U);
    const Vec x = Vec::Random(cols);
    std::vector<float> out(static_cast<std::size_t>(rows));
    for (auto _ : state) {
        multiplyRowsByVector(src.data(), type, rows, cols, x.data(), out.data());
        benchmark::DoNotOptimize(out.data());
    }
    state.SetLabel(std::string(gpt2 ? "F32" : type == WeightType::F16 ? "F16" : "BF16") + ", " + kernelIsaName(isa));
    state.counters["GB/s"] = benchmark::Counter(static_cast<double>(src.size() * 2) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_MultiplyRowsByVector)
    ->ArgsProduct({{1, 2, 3}, {static_cast<int>(KernelIsa::Avx2), static_cast<int>(KernelIsa::Avx512)}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The overflow check on A·V and the output (a T × d_model matrix): Eigen's allFinite() (argument
// 0), which tests a coefficient at a time, or the sum of x · 0 (1), which vectorises and is 0
// exactly when every coefficient is finite.
void BM_FiniteCheck(benchmark::State& state) {
    const Mat m = Mat::Random(2048, kDModel);
    const bool summed = state.range(0) != 0;
    for (auto _ : state) {
        const bool finite = summed ? (m.array() * 0.0f).sum() == 0.0f : m.allFinite();
        benchmark::DoNotOptimize(finite);
    }
}
BENCHMARK(BM_FiniteCheck)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

// Attention rollout of 12 causal layers × 12 heads at T (argument 0): the blocked causal products
// (argument 1 = 0) against Eigen's dense product of the same layers' Â (1), R for the last layer.
void BM_Rollout(benchmark::State& state) {
    const auto t = static_cast<Eigen::Index>(state.range(0));
    const bool dense = state.range(1) != 0;
    constexpr int kLayers = 12, kHeads = 12;
    Mat a = Mat::Zero(t, t);  // one causal map shared by every head: rollout's work does not depend on the numbers
    for (Eigen::Index i = 0; i < t; ++i) a.row(i).head(i + 1).setConstant(1.0f / static_cast<float>(i + 1));
    AttentionMaps maps;
    maps.layers = kLayers;
    maps.heads = kHeads;
    maps.queries = maps.keys = t;
    Settings causal;
    causal.causal = true;
    maps.settings.assign(kLayers, causal);
    maps.weights = [&](int, int) { return MatRef(a); };
    for (auto _ : state) {
        if (dense) {
            Mat r = rolloutLayer(maps, 0, {});
            for (int l = 1; l < kLayers; ++l) r = (rolloutLayer(maps, l, {}) * r).eval();
            benchmark::DoNotOptimize(r.data());
        } else {
            const Mat r = attentionRollout(maps, kLayers - 1, {});
            benchmark::DoNotOptimize(r.data());
        }
    }
}
BENCHMARK(BM_Rollout)->ArgsProduct({{512, 2048}, {0, 1}})->Unit(benchmark::kMillisecond)->UseRealTime();

// One update of the query–key map: a head's q and k [T, d_h] (argument 0: T, 1: d_h) translated,
// scaled and projected on their first two principal components (core::queryKeyMap), what the
// window does once when the pass, the layer or the head changes.
void BM_QueryKeyMap(benchmark::State& state) {
    const auto t = static_cast<Eigen::Index>(state.range(0)), d = static_cast<Eigen::Index>(state.range(1));
    Prng rng(37);
    Mat q(t, d), k(t, d);
    for (Eigen::Index i = 0; i < t; ++i)
        for (Eigen::Index j = 0; j < d; ++j) {
            q(i, j) = static_cast<float>(rng.normal());
            k(i, j) = 0.5f + 0.3f * static_cast<float>(rng.normal());
        }
    for (auto _ : state) {
        const QueryKeyMap map = queryKeyMap(q, k);
        benchmark::DoNotOptimize(map.points.data());
    }
}
BENCHMARK(BM_QueryKeyMap)->ArgsProduct({{4096}, {64, 128}})->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK_MAIN();
