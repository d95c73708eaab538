// What the head view and the neuron view show, as numbers a test can read without a window: the
// head view's layer and heads, and one score q_i · k_j taken apart term by term.
#pragma once

#include "app/state/app_state.hpp"
#include "core/attention/attention_maps.hpp"

#include <string>
#include <vector>

namespace attnviz::app {

// The layer of attentionMaps(state) the head view shows: a model's selected layer (its maps
// hold every layer), or the scenario's one layer (0).
int headViewLayer(const AppState& state, const core::AttentionMaps& maps);
// The heads the head view shows, ascending: view.viewHeads when set, else the selected head
// (every head of the layer while the mean is selected).
std::vector<int> headViewHeads(const AppState& state);

// Query i's score against key j in `head` of the forward pass shown, as the softmax reads it.
struct NeuronTerms {
    int head = 0, query = 0, key = 0;
    std::vector<float> q, k;     // [d_k]: q_i and k_j as the score sees them (see `vectors`)
    std::vector<float> product;  // [d_k]: q_i[d] · k_j[d]
    double dot = 0;              // Σ product, in double
    float score = 0;             // forward's kept score (q_i · k_j, plus ALiBi's penalty)
    double alibi = 0;            // ALiBi's penalty in raw-score units (0 without ALiBi)
    float scale = 1;             // the logit scale c: 1 / (√d_k · τ), or 1 / τ unscaled
    bool scaled = true;
    float temperature = 1;
    int dk = 0;
    bool blocked = false;             // the mask blocks key j for query i
    std::vector<float> row;           // [T_k]: query i's weights
    std::vector<unsigned char> mask;  // [T_k]: 1 where the mask blocks the key
    std::string vectors;              // what q and k are: "x W_Q + b_Q, RMS-normed (q/k norm), rotated by RoPE"
};
// Throws std::out_of_range for a head, query or key the pass lacks; the head's scores and weights
// must be fresh (weightsFresh).
NeuronTerms neuronTerms(const AppState& state, int head, int query, int key);

}  // namespace attnviz::app
