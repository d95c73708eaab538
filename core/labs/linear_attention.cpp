#include "core/labs/linear_attention.hpp"

#include "core/attention/attention.hpp"

#include <algorithm>
#include <cmath>

namespace attnviz::core {

Mat featureMap(const MatRef& x) {
    return x.unaryExpr([](float v) { return v > 0.0f ? v + 1.0f : std::exp(v); });
}

LinearAttention linearAttention(const MatRef& q, const MatRef& k, const MatRef& v, bool causal) {
    LinearAttention out;
    // 1. similarities φ(q_i)·φ(k_j) > 0, [T_q, T_k]
    out.weights.noalias() = featureMap(q) * featureMap(k).transpose();
    // 2. causal: keys after the query are not read
    if (causal)
        for (Eigen::Index i = 0; i < out.weights.rows(); ++i)
            if (i + 1 < out.weights.cols()) out.weights.row(i).tail(out.weights.cols() - i - 1).setZero();
    // 3. each row divided by its sum (no exp, no max shift: nothing here can overflow)
    for (Eigen::Index i = 0; i < out.weights.rows(); ++i) {
        const float sum = out.weights.row(i).sum();
        if (sum > 0.0f) out.weights.row(i) /= sum;
    }
    out.output.noalias() = out.weights * v;
    return out;
}

Mat linearAttentionFactored(const MatRef& q, const MatRef& k, const MatRef& v) {
    const Mat fq = featureMap(q), fk = featureMap(k);
    const Mat kv = fk.transpose() * v;             // [d_k, d_v]: every key's outer product, summed
    const Vec z = fk.colwise().sum().transpose();  // [d_k]: Σ_j φ(k_j)
    const Vec norm = fq * z;                       // [T_q]
    Mat out = fq * kv;                             // [T_q, d_v]
    for (Eigen::Index i = 0; i < out.rows(); ++i) out.row(i) /= norm(i);
    return out;
}

Mat linearAttentionRecurrent(const MatRef& q, const MatRef& k, const MatRef& v) {
    const Eigen::Index T = q.rows();
    const Mat fq = featureMap(q), fk = featureMap(k);
    Mat s = Mat::Zero(k.cols(), v.cols());  // S_t [d_k, d_v]
    RowVec z = RowVec::Zero(k.cols());      // z_tᵀ [d_k]
    Mat y(T, v.cols());
    for (Eigen::Index t = 0; t < T; ++t) {
        s.noalias() += fk.row(t).transpose() * v.row(t);  // write: S_t = S_{t-1} + φ(k_t) v_tᵀ
        z += fk.row(t);
        y.row(t).noalias() = fq.row(t) * s;  // read: φ(q_t)ᵀ S_t …
        y.row(t) /= fq.row(t).dot(z);        // … / φ(q_t)ᵀ z_t
    }
    return y;
}

Mat fastWeights(const MatRef& k, const MatRef& v, Eigen::Index steps) {
    const Eigen::Index n = std::clamp<Eigen::Index>(steps, 0, k.rows());
    Mat s = Mat::Zero(k.cols(), v.cols());
    if (n > 0) s.noalias() = featureMap(k.topRows(n)).transpose() * v.topRows(n);
    return s;
}

HopfieldStep hopfieldStep(const MatRef& patterns, const Vec& probe, float beta) {
    HopfieldStep out;
    // The similarities X ξ as one row of scores, through the same softmax as attention.
    const Mat scores = (patterns * probe).transpose();  // [1, N]
    Mat weights;
    softmaxRows(scores, beta, Settings{}, weights);
    out.weights = weights.row(0).transpose();
    out.retrieved = patterns.transpose() * out.weights;
    return out;
}

}  // namespace attnviz::core
