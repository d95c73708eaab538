// The retrieval test (retrieval.hpp): one lean pass per length and depth; the repeat's rows of each
// head made again from the pass's q, k and log-sum-exp, read at the key after the first copy.
#include "core/models/retrieval.hpp"

#include "core/base/error.hpp"
#include "core/base/format.hpp"
#include "core/base/prng.hpp"
#include "core/models/induction.hpp"

#include <cmath>
#include <string>
#include <unordered_set>

namespace attnviz::core {

std::size_t RetrievalScores::index(std::size_t length, std::size_t depth, int layer, int head) const {
    const auto lh = static_cast<std::size_t>(layers) * static_cast<std::size_t>(heads);
    return (length * settings.depths.size() + depth) * lh + static_cast<std::size_t>(layer) * static_cast<std::size_t>(heads) +
           static_cast<std::size_t>(head);
}

double RetrievalScores::headMean(const std::vector<double>& scores, std::size_t head) const {
    const auto lh = static_cast<std::size_t>(layers) * static_cast<std::size_t>(heads);
    const std::size_t cells = settings.lengths.size() * settings.depths.size();
    double sum = 0;
    for (std::size_t c = 0; c < cells; ++c) sum += scores[c * lh + head];
    return sum / static_cast<double>(cells);
}

std::vector<double> RetrievalScores::headMeans(const std::vector<double>& scores) const {
    std::vector<double> means(static_cast<std::size_t>(layers) * static_cast<std::size_t>(heads));
    for (std::size_t k = 0; k < means.size(); ++k) means[k] = headMean(scores, k);
    return means;
}

void checkRetrievalSettings(const decoder::Checkpoint& model, const RetrievalSettings& settings) {
    const int offset = bosOffset(model), positions = model.config().nPositions;
    if (!model.config().causal)
        throw InputError("retrieval test", "scores a decoder's heads reading back along the text; this " + model.config().family +
                                               " model reads every key in both directions");
    if (settings.segment < 2 || settings.segment > kMaxRetrievalSegment)
        throw InputError("retrieval test", "expected a segment of 2 to " + std::to_string(kMaxRetrievalSegment) + " tokens, got " +
                                               std::to_string(settings.segment));
    const auto counted = [](std::size_t n, const char* what) {
        if (n < 1 || n > static_cast<std::size_t>(kMaxRetrievalCells))
            throw InputError("retrieval test", std::string("expected 1 to ") + std::to_string(kMaxRetrievalCells) + " " + what + ", got " +
                                                   std::to_string(n));
    };
    counted(settings.lengths.size(), "lengths");
    counted(settings.depths.size(), "depths");
    const long long shortest = offset + 2LL * settings.segment;
    for (const int length : settings.lengths) {
        if (length < shortest)
            throw InputError("retrieval test", "a length of " + std::to_string(length) + " tokens cannot hold two copies of " +
                                                   std::to_string(settings.segment) + (offset ? " after the BOS" : "") + " (at least " +
                                                   std::to_string(shortest) + ")");
        if (length > positions)
            throw InputError("retrieval test", "a length of " + std::to_string(length) + " tokens exceeds the model's " +
                                                   std::to_string(positions) + " positions");
    }
    for (const double depth : settings.depths)
        if (!(depth >= 0 && depth <= 1)) throw InputError("retrieval test", "expected depths from 0 to 1, got " + formatNumber(depth));
}

RetrievalCase retrievalCase(const decoder::Checkpoint& model, const RetrievalSettings& settings, std::size_t length, std::size_t depth) {
    const std::vector<int> pool = ordinaryTokens(model, "retrieval test");
    const int offset = bosOffset(model), n = settings.segment;
    RetrievalCase c;
    c.length = settings.lengths.at(length);
    c.depth = settings.depths.at(depth);
    c.first = offset + static_cast<int>(std::lround(c.depth * (c.length - offset - 2 * n)));
    Prng prng = Prng::stream(settings.seed, "retrieval " + std::to_string(length) + " " + std::to_string(depth));
    const auto draw = [&] { return pool[static_cast<std::size_t>(prng.nextU64() % pool.size())]; };
    c.ids.resize(static_cast<std::size_t>(c.length));
    if (offset) c.ids[0] = *model.tokenizer().bosId();
    const auto first = static_cast<std::size_t>(c.first), repeat = static_cast<std::size_t>(c.length - n);
    for (std::size_t k = 0; k < static_cast<std::size_t>(n); ++k) {
        const int id = draw();
        c.ids[first + k] = id;
        c.ids[repeat + k] = id;
    }
    // The filler holds none of the segment's ids (when the vocabulary has twice as many others):
    // its only earlier copy is the first.
    const std::unordered_set<int> segment(c.ids.begin() + c.first, c.ids.begin() + c.first + n);
    const bool apart = pool.size() > 2 * segment.size() + 1;
    for (int i = offset; i < c.length - n; ++i) {
        if (i >= c.first && i < c.first + n) continue;
        int id = draw();
        while (apart && segment.contains(id)) id = draw();
        c.ids[static_cast<std::size_t>(i)] = id;
    }
    return c;
}

RetrievalScores retrievalScores(const decoder::Checkpoint& model, const RetrievalSettings& settings, Progress* progress) {
    checkRetrievalSettings(model, settings);
    const decoder::Config& config = model.config();
    RetrievalScores out;
    out.settings = settings;
    out.layers = config.nLayer;
    out.heads = config.nHead;
    const std::size_t size =
        settings.lengths.size() * settings.depths.size() * static_cast<std::size_t>(config.nLayer) * static_cast<std::size_t>(config.nHead);
    out.mass.assign(size, 0.0);
    out.top1.assign(size, 0.0);
    std::uint64_t tokens = 0;
    for (const int length : settings.lengths) tokens += static_cast<std::uint64_t>(length) * settings.depths.size();
    expect(progress, tokens);
    const int n = settings.segment;
    for (std::size_t li = 0; li < settings.lengths.size(); ++li)
        for (std::size_t di = 0; di < settings.depths.size(); ++di) {
            const RetrievalCase c = retrievalCase(model, settings, li, di);
            const decoder::Run run = decoder::forward(model, c.ids, progress, decoder::PassMaps::Lean);
            Mat rows(n, c.length);
            for (int l = 0; l < config.nLayer; ++l)
                for (int h = 0; h < config.nHead; ++h) {
                    decoder::mapWeightRows(run, config, l, h, c.length - n, rows);
                    double mass = 0;
                    int hits = 0;
                    for (int k = 0; k < n; ++k) {
                        const Eigen::Index target = c.first + k + 1;
                        Eigen::Index best = 0;
                        rows.row(k).maxCoeff(&best);
                        mass += rows(k, target);
                        hits += best == target ? 1 : 0;
                    }
                    const std::size_t at = out.index(li, di, l, h);
                    out.mass[at] = mass / n;
                    out.top1[at] = static_cast<double>(hits) / n;
                }
            advance(progress, static_cast<std::uint64_t>(c.length));
        }
    return out;
}

}  // namespace attnviz::core
