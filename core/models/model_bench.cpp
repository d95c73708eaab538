#include "core/models/model_bench.hpp"

#include "core/attention/head_stats.hpp"
#include "core/models/loaded_model.hpp"
#include "core/models/run_maps.hpp"
#include "core/scenario/bench.hpp"

namespace attnviz::core {

double passFlops(const decoder::Config& c, long long tokens) {
    const double t = static_cast<double>(tokens), d = c.nEmbd, heads = c.qWidth();
    const double mlp = (c.gatedMlp ? 3.0 : 2.0) * c.nInner;
    const double perLayer = 2.0 * t * d * (c.qkvWidth() + heads + mlp) + 4.0 * t * t * heads;
    return c.nLayer * perLayer + 2.0 * d * c.vocabSize;
}

ModelBenchResult benchmarkModel(const decoder::Checkpoint& model, const std::vector<int>& ids, double seconds, decoder::PassMaps maps) {
    const decoder::Config& c = model.config();
    ModelBenchResult r;
    r.tokens = static_cast<long long>(ids.size());
    r.layers = c.nLayer;
    r.heads = c.nHead;
    r.dModel = c.nEmbd;
    decoder::Run run = decoder::forward(model, ids, nullptr, maps);  // warm up: pages of the mapped file, the allocator
    std::size_t runs = 0;
    r.forwardMs = medianMs(
        seconds,
        [&] {
            run = {};  // the store of the pass before is given back first, as a new sentence does
            run = decoder::forward(model, ids, nullptr, maps), ++runs;
        },
        5, 1000);
    r.runs = static_cast<int>(runs);
    r.gflops = passFlops(c, r.tokens) / (r.forwardMs * 1e6);
    if (ids.size() > 1) {
        // Typing a token at the end: the pass over T - 1 is extended in its own store (the
        // appended pass of the round before is given back first, as the state it replaces is).
        // The pass over T - 1 was itself typed, so its store has room (a whole pass's has none).
        const std::vector<int> shorter(ids.begin(), ids.end() - 1);
        const decoder::Run prefix =
            shorter.size() > 1
                ? decoder::forwardAppend(model, shorter, decoder::forward(model, {shorter.begin(), shorter.end() - 1}, nullptr, maps))
                : decoder::forward(model, shorter, nullptr, maps);
        r.appendMs = medianMs(
            seconds * 0.5,
            [&] {
                run = {};
                run = decoder::forwardAppend(model, ids, prefix);
            },
            5, 1000);
    }
    // The views of every layer: every head's statistics and thumbnails, in one sweep over the maps
    // of the last pass (made again on demand, or read where the pass keeps them).
    const AttentionMaps every = runMaps(run, c);
    const int factor = thumbnailFactor(r.tokens, r.tokens);  // the model view's thumbnails
    r.sweepMs = medianMs(
        seconds * 0.5, [&] { sweepHeads(every, {.stats = {}, .everyKey = false, .factor = factor}); }, 3, 100);
    const int last = c.nLayer - 1;
    PoolMapOptions pooled;
    pooled.factor = factorFor(r.tokens, r.tokens, 1024);
    r.poolMs = medianMs(
        seconds * 0.25, [&] { poolMap(every, last, 0, pooled); }, 3, 100);
    const Eigen::Index zoom = std::min<Eigen::Index>(256, r.tokens);
    PoolMapOptions region;  // factor 1
    region.firstRow = region.firstCol = r.tokens - zoom;
    region.rows = region.cols = zoom;
    r.zoomMs = medianMs(
        seconds * 0.25, [&] { poolMap(every, last, 0, region); }, 3, 100);
    r.maps = maps;
    r.keptBytes = keptModelBytes(c, r.tokens, maps);
    return r;
}

}  // namespace attnviz::core
