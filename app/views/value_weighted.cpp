#include "app/views/value_weighted.hpp"

#include "app/render/figure_parts.hpp"
#include "app/state/head_summary.hpp"
#include "app/state/head_view.hpp"
#include "app/state/source.hpp"
#include "core/attention/attention_maps.hpp"
#include "core/base/error.hpp"
#include "core/base/files.hpp"
#include "core/io/npy.hpp"
#include "core/scenario/scenario.hpp"

#include <algorithm>
#include <new>

namespace attnviz::app {
namespace {

constexpr const char* kNoValues =
    "Imported attention has no values behind it: value-weighted attention needs each key's value and W_O (open a checkpoint with "
    "--model).";

// Each head's ‖v_j W_O^h‖ of the layer `layer` counted in `maps` (empty when it has no values);
// `throughWo` says whether there was a W_O to carry them through.
std::vector<core::RowVec> layerNorms(const AppState& state, const core::AttentionMaps& maps, int layer, bool* throughWo = nullptr) {
    const LayerValues v = layerValues(state, maps.firstLayer + layer);
    if (throughWo) *throughWo = v.wo.rows() != 0;
    std::vector<core::RowVec> norms;
    if (!v || v.heads != maps.heads || v.values.rows() != maps.keys) return norms;
    for (int h = 0; h < v.heads; ++h) {
        const auto values = v.values.middleCols(static_cast<Eigen::Index>(v.kvHeadOf(h)) * v.dv, v.dv);
        norms.push_back(v.wo.rows() == 0 ? valueNorms(values, core::Mat())
                                         : valueNorms(values, v.wo.middleRows(static_cast<Eigen::Index>(h) * v.dv, v.dv)));
    }
    return norms;
}

ValueWeightedMaps::Key keyOf(const AppState& state, const core::AttentionMaps& maps) {
    PassKey pass = headSummaryKey(state);
    pass.skipFirstKey = false;  // not this view's rule
    return {pass, maps ? headViewLayer(state, maps) : 0, state.view.selectedHead};
}

bool isNpy(const std::string& path) { return core::lowerExtension(path) == ".npy"; }

}  // namespace

core::RowVec valueNorms(const core::MatRef& values, const core::MatRef& wo) {
    if (wo.rows() != 0 && wo.rows() != values.cols())
        throw core::InputError("value-weighted",
                               "W_O has " + std::to_string(wo.rows()) + " rows for values " + std::to_string(values.cols()) + " wide");
    const core::Mat written = wo.rows() == 0 ? core::Mat(values) : core::Mat(values * wo);
    core::RowVec norms(written.rows());
    for (Eigen::Index j = 0; j < written.rows(); ++j) norms(j) = static_cast<float>(written.row(j).cast<double>().norm());
    return norms;
}

core::Mat valueWeighted(const core::MatRef& weights, const core::RowVec& norms) {
    if (weights.cols() != norms.size())
        throw core::InputError("value-weighted",
                               std::to_string(norms.size()) + " value norms for " + std::to_string(weights.cols()) + " keys");
    return weights * norms.asDiagonal();
}

bool refreshValueWeighted(AppState& state) {
    const core::AttentionMaps maps = attentionMaps(state);
    ValueWeightedView& view = state.derived.get<ValueWeightedView>();
    const ValueWeightedMaps::Key key = keyOf(state, maps);
    if (view.current(key)) return true;
    if (!capabilities(state).weights) {
        view.remake(key);
        view.why = kNoValues;
        return true;
    }
    if (!maps) return false;  // the pass is not ready yet
    ValueWeightedMaps& made = view.remake(key);
    try {
        made.norms = layerNorms(state, maps, key.layer, &made.throughWo);
        if (made.norms.empty()) {
            view.why = "The values of this layer are not there to weigh.";
            return true;
        }
        const int head = key.head >= 0 && key.head < maps.heads ? key.head : -1;
        if (maps.queries > render::kMaxValueWeightedTokens || maps.keys > render::kMaxValueWeightedTokens) {
            // A long input's map pooled (never whole): each cell a block's mean, as its heatmap figure.
            made.factor = longFigureFactor(maps.queries, maps.keys);
            core::PoolMapOptions pooling;
            pooling.factor = made.factor;
            pooling.keyScales = &made.norms;
            const core::PooledMap p = core::poolMap(maps, key.layer, head, pooling);
            made.map = Eigen::Map<const core::Mat>(p.means.data(), p.rows, p.cols);
            for (const float v : p.means)
                if (!core::isMaskedTexel(v)) made.largest = std::max(made.largest, v);
            return true;
        }
        core::Mat scratch;  // a map made on demand
        const auto headMap = [&](int h) { return valueWeighted(maps.map(key.layer, h, scratch), made.norms[static_cast<std::size_t>(h)]); };
        if (head >= 0) made.map = headMap(head);
        else {
            made.map = core::Mat::Zero(maps.queries, maps.keys);
            for (int h = 0; h < maps.heads; ++h) made.map += headMap(h);
            made.map /= static_cast<float>(maps.heads);
        }
        const core::Settings& settings = maps.layerSettings(key.layer);
        const core::MaskMat blocked = core::hasMask(settings) ? core::blockedMatrix(settings, maps.queries, maps.keys) : core::MaskMat();
        for (Eigen::Index i = 0; i < made.map.rows(); ++i)
            for (Eigen::Index j = 0; j < made.map.cols(); ++j)
                if (blocked.size() == 0 || !blocked(i, j)) made.largest = std::max(made.largest, made.map(i, j));
    } catch (const core::InputError& e) {
        view.value = {};
        view.why = e.what();
    } catch (const std::bad_alloc&) {
        view.value = {};
        view.why = "out of memory while weighing the values";
    }
    return true;
}

const ValueWeightedView* shownValueWeighted(const AppState& state) {
    const ValueWeightedView* view = state.derived.find<ValueWeightedView>();
    return view && view->current(keyOf(state, attentionMaps(state))) ? view : nullptr;
}

render::ValueWeightedFigure valueWeightedFigure(AppState& state, const FigureRequest& request) {
    if (!refreshValueWeighted(state)) throw core::InputError(request.where, "the heads are still being computed; try again in a moment");
    const ValueWeightedView& view = *shownValueWeighted(state);
    if (!view.why.empty()) throw core::InputError(request.where, view.why);
    const core::AttentionMaps maps = attentionMaps(state);
    const int layer = view.key->layer, head = view.key->head;
    render::ValueWeightedFigure figure;
    figure.map = view.value.map;
    const int factor = view.value.factor;
    const core::Settings& settings = maps.layerSettings(layer);
    if (factor > 1) {  // pooled: masked blocks as the pooling marked them, labelled by position
        figure.blocked = takeMaskedTexels(figure.map);
        figure.rowLabels = blockLabels(figure.map.rows(), factor);
        figure.colLabels = blockLabels(figure.map.cols(), factor);
    } else {
        if (core::hasMask(settings)) figure.blocked = core::blockedMatrix(settings, maps.queries, maps.keys);
        figure.rowLabels = state.model.queryTokens;
        figure.colLabels = state.model.keyTokens;
    }
    const std::string shown = (layerCount(state) > 0 ? "layer " + std::to_string(maps.firstLayer + layer + 1) + " · " : std::string()) +
                              (head >= 0 ? "head " + std::to_string(head + 1) + " of " + std::to_string(maps.heads)
                                         : "mean of " + std::to_string(maps.heads) + " heads");
    figure.title = "Value-weighted · " + figureTitle(state, shown, capabilities(state).ownPass);
    figure.subtitle = std::string("‖α_ij v_j W_O‖: what key j writes into query i through the head") +
                      (view.value.throughWo ? "" : " (no W_O: ‖α_ij v_j‖)") + " · rows do not sum to 1 · largest " +
                      render::figure::significant(view.value.largest) +
                      (factor > 1 ? " · each cell the mean of " + std::to_string(factor) + " × " + std::to_string(factor) : std::string());
    figure.colormap = state.view.colormap;
    return figure;
}

std::string writeValueWeighted(AppState& state, const std::string& path, const FigureRequest& request) {
    if (!isNpy(path)) return render::encodeValueWeighted(path, valueWeightedFigure(state, request));
    if (!capabilities(state).weights) throw core::InputError(request.where, kNoValues);
    const core::AttentionMaps maps = attentionMaps(state);
    if (!maps) throw core::InputError(request.where, "the heads are still being computed; try again in a moment");
    const std::uint64_t mapBytes =
        4ULL * static_cast<std::uint64_t>(maps.count()) * static_cast<std::uint64_t>(maps.queries) * static_cast<std::uint64_t>(maps.keys);
    if (mapBytes > state.limits.maxBytes)
        throw core::InputError(request.where, "every layer × head's value-weighted map is " + core::formatBytes(mapBytes) +
                                                  ", over the limit of " + core::formatBytes(state.limits.maxBytes) +
                                                  " (--max-memory); write one head's figure (.png or .svg) with --layer and --head");
    std::string bytes = core::npyHeader({maps.layers, maps.heads, maps.queries, maps.keys});
    bytes.reserve(bytes.size() + static_cast<std::size_t>(maps.count()) * static_cast<std::size_t>(maps.queries * maps.keys) * 4);
    core::Mat scratch;  // a map made on demand
    for (int l = 0; l < maps.layers; ++l) {
        const std::vector<core::RowVec> norms = layerNorms(state, maps, l);
        if (norms.empty())
            throw core::InputError(request.where, "the values of layer " + std::to_string(maps.firstLayer + l) + " are not there");
        for (int h = 0; h < maps.heads; ++h) {
            const core::Mat map = valueWeighted(maps.map(l, h, scratch), norms[static_cast<std::size_t>(h)]);
            bytes.append(reinterpret_cast<const char*>(map.data()), static_cast<std::size_t>(map.size()) * sizeof(float));
            maps.finished(l, h);
        }
    }
    return bytes;
}

void checkValueWeightedPath(const std::string& path) {
    if (!isNpy(path)) static_cast<void>(render::heatmapIsPng(path));
}

}  // namespace attnviz::app
