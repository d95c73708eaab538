#include "app/state/head_view.hpp"

#include "app/state/head_summary.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace attnviz::app {

int headViewLayer(const AppState& state, const core::AttentionMaps& maps) {
    return std::clamp(shownMapLayer(state) - maps.firstLayer, 0, std::max(0, maps.layers - 1));
}

std::vector<int> headViewHeads(const AppState& state) {
    if (!state.view.viewHeads.empty()) return state.view.viewHeads;
    if (state.view.selectedHead >= 0 && state.view.selectedHead < state.model.heads) return {state.view.selectedHead};
    std::vector<int> all(static_cast<std::size_t>(std::max(0, state.model.heads)));
    std::iota(all.begin(), all.end(), 0);
    return all;
}

namespace {

std::string describeVectors(const core::Model& model) {
    if (model.explicitQkv) return "q and k as given by the scenario";
    std::string text = model.bq.size() != 0 ? "x W_Q + b_Q, x W_K + b_K" : "x W_Q, x W_K";
    if (model.qNorm.size() != 0) text += ", RMS-normed (q/k norm)";
    if (model.ropeCos.size() != 0) text += ", rotated by RoPE at their positions";
    return text;
}

}  // namespace

NeuronTerms neuronTerms(const AppState& state, int head, int query, int key) {
    if (head < 0 || head >= static_cast<int>(state.forward.heads.size())) throw std::out_of_range("neuron view: no head");
    const core::HeadTensors& h = state.forward.heads[static_cast<std::size_t>(head)];
    if (query < 0 || query >= h.q.rows() || key < 0 || key >= h.k.rows()) throw std::out_of_range("neuron view: no such query or key");
    NeuronTerms t;
    t.head = head;
    t.query = query;
    t.key = key;
    t.dk = static_cast<int>(h.q.cols());
    t.q.assign(h.q.row(query).data(), h.q.row(query).data() + h.q.cols());
    t.k.assign(h.k.row(key).data(), h.k.row(key).data() + h.k.cols());
    t.product.resize(t.q.size());
    for (std::size_t d = 0; d < t.q.size(); ++d) {
        t.product[d] = t.q[d] * t.k[d];
        t.dot += static_cast<double>(t.q[d]) * static_cast<double>(t.k[d]);
    }
    t.score = h.scores(query, key);
    if (h.alibiSlope != 0.0f)
        t.alibi = -core::alibiStep(h.alibiSlope, state.model.dk, state.settings) * std::abs(static_cast<double>(query - key));
    t.scaled = state.settings.scaled;
    t.temperature = state.settings.temperature;
    t.scale = core::logitScale(state.model.dk, state.settings);
    t.blocked = core::isBlocked(state.settings, query, key);
    t.row.assign(h.weights.row(query).data(), h.weights.row(query).data() + h.weights.cols());
    t.mask.resize(t.row.size());
    for (std::size_t j = 0; j < t.mask.size(); ++j)
        t.mask[j] = core::isBlocked(state.settings, query, static_cast<Eigen::Index>(j)) ? 1 : 0;
    t.vectors = describeVectors(state.model);
    return t;
}

}  // namespace attnviz::app
