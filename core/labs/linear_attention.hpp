// Linear attention and its two older readings (seed 000 §39.4).
//
//   φ(x) = elu(x) + 1, elementwise: x + 1 for x > 0, eˣ otherwise; always > 0, so every
//   normaliser below is positive (Katharopoulos et al. 2020).
//
//   parallel (the implied attention map, O(T² d)):
//     A[i, j] = φ(q_i)·φ(k_j) / Σ_{j' readable} φ(q_i)·φ(k_j')   for readable j (j <= i when causal), else 0
//     Y = A V
//   parallel, every key (associativity, O(T d_k d_v)):
//     Y = φ(Q) (φ(K)ᵀ V) ⊘ φ(Q) (φ(K)ᵀ 1)
//   recurrent (the fast-weight programmer, Schmidhuber 1991; always causal):
//     S_t = S_{t-1} + φ(k_t) v_tᵀ    [d_k, d_v]  the fast-weight matrix
//     z_t = z_{t-1} + φ(k_t)         [d_k]
//     y_t = φ(q_t)ᵀ S_t / φ(q_t)ᵀ z_t
//
// And one retrieval step of a modern Hopfield network (Ramsauer et al. 2020, §39.4.3):
//     ξ_new = Xᵀ softmax(β X ξ)    X: [N, d] stored patterns, ξ: [d] probe
// which with X = K, β = 1/√d_k and values V in place of Xᵀ is one row of softmax attention.
#pragma once

#include "core/base/matrix.hpp"

namespace attnviz::core {

// φ(x) = elu(x) + 1, elementwise.
Mat featureMap(const MatRef& x);

struct LinearAttention {
    Mat weights;  // [T_q, T_k] the implied attention map A (rows sum to 1)
    Mat output;   // [T_q, d_v] A V
};

// q: [T_q, d_k], k: [T_k, d_k], v: [T_k, d_v]. causal: query i reads keys j <= i.
LinearAttention linearAttention(const MatRef& q, const MatRef& k, const MatRef& v, bool causal);

// The same output without the T × T map, every key readable: [T_q, d_v] in O(T d_k d_v).
Mat linearAttentionFactored(const MatRef& q, const MatRef& k, const MatRef& v);

// The recurrent form, one token at a time (causal; T_q = T_k = T): [T, d_v].
Mat linearAttentionRecurrent(const MatRef& q, const MatRef& k, const MatRef& v);

// The fast-weight matrix after the first `steps` tokens: S = Σ_{t < steps} φ(k_t) v_tᵀ, [d_k, d_v].
Mat fastWeights(const MatRef& k, const MatRef& v, Eigen::Index steps);

struct HopfieldStep {
    Vec weights;    // [N] softmax(β X ξ): how much each stored pattern is recalled
    Vec retrieved;  // [d] Xᵀ weights
};

// patterns X: [N, d] (one stored pattern a row); probe ξ: [d]; β > 0.
HopfieldStep hopfieldStep(const MatRef& patterns, const Vec& probe, float beta);

}  // namespace attnviz::core
