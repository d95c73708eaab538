#include "app/state/model_view.hpp"

#include "app/state/attribution.hpp"
#include "app/state/source.hpp"

#include <algorithm>
#include <cmath>

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
    if (score == core::HeadScore::Attribution) {
        // the summary's layers of the heads' terms (it may cover fewer layers than the model has)
        const AttributionView* view = shownAttribution(state);
        if (view == nullptr || !view->why.empty()) return std::nullopt;
        const core::decoder::LogitAttribution& t = view->value.terms;
        const auto first = static_cast<std::size_t>(s.firstLayer) * static_cast<std::size_t>(s.heads);
        if (t.heads != s.heads || s.firstLayer + s.layers > t.layers || first + s.stats.size() > t.headTerms.size()) return std::nullopt;
        return std::vector<double>(t.headTerms.begin() + static_cast<std::ptrdiff_t>(first),
                                   t.headTerms.begin() + static_cast<std::ptrdiff_t>(first + s.stats.size()));
    }
    std::vector<double> out;
    out.reserve(s.stats.size());
    for (const core::HeadStats& h : s.stats) out.push_back(core::headScore(h, score));
    return out;
}

bool scoresTiles(const ModelViewOptions& options) { return options.order != core::TileOrder::Natural || options.tint; }

TileLayout modelViewLayout(const AppState& state, const ModelViewOptions& options) {
    const HeadSummary& s = state.headSummary;
    TileLayout out;
    if (scoresTiles(options)) out.scores = summaryScores(state, options.score);
    const core::TileOrder order = out.scores ? options.order : core::TileOrder::Natural;
    out.order = core::tileOrder(s.layers, s.heads, order, out.scores.value_or(std::vector<double>{}));
    if (out.scores)
        out.rule = core::orderRule(order, options.tint ? std::optional<core::HeadScore>(options.score) : std::nullopt, options.score);
    return out;
}

TileCrop tileCrop(const AppState& state) {
    const HeadSummary& s = state.headSummary;
    const TileCrop whole{0, s.side, 0, s.sideKeys};
    const PairBlock b = pairBlock(state, state.view.pairFilter);
    if (b.rows == s.queries && b.cols == s.keys) return whole;
    // the texels the block's cells fall in: a texel pools factor × factor cells
    const Eigen::Index f = std::max(1, s.factor);
    const TileCrop crop{b.firstRow / f, (b.firstRow + b.rows + f - 1) / f, b.firstCol / f, (b.firstCol + b.cols + f - 1) / f};
    const bool inside = crop.r0 >= 0 && crop.r1 <= s.side && crop.c0 >= 0 && crop.c1 <= s.sideKeys && crop.rows() > 0 && crop.cols() > 0;
    return inside ? crop : whole;  // a summary of another input than the pair's: whole
}

namespace {

// The cropped rows of one thumbnail into `out`, rows `stride` floats apart.
void copyCropped(const HeadSummary& summary, const float* tile, const TileCrop& crop, float* out, std::size_t stride) {
    const auto sideKeys = static_cast<std::size_t>(summary.sideKeys);
    for (Eigen::Index r = crop.r0; r < crop.r1; ++r) {
        const float* row = tile + static_cast<std::size_t>(r) * sideKeys;
        std::copy(row + crop.c0, row + crop.c1, out + static_cast<std::size_t>(r - crop.r0) * stride);
    }
}

}  // namespace

std::vector<float> thumbnailAtlas(const HeadSummary& summary, const std::vector<int>& order, core::BlockPooling pooling,
                                  const TileCrop& crop) {
    const auto rows = static_cast<std::size_t>(crop.rows()), cols = static_cast<std::size_t>(crop.cols());
    const auto heads = static_cast<std::size_t>(summary.heads), width = heads * cols;
    std::vector<float> atlas(static_cast<std::size_t>(summary.layers) * rows * width);
    for (std::size_t k = 0; k < order.size(); ++k) {
        const std::size_t top = k / heads * rows, left = k % heads * cols;
        copyCropped(summary, summary.thumbnail(order[k], pooling), crop, atlas.data() + top * width + left, width);
    }
    return atlas;
}

TileGrid tileGrid(int layers, int heads, float aspect, float roomW, float roomH, float labelW, float gap) {
    TileGrid best{.groups = 1, .perGroup = std::max(1, layers)};
    float bestTile = 0.0f;
    for (int g = 1; g <= std::max(1, layers); ++g) {
        const int perGroup = (std::max(1, layers) + g - 1) / g;
        if (g > 1 && (layers + perGroup - 1) / perGroup != g) continue;  // as many groups as fewer would need
        const float w =
            (roomW - static_cast<float>(g) * labelW - static_cast<float>(g - 1) * gap) / static_cast<float>(g * std::max(1, heads));
        const float tile = std::floor(std::min(w, roomH / (static_cast<float>(perGroup) * aspect)));
        if (g == 1 || tile >= bestTile * 1.25f) {
            bestTile = tile;
            best = TileGrid{
                .groups = g, .perGroup = perGroup, .tile = std::max(2.0f, tile), .tileH = std::max(2.0f, std::floor(tile * aspect))};
        }
    }
    return best;
}

std::vector<float> croppedThumbnails(const HeadSummary& summary, core::BlockPooling pooling, const TileCrop& crop) {
    const auto size = static_cast<std::size_t>(crop.rows() * crop.cols()), count = summary.stats.size();
    std::vector<float> out(size * count);
    for (std::size_t k = 0; k < count; ++k)
        copyCropped(summary, summary.thumbnail(static_cast<int>(k), pooling), crop, out.data() + k * size,
                    static_cast<std::size_t>(crop.cols()));
    return out;
}

}  // namespace attnviz::app
