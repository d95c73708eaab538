#include "app/views/figures.hpp"

#include "app/state/attribution.hpp"
#include "app/state/compare_view.hpp"
#include "app/state/generation.hpp"
#include "app/state/head_summary.hpp"
#include "app/state/head_view.hpp"
#include "app/state/launch.hpp"
#include "app/state/model_view.hpp"
#include "app/state/query_key_view.hpp"
#include "app/state/shown_map.hpp"
#include "app/state/source.hpp"
#include "app/views/attribution.hpp"
#include "core/base/error.hpp"
#include "core/base/format.hpp"

#include <algorithm>
#include <vector>

namespace attnviz::app {

namespace {

// The least of 1, 2, 5, 10, 20, 25, 50, 100, … that is at least `least`.
int roundFactor(int least) {
    for (int decade = 1;; decade *= 10)
        for (const int f : decade == 1 ? std::vector<int>{1, 2, 5} : std::vector<int>{decade, 2 * decade, 5 * decade / 2, 5 * decade})
            if (f >= least) return f;
}

}  // namespace

int longFigureFactor(Eigen::Index queries, Eigen::Index keys) { return roundFactor(core::factorFor(queries, keys, kLongFigureCells)); }

core::MaskMat takeMaskedTexels(core::Mat& cells) {
    core::MaskMat blocked = core::MaskMat::Zero(cells.rows(), cells.cols());
    for (Eigen::Index i = 0; i < cells.rows(); ++i)
        for (Eigen::Index j = 0; j < cells.cols(); ++j)
            if (core::isMaskedTexel(cells(i, j))) blocked(i, j) = true, cells(i, j) = 0.0f;
    return blocked.any() ? blocked : core::MaskMat();
}

std::vector<std::string> blockLabels(Eigen::Index n, int factor) {
    std::vector<std::string> labels;
    for (Eigen::Index i = 0; i < n; ++i) labels.push_back(std::to_string(i * factor));
    return labels;
}

namespace {

core::InputError notReady(const FigureRequest& request) {
    return core::InputError(request.where, "the heads' weights are still being computed; try again in a moment");
}

void requireWeights(const AppState& state, int head, const FigureRequest& request) {
    if (state.forward.heads.empty() || !weightsFresh(state, head)) throw notReady(request);
}

// The shown head's map (or the mean) read from a model's pass (the layer not computed whole):
// pooled to at most kLongFigureCells a side (by a round factor, so at least 410), labelled by
// position where a cell is a block.
void pooledFromPass(const AppState& state, int head, render::HeatmapFigure& figure) {
    const core::AttentionMaps maps = attentionMaps(state);
    const int factor = longFigureFactor(maps.queries, maps.keys);
    const core::PooledMap p = core::poolMap(
        maps, shownMapLayer(state), head,
        {.factor = factor, .mean = meanOptions(state), .referenceFactor = core::scaleReferenceFactor(maps.queries, maps.keys)});
    figure.weights = Eigen::Map<const core::Mat>(p.means.data(), p.rows, p.cols);
    figure.keys = maps.keys;
    figure.clipQuantile = p.referenceQuantile;  // the window's ShownMap reads the same
    figure.blocked = takeMaskedTexels(figure.weights);
    if (factor == 1) {
        figure.rowLabels = state.model.queryTokens;
        figure.colLabels = state.model.keyTokens;
        return;
    }
    figure.rowLabels = blockLabels(p.rows, factor);
    figure.colLabels = blockLabels(p.cols, factor);
    figure.showValues = false;
    figure.showRowSums = false;
    figure.title += " · each cell the mean of " + std::to_string(factor) + " × " + std::to_string(factor) + " weights";
}

// "layer 3 · " for a source of many layers; "" for a scenario's one.
std::string layerPart(const AppState& state) {
    return capabilities(state).manyLayers ? "layer " + std::to_string(state.scenario.layer + 1) + " · " : std::string();
}

std::string everyHead(int heads) { return "all " + std::to_string(heads) + (heads == 1 ? " head" : " heads"); }

// The head view of a long input: the tokens just before the query kept beside the keys its lines
// reach; every other run of tokens one row ("⋯ 1,204 tokens").
constexpr int kFoldBefore = 8;
constexpr const char* kFoldContext = "8 tokens";

// The heads' part of the head view's title: one head's name, or the layer's heads shown.
std::string headViewShown(const AppState& state, const render::HeadViewFigure& figure) {
    const int heads = state.model.heads;
    if (figure.heads.size() == 1) return core::headName(state.scenario, figure.heads.front(), heads);
    return layerPart(state) + everyHead(static_cast<int>(figure.heads.size())) +
           (static_cast<int>(figure.heads.size()) == heads ? std::string() : " of " + std::to_string(heads));
}

// Folds a long input's head view of one query (figure.query, a position) to the rows its lines
// need: the query, the kFoldBefore tokens before it, and every key a line reaches, each labelled
// with its position (from 1); a run of other tokens becomes one row saying how many. The lines'
// queries and keys become those rows.
void foldHeadView(const AppState& state, Eigen::Index tokens, render::HeadViewFigure& figure, core::HeadLines& lines) {
    std::vector<int> kept;
    const int q = figure.query;
    for (int p = std::max(0, q - kFoldBefore); p <= q; ++p) kept.push_back(p);
    for (const core::HeadLine& line : lines.lines) kept.push_back(line.key);
    std::sort(kept.begin(), kept.end());
    kept.erase(std::unique(kept.begin(), kept.end()), kept.end());
    std::vector<int> rowOf(kept.size());
    const auto fold = [&](long long count) {
        figure.labels.push_back("⋯ " + core::groupedNumber(count) + (count == 1 ? " token" : " tokens"));
    };
    int next = 0;  // the first position not yet in a row
    for (std::size_t k = 0; k < kept.size(); ++k) {
        if (kept[k] > next) fold(kept[k] - next);
        rowOf[k] = static_cast<int>(figure.labels.size());
        figure.labels.push_back(std::to_string(kept[k] + 1) + " " + state.model.queryTokens[static_cast<std::size_t>(kept[k])]);
        next = kept[k] + 1;
    }
    if (next < tokens) fold(tokens - next);
    const auto row = [&](int position) {
        return rowOf[static_cast<std::size_t>(std::lower_bound(kept.begin(), kept.end(), position) - kept.begin())];
    };
    for (core::HeadLine& line : lines.lines) line.query = row(line.query), line.key = row(line.key);
    figure.query = row(q);
    figure.queryPosition = q;
    if (figure.labels.size() > static_cast<std::size_t>(render::kMaxHeadViewTokens))
        throw core::InputError("--export-head-view", "the lines of " + std::to_string(figure.heads.size()) + " heads reach " +
                                                         std::to_string(kept.size()) + " tokens, too many rows for the figure (at most " +
                                                         std::to_string(render::kMaxHeadViewTokens) + "): pick a --head");
    figure.tokens = static_cast<int>(figure.labels.size());
    figure.lines = std::move(lines.lines);
    figure.readable = lines.readable;
}

// The head's title as the heatmap, the bars and the grid of heads name it, the mean's rule included.
std::string shownHeadTitle(const AppState& state, int head) {
    std::string title = figureTitle(state, core::headName(state.scenario, head, state.model.heads));
    if (head < 0 && state.view.skipFirstKey) title += " · first key left out";
    return title;
}

// A heatmap's title's note of the tokens a model generated, from position `from` (0-based).
std::string generatedWords(Eigen::Index from) { return " · generated from token " + std::to_string(from + 1) + " (amber lines)"; }

}  // namespace

std::string figureTitle(const AppState& state, const std::string& heads, bool ownPass) {
    const Capabilities can = capabilities(state);
    const core::Settings& settings = state.settings;
    std::string title = state.scenario.name.empty() ? std::string() : state.scenario.name + " · ";
    title += heads;
    if (can.givenMaps) return title + givenMapsNote(state);
    if (ownPass || !can.wholeLayer) return title + " · the model's pass (" + ownSoftmaxNote(state) + ")";
    title += " · τ = " + core::formatFixed(settings.temperature, 2);
    if (!settings.scaled) title += " · unscaled";
    if (settings.causal) title += can.ownPass && !can.readsBack ? " · causal (the model reads both ways)" : " · causal";
    else if (can.readsBack) title += " · bidirectional (the model reads causally)";
    return title;
}

render::HeatmapFigure heatmapFigure(const AppState& state, const FigureRequest& request) {
    const int head = state.view.selectedHead;
    requireWeights(state, head, request);
    render::HeatmapFigure figure;
    if (!capabilities(state).wholeLayer) {
        figure.title = shownHeadTitle(state, head);
        pooledFromPass(state, head, figure);
        figure.colormap = state.view.colormap;
        figure.scale = state.view.colourScale;
        figure.cellSize = request.cellSize;
        figure.generatedFrom = generatedFrom(state);
        if (figure.generatedFrom > 0) figure.title += generatedWords(figure.generatedFrom);
        return figure;
    }
    figure.generatedFrom = generatedFrom(state);
    figure.rowLabels = state.model.queryTokens;
    figure.colLabels = state.model.keyTokens;
    figure.weights = visibleWeights(state);
    if (core::hasMask(state.settings)) figure.blocked = core::blockedMatrix(state.settings, state.model.tq(), state.model.tk());
    figure.title = shownHeadTitle(state, head);
    // A sentence pair's filter: the block of A's or B's queries reading A's or B's keys alone.
    if (const PairBlock b = pairBlock(state, state.view.pairFilter); b.rows != figure.weights.rows() || b.cols != figure.weights.cols()) {
        const core::Mat block = figure.weights.block(b.firstRow, b.firstCol, b.rows, b.cols);
        figure.weights = block;
        if (figure.blocked.size() > 0) {
            const core::MaskMat blocked = figure.blocked.block(b.firstRow, b.firstCol, b.rows, b.cols);
            figure.blocked = blocked;
        }
        const auto slice = [](const std::vector<std::string>& labels, Eigen::Index first, Eigen::Index n) {
            return std::vector<std::string>(labels.begin() + first, labels.begin() + first + n);
        };
        figure.rowLabels = slice(figure.rowLabels, b.firstRow, b.rows);
        figure.colLabels = slice(figure.colLabels, b.firstCol, b.cols);
        figure.title += std::string(" · ") + pairFilterName(state.view.pairFilter);
        figure.generatedFrom = -1;
    }
    if (figure.generatedFrom > 0) figure.title += generatedWords(figure.generatedFrom);
    figure.colormap = state.view.colormap;
    figure.scale = state.view.colourScale;
    figure.cellSize = request.cellSize;
    // Auto's top from the whole map as the window reads it (a pair's block: its cells' own)
    if (figure.scale == core::ColourScale::Auto && head >= 0 && figure.weights.rows() == state.model.tq() &&
        figure.weights.cols() == state.model.tk())
        figure.clipQuantile = core::referenceQuantile(figure.weights, state.settings);
    return figure;
}

render::BarsFigure barsFigure(const AppState& state, const FigureRequest& request) {
    const int head = state.view.selectedHead, query = state.view.selectedQuery;
    requireWeights(state, head, request);
    if (query < 0 || query >= state.model.tq()) throw core::InputError(request.where, "no query " + std::to_string(query) + " to draw");
    render::BarsFigure figure;
    figure.keyLabels = state.model.keyTokens;
    const core::Mat row = shownRows(state, head, query, 1);  // the one row, read from the pass when the layer is not whole
    figure.weights.assign(row.data(), row.data() + row.size());
    if (core::hasMask(state.settings)) {  // the query's row of the mask, never the T x T mask
        std::vector<char> blocked;
        core::blockedRow(state.settings, query, state.model.tk(), blocked);
        figure.blocked.assign(blocked.begin(), blocked.end());
    }
    figure.query = query;
    figure.queryLabel = state.model.queryTokens[static_cast<std::size_t>(query)];
    figure.title = shownHeadTitle(state, head);
    figure.logScale = state.view.colourScale == core::ColourScale::Log;
    figure.generatedFrom = static_cast<int>(generatedFrom(state));
    return figure;
}

render::HeadsFigure headsFigure(const AppState& state, const FigureRequest& request) {
    if (!capabilities(state).wholeLayer)
        throw core::InputError(
            request.where, "draws every head's map in full; " + readFromPassNote(state) + "; --export-model-view draws every head pooled");
    requireWeights(state, -1, request);
    render::HeadsFigure figure;
    for (const core::HeadTensors& h : state.forward.heads) figure.heads.push_back(h.weights);
    if (core::hasMask(state.settings)) figure.blocked = core::blockedMatrix(state.settings, state.model.tq(), state.model.tk());
    figure.title = figureTitle(state, layerPart(state) + everyHead(state.model.heads));
    figure.colormap = state.view.colormap;
    figure.scale = state.view.colourScale;
    return figure;
}

render::ModelViewFigure modelViewFigure(AppState& state, const FigureRequest& request) {
    if (!summarizeHeads(state)) throw notReady(request);
    const ModelViewOptions& options = state.view.modelView;
    const bool moved = options.score == core::HeadScore::Moved && !state.view.compareText.empty();
    if (moved) {
        refreshCompare(state);
        if (!state.compare.why.empty()) throw core::InputError("", state.compare.why);
    }
    const bool attributed = options.score == core::HeadScore::Attribution && scoresTiles(options);
    if (attributed) {
        refreshAttribution(state);
        const AttributionView* view = shownAttribution(state);
        if (view == nullptr) throw notReady(request);
        if (!view->why.empty()) throw core::InputError(request.where, view->why);
    }
    const TileLayout layout = modelViewLayout(state, options);
    const HeadSummary& s = state.headSummary;
    render::ModelViewFigure figure;
    figure.layers = s.layers;
    figure.heads = s.heads;
    figure.firstLayer = s.firstLayer;
    // A sentence pair's filter: each tile its block's texels alone, as the window draws them.
    const TileCrop crop = tileCrop(state);
    const bool cropped = crop.rows() != s.side || crop.cols() != s.sideKeys;
    figure.side = static_cast<int>(crop.rows());
    figure.sideKeys = static_cast<int>(crop.cols());
    if (cropped) figure.thumbnails = croppedThumbnails(s, options.pooling, crop);
    else figure.thumbnails = options.pooling == core::BlockPooling::Mean ? s.means : s.maxima;
    figure.order = layout.scores ? options.order : core::TileOrder::Natural;
    figure.slots = layout.order;
    if (layout.scores && options.tint) figure.tint = *layout.scores;
    figure.rule = layout.rule;
    if (s.factor > 1)
        figure.pooling = std::string(options.pooling == core::BlockPooling::Mean ? "mean" : "largest") + " of a block of " +
                         std::to_string(s.factor) + " × " + std::to_string(s.factor) + " weights";
    figure.keys = s.keys;
    if (!cropped) figure.generatedFrom = generatedFrom(state);
    if (attributed && layout.scores) figure.rule += " · " + attributionSubject(shownAttribution(state)->value);
    if (moved && layout.scores) figure.rule += " · " + std::string(core::movedRule()) + " · B: " + core::quoteValue(state.view.compareText);
    const Capabilities can = capabilities(state);
    std::string title = state.scenario.name.empty() ? std::string() : state.scenario.name + " · ";
    title += can.ownPass     ? "every layer × head · the model's pass (" + ownSoftmaxNote(state) + ")"
             : can.givenMaps ? "every layer × head · " + givenMapsName(state)
                             : "every head · τ = " + core::formatFixed(state.settings.temperature, 2);
    if (cropped) title += std::string(" · ") + pairFilterName(state.view.pairFilter);
    figure.title = title;
    figure.colormap = state.view.colormap;
    figure.scale = state.view.colourScale;
    return figure;
}

render::HeadViewFigure headViewFigure(const AppState& state, const FigureRequest& request) {
    const core::AttentionMaps maps = attentionMaps(state);
    if (!maps) throw notReady(request);
    if (maps.queries != maps.keys)
        throw core::InputError(request.where, "needs queries that are the keys (self-attention); this scenario has " +
                                                  std::to_string(maps.queries) + " queries and " + std::to_string(maps.keys) + " keys");
    const std::vector<int>& picked = state.view.viewTokens;
    const bool folded = maps.queries > render::kMaxHeadViewTokens;
    if (folded && picked.size() != 1)
        throw core::InputError(request.where, std::to_string(maps.queries) + " tokens are too many for every query's lines (at most " +
                                                  std::to_string(render::kMaxHeadViewTokens) +
                                                  "): pick one --query, and the tokens its lines do not reach are folded");
    render::HeadViewFigure figure;
    figure.heads = headViewHeads(state);
    std::vector<int> queries;
    if (picked.size() == 1) queries = picked, figure.query = picked.front();
    const core::HeadLineRule rule;
    core::HeadLines lines = core::headLines(maps, headViewLayer(state, maps), figure.heads, queries, rule);
    // A sentence pair's filter: the block's lines alone, as the window draws them.
    std::string block;
    if (const PairBlock b = pairBlock(state, state.view.pairFilter); b.rows != maps.queries || b.cols != maps.keys) {
        std::erase_if(lines.lines, [&](const core::HeadLine& l) {
            return l.query < b.firstRow || l.query >= b.firstRow + b.rows || l.key < b.firstCol || l.key >= b.firstCol + b.cols;
        });
        block = std::string(" · ") + pairFilterName(state.view.pairFilter);
    }
    if (folded) {
        foldHeadView(state, maps.queries, figure, lines);
        figure.rule = rule.describe(maps.keys) + " · the tokens it does not reach folded, " + kFoldContext + " before the query kept";
        figure.title = "Head view · " + figureTitle(state, headViewShown(state, figure), capabilities(state).ownPass);
        return figure;
    }
    if (lines.lines.size() > static_cast<std::size_t>(render::kMaxHeadViewLines))
        throw core::InputError(request.where, std::to_string(lines.lines.size()) + " lines are too many for one figure (at most " +
                                                  std::to_string(render::kMaxHeadViewLines) + "): pick a --head or a --query");
    figure.tokens = static_cast<int>(maps.queries);
    figure.labels = state.model.queryTokens;
    figure.lines = lines.lines;
    figure.readable = lines.readable;
    figure.rule = rule.describe(maps.keys);
    figure.title = "Head view · " + figureTitle(state, headViewShown(state, figure), capabilities(state).ownPass) + block;
    return figure;
}

render::CompareFigure compareFigure(AppState& state, const FigureRequest& request) {
    if (state.view.compareText.empty()) throw core::InputError(request.where, "needs another sentence to compare with");
    if (!refreshCompare(state)) throw notReady(request);
    if (!state.compare.why.empty()) throw core::InputError("", state.compare.why);
    const core::AttentionMaps a = attentionMaps(state), b = compareMaps(state);
    if (!a || !b) throw notReady(request);
    const int layer = compareLayer(state), head = state.view.selectedHead;
    if (head < -1 || head >= a.heads) throw core::InputError(request.where, headOutOfRange(head, a.heads));
    const auto headMap = [&](const core::AttentionMaps& maps) { return core::headOrMean(maps, layer, head); };
    const bool ownPass = capabilities(state).ownPass;
    render::CompareFigure figure;
    figure.a = headMap(a);
    figure.b = headMap(b);
    if (core::hasMask(a.layerSettings(layer))) figure.aBlocked = core::blockedMatrix(a.layerSettings(layer), a.queries, a.keys);
    if (core::hasMask(b.layerSettings(layer))) figure.bBlocked = core::blockedMatrix(b.layerSettings(layer), b.queries, b.keys);
    figure.difference = core::alignedDifference(figure.a, figure.b, state.compare.alignment, figure.lined);
    figure.aLabels = ownPass ? a.labels : state.keyLabels;
    figure.bLabels = state.compare.labels;
    std::string sentence = state.scenario.sentence.value_or("");
    if (sentence.empty())
        for (const std::string& t : state.model.keyTokens) sentence += (sentence.empty() ? "" : " ") + t;
    figure.aCaption = "A: " + core::sanitizeUtf8(sentence);
    figure.bCaption = "B: " + core::sanitizeUtf8(state.view.compareText);
    figure.subtitle = core::alignmentText(state.compare.alignment, static_cast<int>(state.compare.labels.size())) + " · moved " +
                      core::formatFixed(core::mapMoved(figure.a, figure.b, state.compare.alignment), 3) +
                      " (mean over lined-up queries of ½ Σ|B − A|) · rows: queries, columns: keys";
    const std::string shown = (ownPass ? "layer " + std::to_string(layer + 1) + " · " : std::string()) +
                              (head >= 0 ? "head " + std::to_string(head + 1) : "mean over heads");
    figure.title = "Compare · " + (state.scenario.name.empty() ? std::string() : state.scenario.name + " · ") + shown +
                   (ownPass ? " · the model's pass (" + ownSoftmaxNote(state) + ")" : "");
    figure.colormap = state.view.colormap;
    return figure;
}

render::QkMapFigure qkMapFigure(AppState& state, const FigureRequest& request) {
    const int head = state.view.selectedHead;
    if (!refreshQueryKeyMap(state)) throw notReady(request);
    const core::QueryKeyMap* map = shownQueryKeyMap(state);
    if (!map) throw core::InputError(request.where, state.queryKey.why);
    if (map->points.rows() > render::kMaxQkMapPoints)
        throw core::InputError(request.where, std::to_string(map->points.rows()) + " points are too many for one figure (at most " +
                                                  std::to_string(render::kMaxQkMapPoints) + ")");
    render::QkMapFigure figure;
    figure.map = *map;
    figure.queryLabels = state.model.queryTokens;
    figure.keyLabels = state.model.keyTokens;
    if (request.markQuery) {
        const int query = state.view.selectedQuery;
        const core::RowVec row = queryKeyWeights(state, query);
        if (row.size() == 0) throw core::InputError(request.where, "no query " + std::to_string(query) + " to mark");
        figure.query = query;
        figure.strongest = core::strongestKeys(row, 8);
        for (const int j : figure.strongest) figure.strongestWeights.push_back(row(j));
    }
    figure.title = "Query–key map · " + figureTitle(state, core::headName(state.scenario, head, state.model.heads));
    return figure;
}

}  // namespace attnviz::app
