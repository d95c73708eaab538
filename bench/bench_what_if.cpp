// Google Benchmark of a what-if on a GPT-2-small-shaped checkpoint (12 layers × 12 heads, d_model
// 768, the tests' small vocabulary, random weights) written to a temporary folder, over T = 128
// tokens: the whole pass, then decoder::forwardEdited with one head ablated in layer 11 (the last:
// one layer run again), in layer 6, and in layer 0 (every layer), and a token hidden (every layer,
// with the masked softmax). Each edited row reports its share of the whole pass (share_of_pass),
// measured in the same run, and the layers it ran.
// Run: ./build/attnviz_what_if_bench
#include "core/models/decoder/decoder.hpp"
#include "core/models/loaded_model.hpp"
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

constexpr int kTokens = 128;

double millisecondsSince(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

struct Gpt2Small {
    std::filesystem::path folder;
    std::shared_ptr<const decoder::Checkpoint> model;
    std::vector<int> ids;
    decoder::Run base;
    double passMs = 0;  // the median of 9 whole passes, timed when the fixture is made

    Gpt2Small() {
        folder = std::filesystem::temp_directory_path() / ("attnviz-bench-what-if-" + std::to_string(::getpid()));
        std::filesystem::create_directories(folder);
        sizedgpt2::writeCheckpoint(folder, {.layers = 12, .heads = 12, .embd = 768, .positions = 1024});
        model = openCheckpoint(folder.string());
        Prng prng(3);
        for (int t = 0; t < kTokens; ++t) ids.push_back(static_cast<int>(prng.nextU64() % 259));
        std::vector<double> times;
        for (int k = 0; k < 9; ++k) {
            const auto start = std::chrono::steady_clock::now();
            base = decoder::forward(*model, ids);
            times.push_back(millisecondsSince(start));
        }
        std::sort(times.begin(), times.end());
        passMs = times[4];
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

// The whole pass over 128 tokens, every layer's every head's weights kept.
void BM_Gpt2SmallForward(benchmark::State& state) {
    Gpt2Small& f = gpt2Small();
    for (auto _ : state) benchmark::DoNotOptimize(decoder::forward(*f.model, f.ids));
}
BENCHMARK(BM_Gpt2SmallForward)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

// One head ablated (zeroed) in layer range(0): the layers below are viewed in the base pass.
void BM_Gpt2SmallAblate(benchmark::State& state) {
    Gpt2Small& f = gpt2Small();
    const auto layer = static_cast<int>(state.range(0));
    const std::vector<decoder::Intervention> edits = {{decoder::Intervention::Kind::ZeroHead, layer, 5, 0}};
    double totalMs = 0;
    int ran = 0;
    for (auto _ : state) {
        const auto start = std::chrono::steady_clock::now();
        const decoder::Run run = decoder::forwardEdited(*f.model, f.base, edits);
        totalMs += millisecondsSince(start);
        ran = run.layerCount() - run.computedFrom();
        benchmark::DoNotOptimize(run.logits.data());
    }
    state.counters["pass_ms"] = f.passMs;
    state.counters["layers_run"] = ran;
    state.counters["share_of_pass"] = totalMs / static_cast<double>(state.iterations()) / f.passMs;
}
BENCHMARK(BM_Gpt2SmallAblate)->Arg(11)->Arg(6)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

// A token hidden from every layer's keys: every layer runs again, through the masked softmax.
void BM_Gpt2SmallHideToken(benchmark::State& state) {
    Gpt2Small& f = gpt2Small();
    const std::vector<decoder::Intervention> edits = {{decoder::Intervention::Kind::HideToken, 0, 0, kTokens / 2}};
    double totalMs = 0;
    for (auto _ : state) {
        const auto start = std::chrono::steady_clock::now();
        benchmark::DoNotOptimize(decoder::forwardEdited(*f.model, f.base, edits).logits.data());
        totalMs += millisecondsSince(start);
    }
    state.counters["pass_ms"] = f.passMs;
    state.counters["share_of_pass"] = totalMs / static_cast<double>(state.iterations()) / f.passMs;
}
BENCHMARK(BM_Gpt2SmallHideToken)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

}  // namespace

BENCHMARK_MAIN();
