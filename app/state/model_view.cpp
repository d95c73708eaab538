#include "app/state/model_view.hpp"

#include "app/state/source.hpp"

#include <algorithm>

namespace attnviz::app {

std::optional<std::vector<double>> summaryScores(const AppState& state, core::HeadScore score) {
    const HeadSummary& s = state.headSummary;
    if (score == core::HeadScore::InductionTest) {
        const InductionSnapshot snap = state.induction->snapshot();
        const std::vector<double>* test = inductionTestScores(snap, checkpointOf(state));
        if (!test || test->size() != s.stats.size()) return std::nullopt;
        return *test;
    }
    if (score == core::HeadScore::RetrievalTest) {
        const RetrievalSnapshot snap = state.retrieval->snapshot();
        const core::RetrievalScores* test = retrievalTestScores(snap, checkpointOf(state));
        if (!test) return std::nullopt;
        std::vector<double> means = test->headMeans(test->mass);
        if (means.size() != s.stats.size()) return std::nullopt;
        return means;
    }
    if (score == core::HeadScore::Moved) {
        if (!state.compare.ready() || state.compare.moved.size() != s.stats.size()) return std::nullopt;
        return state.compare.moved;
    }
    std::vector<double> out;
    out.reserve(s.stats.size());
    for (const core::HeadStats& h : s.stats) out.push_back(core::headScore(h, score));
    return out;
}

TileLayout modelViewLayout(const AppState& state, const ModelViewOptions& options) {
    const HeadSummary& s = state.headSummary;
    TileLayout out;
    const bool wanted = options.order != core::TileOrder::Natural || options.tint;
    if (wanted) out.scores = summaryScores(state, options.score);
    const core::TileOrder order = out.scores ? options.order : core::TileOrder::Natural;
    out.order = core::tileOrder(s.layers, s.heads, order, out.scores.value_or(std::vector<double>{}));
    if (out.scores)
        out.rule = core::orderRule(order, options.tint ? std::optional<core::HeadScore>(options.score) : std::nullopt, options.score);
    return out;
}

std::vector<float> thumbnailAtlas(const HeadSummary& summary, const std::vector<int>& order, core::BlockPooling pooling) {
    const auto side = static_cast<std::size_t>(summary.side), sideKeys = static_cast<std::size_t>(summary.sideKeys);
    const auto heads = static_cast<std::size_t>(summary.heads), width = heads * sideKeys;
    std::vector<float> atlas(static_cast<std::size_t>(summary.layers) * side * width);
    for (std::size_t k = 0; k < order.size(); ++k) {
        const float* tile = summary.thumbnail(order[k], pooling);
        const std::size_t top = k / heads * side, left = k % heads * sideKeys;
        for (std::size_t r = 0; r < side; ++r)
            std::copy(tile + r * sideKeys, tile + (r + 1) * sideKeys,
                      atlas.begin() + static_cast<std::ptrdiff_t>((top + r) * width + left));
    }
    return atlas;
}

}  // namespace attnviz::app
