#include "core/models/decoder/generate.hpp"

#include "core/base/error.hpp"
#include "core/base/prng.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

namespace attnviz::core::decoder {

int chooseToken(const Vec& logits, const Sampling& sampling, double uniform) {
    Eigen::Index best = 0;
    logits.maxCoeff(&best);  // the first of equal largest: the lowest id
    if (sampling.greedy) return static_cast<int>(best);
    const Eigen::Index n = logits.size();
    const auto k = static_cast<std::ptrdiff_t>(sampling.topK > 0 ? std::min<Eigen::Index>(sampling.topK, n) : n);
    std::vector<int> order(static_cast<std::size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
                      [&](int a, int b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
    // softmax over the k kept, in double, most likely first; the draw walks the cumulative sum
    const double top = logits[order[0]];
    std::vector<double> weights(static_cast<std::size_t>(k));
    double sum = 0;
    for (std::ptrdiff_t i = 0; i < k; ++i) {
        weights[static_cast<std::size_t>(i)] = std::exp((logits[order[static_cast<std::size_t>(i)]] - top) / sampling.temperature);
        sum += weights[static_cast<std::size_t>(i)];
    }
    double at = uniform * sum;
    std::ptrdiff_t last = 0;  // the last token with any weight: where rounding may leave a draw of 1
    for (std::ptrdiff_t i = 0; i < k; ++i) {
        if (weights[static_cast<std::size_t>(i)] <= 0) continue;
        last = i;
        at -= weights[static_cast<std::size_t>(i)];
        if (at <= 0) return order[static_cast<std::size_t>(i)];
    }
    return order[static_cast<std::size_t>(last)];
}

double generationDraw(std::uint64_t seed, int step) { return Prng::stream(seed, "generate " + std::to_string(step)).uniform(); }

int nextToken(const Vec& logits, const Sampling& sampling, int step) {
    return chooseToken(logits, sampling, sampling.greedy ? 1.0 : generationDraw(sampling.seed, step));
}

std::vector<int> generate(const Checkpoint& model, const Run& start, int count, const Sampling& sampling, Run* last, Progress* progress) {
    const Config& cfg = model.config();
    const char* where = "generate";
    if (!cfg.causal) throw InputError(where, "an encoder reads its text in both directions and generates no tokens");
    if (!start.edits.empty())
        throw InputError(where, "a what-if pass is not generated from (its edits would not follow the new tokens); clear the edits first");
    if (count < 1) throw InputError(where, "expected 1 or more tokens, got " + std::to_string(count));
    if (!sampling.greedy && !(sampling.temperature > 0.0f && std::isfinite(sampling.temperature)))
        throw InputError(where, "the temperature must be above 0");
    if (sampling.topK < 0) throw InputError(where, "top-k must be 0 (every token) or more");
    if (start.logits.size() == 0) throw InputError(where, "the pass predicts no next token");
    std::vector<int> ids = start.ids, made;
    Run run = start;
    const std::optional<int> end = model.tokenizer().endOfText();
    expect(progress, static_cast<std::uint64_t>(count));
    for (int step = 0; step < count && static_cast<Eigen::Index>(ids.size()) < cfg.longestInput(); ++step) {
        const int next = nextToken(run.logits, sampling, step);
        ids.push_back(next);
        made.push_back(next);
        run = forwardAppend(model, ids, run);
        advance(progress, 1);
        if (end && next == *end) break;
    }
    if (last) *last = std::move(run);
    return made;
}

}  // namespace attnviz::core::decoder
