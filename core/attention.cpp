#include "core/attention.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
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
    MaskMat blocked = settings.custom.size() ? settings.custom : MaskMat(MaskMat::Zero(tq, tk));
    for (int p : settings.paddedKeys)
        if (p >= 0 && p < tk) blocked.col(p).setConstant(true);
    if (settings.causal)
        for (Eigen::Index i = 0; i + 1 < tk && i < tq; ++i) blocked.row(i).tail(tk - i - 1).setConstant(true);
    return blocked;
}

bool hasMask(const Settings& settings) {
    return settings.causal || !settings.paddedKeys.empty() || settings.custom.size() != 0;
}

void toTexels(const MatRef& weights, const Settings& settings, std::vector<float>& out) {
    const Eigen::Index tq = weights.rows(), tk = weights.cols();
    out.resize(static_cast<std::size_t>(tq * tk));
    Eigen::Map<Mat> texels(out.data(), tq, tk);
    texels = weights;
    if (!hasMask(settings)) return;
    if (settings.causal && settings.paddedKeys.empty() && settings.custom.size() == 0) {
        for (Eigen::Index i = 0; i + 1 < tk && i < tq; ++i) texels.row(i).tail(tk - i - 1).setConstant(kMaskedTexel);
        return;
    }
    const MaskMat blocked = blockedMatrix(settings, tq, tk);
    texels = blocked.select(Mat::Constant(tq, tk, kMaskedTexel), texels);
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

namespace {

// exp(x) for x <= 0, written so the compiler vectorises it (attention.cpp is built with
// -fno-trapping-math): round(x·log2 e) by the 1.5·2^23 trick, Cody-Waite reduction, the Cephes
// single-precision polynomial (relative error below 1e-7); x below -87.3 (and -inf) gives 0.
inline float expNonPositive(float x) {
    const float xc = x < -87.3f ? -87.3f : x;
    const float shifted = xc * 1.44269504088896341f + 12582912.0f;  // low mantissa bits = round(·)
    const float t = shifted - 12582912.0f;
    const float r = xc - t * 0.693359375f + t * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    const std::int32_t n = std::bit_cast<std::int32_t>(shifted) - std::bit_cast<std::int32_t>(12582912.0f);
    const float v = p * std::bit_cast<float>((n + 127) << 23);  // p · 2^n
    return x < -87.3f ? 0.0f : v;
}

// out[j] = exp((raw[j] - max) * scale) over n readable keys; returns their sum.
float expRow(const float* __restrict raw, float* __restrict out, Eigen::Index n, float rowMax, float scale) {
    for (Eigen::Index j = 0; j < n; ++j) out[j] = expNonPositive((raw[j] - rowMax) * scale);
    return Eigen::Map<const RowVec>(out, n).sum();
}

}  // namespace

bool softmaxRows(const MatRef& scores, float scale, const Settings& settings, Mat& weights) {
    const Eigen::Index tq = scores.rows();
    const Eigen::Index tk = scores.cols();
    weights.resize(tq, tk);
    int finite = 1;  // every row's maximum is a finite number (else the scores overflowed)
    const bool perElement = !settings.paddedKeys.empty() || settings.custom.size() != 0;
    if (!perElement) {
        // Plain or causal: each row reads a prefix [0, n) of the keys. Rows are independent:
        // large matrices use every core (a no-op inside an already parallel region).
#pragma omp parallel for schedule(static) reduction(&& : finite) if (tq * tk >= (1 << 16))
        for (Eigen::Index i = 0; i < tq; ++i) {
            const Eigen::Index n = settings.causal ? std::min(i + 1, tk) : tk;
            auto out = weights.row(i);
            if (n == 0) {
                out.setZero();
                continue;
            }
            // Shift by the raw max before scaling: (s - max) <= 0, so exp never overflows and a
            // huge scale (tiny τ) turns every non-max logit into -inf, never inf - inf.
            const float rowMax = scores.row(i).head(n).maxCoeff<Eigen::PropagateNaN>();
            if (!std::isfinite(rowMax)) {
                finite = 0;
                out.setZero();
                continue;
            }
            const float sum = expRow(scores.row(i).data(), out.data(), n, rowMax, scale);
            out.head(n) *= 1.0f / sum;
            out.tail(tk - n).setZero();
        }
        return finite;
    }
    const MaskMat blocked = blockedMatrix(settings, tq, tk);
#pragma omp parallel for schedule(static) reduction(&& : finite) if (tq * tk >= (1 << 16))
    for (Eigen::Index i = 0; i < tq; ++i) {
        float rowMax = -std::numeric_limits<float>::infinity();
        bool open = false, rowFinite = true;
        for (Eigen::Index j = 0; j < tk; ++j)
            if (!blocked(i, j)) {
                rowFinite = rowFinite && std::isfinite(scores(i, j));
                rowMax = std::max(rowMax, scores(i, j)), open = true;
            }
        if (!open || !rowFinite) {  // every key blocked (or overflowed scores)
            finite = finite && rowFinite;
            weights.row(i).setZero();
            continue;
        }
        float sum = 0.0f;
        for (Eigen::Index j = 0; j < tk; ++j) {
            const float e = blocked(i, j) ? 0.0f : expNonPositive((scores(i, j) - rowMax) * scale);
            weights(i, j) = e;
            sum += e;
        }
        weights.row(i) *= 1.0f / sum;
    }
    return finite;
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
