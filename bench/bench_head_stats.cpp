// Google Benchmark of the head statistics against the pass they summarise: a GPT-2-small-shaped
// checkpoint (12 layers × 12 heads, d_model 768, the tests' small vocabulary) written to a
// temporary folder, its forward pass over T = 512 tokens, then allHeadStats over that pass's
// 144 kept maps, and the window's sweep (statistics, thumbnails, with and without each head's
// profile). The statistics' rows report their share of the pass (share_of_pass), measured
// in the same run.
// Run: ./build/attnviz_head_stats_bench
#include "core/attention/head_stats.hpp"
#include "core/models/decoder/decoder.hpp"
#include "core/models/loaded_model.hpp"
#include "core/models/run_maps.hpp"
#include "tests/sized_gpt2.hpp"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <vector>

#include <unistd.h>

using namespace attnviz;
using namespace attnviz::core;

namespace {

constexpr int kTokens = 512;

double millisecondsSince(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

struct Gpt2Small {
    std::filesystem::path folder;
    std::shared_ptr<const decoder::Checkpoint> model;
    std::vector<int> ids;
    decoder::Run run;
    double passMs = 0;  // the median of 3 passes, timed when the fixture is made

    Gpt2Small() {
        folder = std::filesystem::temp_directory_path() / ("attnviz-bench-gpt2-small-" + std::to_string(::getpid()));
        std::filesystem::create_directories(folder);
        sizedgpt2::writeCheckpoint(folder, {.layers = 12, .heads = 12, .embd = 768, .positions = 1024});
        model = openCheckpoint(folder.string());
        Prng prng(3);
        for (int t = 0; t < kTokens; ++t) ids.push_back(static_cast<int>(prng.nextU64() % 259));
        std::vector<double> times;
        for (int k = 0; k < 3; ++k) {
            const auto start = std::chrono::steady_clock::now();
            run = decoder::forward(*model, ids);
            times.push_back(millisecondsSince(start));
        }
        std::sort(times.begin(), times.end());
        passMs = times[1];
    }
    ~Gpt2Small() {
        std::error_code ec;
        std::filesystem::remove_all(folder, ec);
    }
    Gpt2Small(const Gpt2Small&) = delete;
    Gpt2Small& operator=(const Gpt2Small&) = delete;
};

Gpt2Small& gpt2Small() {
    static Gpt2Small fixture;
    return fixture;
}

// The forward pass over 512 tokens, every layer's every head's weights kept.
void BM_Gpt2SmallForward(benchmark::State& state) {
    Gpt2Small& f = gpt2Small();
    for (auto _ : state) benchmark::DoNotOptimize(decoder::forward(*f.model, f.ids));
}
BENCHMARK(BM_Gpt2SmallForward)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

// Every head's statistics of that pass (argument: 1 = the first key left out).
void BM_Gpt2SmallHeadStats(benchmark::State& state) {
    Gpt2Small& f = gpt2Small();
    const AttentionMaps maps = runMaps(f.run, f.model->config());
    const HeadStatsOptions options{.skipFirstKey = state.range(0) != 0};
    double totalMs = 0;
    for (auto _ : state) {
        const auto start = std::chrono::steady_clock::now();
        benchmark::DoNotOptimize(allHeadStats(maps, options));
        totalMs += millisecondsSince(start);
    }
    state.counters["pass_ms"] = f.passMs;
    state.counters["share_of_pass"] = totalMs / static_cast<double>(state.iterations()) / f.passMs;
}
BENCHMARK(BM_Gpt2SmallHeadStats)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

// The model view's and the statistics' one sweep as the window makes it: statistics and
// thumbnails, and (argument 1) every head's profile beside them: what the profiles add.
void BM_Gpt2SmallSweep(benchmark::State& state) {
    Gpt2Small& f = gpt2Small();
    const AttentionMaps maps = runMaps(f.run, f.model->config());
    const HeadSweepOptions options{
        .stats = {}, .everyKey = false, .factor = thumbnailFactor(maps.queries, maps.keys), .profiles = state.range(0) != 0};
    double totalMs = 0;
    for (auto _ : state) {
        const auto start = std::chrono::steady_clock::now();
        benchmark::DoNotOptimize(sweepHeads(maps, options));
        totalMs += millisecondsSince(start);
    }
    state.counters["pass_ms"] = f.passMs;
    state.counters["share_of_pass"] = totalMs / static_cast<double>(state.iterations()) / f.passMs;
}
BENCHMARK(BM_Gpt2SmallSweep)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

}  // namespace

BENCHMARK_MAIN();
