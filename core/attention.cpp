#include "core/attention.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace attnviz::core {

bool isBlocked(const Settings& settings, Eigen::Index i, Eigen::Index j) {
    if (settings.causal && j > i) return true;
    for (int p : settings.paddedKeys)
        if (p == j) return true;
    return settings.custom.size() != 0 && settings.custom(i, j);
}

MaskMat blockedMatrix(const Settings& settings, Eigen::Index tq, Eigen::Index tk) {
    MaskMat blocked(tq, tk);
    for (Eigen::Index i = 0; i < tq; ++i)
        for (Eigen::Index j = 0; j < tk; ++j) blocked(i, j) = isBlocked(settings, i, j);
    return blocked;
}

float logitScale(int dk, const Settings& settings) {
    const double divisor = (settings.scaled ? std::sqrt(static_cast<double>(dk)) : 1.0) *
                           static_cast<double>(settings.temperature);
    // Clamped into the positive float range so that (s - max) * c is never 0 * inf.
    return static_cast<float>(std::clamp(1.0 / divisor, static_cast<double>(std::numeric_limits<float>::min()),
                                         static_cast<double>(std::numeric_limits<float>::max())));
}

void computeScores(const MatRef& q, const MatRef& k, Mat& scores) {
    scores.resize(q.rows(), k.rows());
    scores.noalias() = q * k.transpose();
}

void softmaxRows(const MatRef& scores, float scale, const Settings& settings, Mat& weights) {
    const Eigen::Index tq = scores.rows();
    const Eigen::Index tk = scores.cols();
    weights.resize(tq, tk);
    const bool perElement = !settings.paddedKeys.empty() || settings.custom.size() != 0;
    if (!perElement) {
        // Plain or causal: each row reads a prefix [0, n) of the keys.
        for (Eigen::Index i = 0; i < tq; ++i) {
            const Eigen::Index n = settings.causal ? std::min(i + 1, tk) : tk;
            auto out = weights.row(i);
            if (n == 0) {
                out.setZero();
                continue;
            }
            // Shift by the raw max before scaling: (s - max) <= 0, so exp never overflows and a
            // huge scale (tiny τ) turns every non-max logit into -inf, never inf - inf.
            const auto raw = scores.row(i).head(n).array();
            const float rowMax = raw.maxCoeff();
            out.head(n) = ((raw - rowMax) * scale).exp();
            out.head(n) /= out.head(n).sum();
            out.tail(tk - n).setZero();
        }
        return;
    }
    const MaskMat blocked = blockedMatrix(settings, tq, tk);
    for (Eigen::Index i = 0; i < tq; ++i) {
        float rowMax = -std::numeric_limits<float>::infinity();
        bool open = false;
        for (Eigen::Index j = 0; j < tk; ++j)
            if (!blocked(i, j)) rowMax = std::max(rowMax, scores(i, j)), open = true;
        if (!open) {  // every key blocked
            weights.row(i).setZero();
            continue;
        }
        float sum = 0.0f;
        for (Eigen::Index j = 0; j < tk; ++j) {
            const float e = blocked(i, j) ? 0.0f : std::exp((scores(i, j) - rowMax) * scale);
            weights(i, j) = e;
            sum += e;
        }
        weights.row(i) /= sum;
    }
}

RowStats rowStats(const MatRef& weights) {
    RowStats stats;
    const Eigen::Index tq = weights.rows();
    stats.sum.resize(tq);
    stats.max.resize(tq);
    stats.entropy.resize(tq);
    for (Eigen::Index i = 0; i < tq; ++i) {
        const auto row = weights.row(i);
        stats.sum(i) = row.sum();
        stats.max(i) = row.size() ? row.maxCoeff() : 0.0f;
        double h = 0.0;
        for (Eigen::Index j = 0; j < row.size(); ++j)
            if (row(j) > 0.0f) h -= static_cast<double>(row(j)) * std::log(static_cast<double>(row(j)));
        stats.entropy(i) = static_cast<float>(h);
    }
    return stats;
}

Mat meanWeights(const Forward& forward) {
    if (forward.heads.empty()) return {};
    Mat mean = forward.heads.front().weights;
    for (std::size_t h = 1; h < forward.heads.size(); ++h) mean += forward.heads[h].weights;
    mean /= static_cast<float>(forward.heads.size());
    return mean;
}

}  // namespace attnviz::core
