#include "core/attention/attention.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>

namespace attnviz::core {

bool isBlocked(const Settings& settings, Eigen::Index i, Eigen::Index j) {
    if (settings.causal && j > i) return true;
    if (outsideWindow(settings.window, settings.causal, i, j)) return true;
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
    if (settings.window > 0)
        for (Eigen::Index i = 0; i < tq; ++i)
            for (Eigen::Index j = 0; j < tk; ++j) blocked(i, j) = blocked(i, j) || outsideWindow(settings.window, settings.causal, i, j);
    return blocked;
}

namespace {

// Padding, a window or a custom mask: blocked keys anywhere in a row. Otherwise (no mask, or
// causal) each query reads a prefix of the keys, which the fast paths below rely on.
bool masksCells(const Settings& settings) { return !settings.paddedKeys.empty() || settings.custom.size() != 0 || settings.window > 0; }

}  // namespace

bool hasMask(const Settings& settings) { return settings.causal || masksCells(settings); }

void toTexels(const MatRef& weights, const Settings& settings, std::vector<float>& out) {
    const Eigen::Index tq = weights.rows(), tk = weights.cols();
    out.resize(static_cast<std::size_t>(tq * tk));
    Eigen::Map<Mat> texels(out.data(), tq, tk);
    texels = weights;
    if (!hasMask(settings)) return;
    if (!masksCells(settings)) {  // causal only: the triangle above the diagonal
        for (Eigen::Index i = 0; i + 1 < tk && i < tq; ++i) texels.row(i).tail(tk - i - 1).setConstant(kMaskedTexel);
        return;
    }
    const MaskMat blocked = blockedMatrix(settings, tq, tk);
    texels = blocked.select(Mat::Constant(tq, tk, kMaskedTexel), texels);
}

namespace {

// o[c] = max of band[c·F … c·F + F) over the full blocks, then the partial last one.
template <int F>
void poolColumns(const float* __restrict band, float* __restrict o, Eigen::Index tk, Eigen::Index cols) {
    const Eigen::Index full = tk / F;
    for (Eigen::Index c = 0; c < full; ++c) {
        float m = band[c * F];
        for (int k = 1; k < F; ++k) m = std::max(m, band[c * F + k]);
        o[c] = m;
    }
    for (Eigen::Index c = full; c < cols; ++c) {
        float m = kMaskedTexel;
        for (Eigen::Index j = c * F; j < tk; ++j) m = std::max(m, band[j]);
        o[c] = m;
    }
}

void poolColumns(int factor, const float* band, float* o, Eigen::Index tk, Eigen::Index cols) {
    switch (factor) {
        case 2: return poolColumns<2>(band, o, tk, cols);
        case 3: return poolColumns<3>(band, o, tk, cols);
        case 4: return poolColumns<4>(band, o, tk, cols);
        default: break;
    }
    for (Eigen::Index c = 0; c < cols; ++c) {
        float m = kMaskedTexel;
        for (Eigen::Index j = c * factor; j < std::min(tk, (c + 1) * factor); ++j) m = std::max(m, band[j]);
        o[c] = m;
    }
}

}  // namespace

namespace {

// poolTexels over rows that `rowOf(i, scratch)` gives (a pointer to query i's T_k weights, which
// may be written into scratch, a T_k buffer of the calling thread).
template <class RowOf>
void poolRows(Eigen::Index tq, Eigen::Index tk, const Settings& settings, int factor, std::vector<float>& out, const RowOf& rowOf) {
    const Eigen::Index rows = pooledSize(tq, factor), cols = pooledSize(tk, factor);
    out.resize(static_cast<std::size_t>(rows * cols));
    const bool perElement = masksCells(settings);
    const MaskMat blocked = perElement ? blockedMatrix(settings, tq, tk) : MaskMat();
#pragma omp parallel if (tq * tk >= (1 << 18))
    {
        // Column maxima of one band of `factor` rows: kMaskedTexel where every cell is masked.
        std::vector<float> bandStore(static_cast<std::size_t>(tk)), scratch(static_cast<std::size_t>(tk));
        float* __restrict band = bandStore.data();
#pragma omp for schedule(static)
        for (Eigen::Index r = 0; r < rows; ++r) {
            std::fill(band, band + tk, kMaskedTexel);
            for (Eigen::Index i = r * factor; i < std::min(tq, (r + 1) * factor); ++i) {
                const float* __restrict w = rowOf(i, scratch.data());
                if (perElement) {
                    const bool* __restrict b = blocked.row(i).data();
                    for (Eigen::Index j = 0; j < tk; ++j) band[j] = b[j] ? band[j] : std::max(band[j], w[j]);
                } else {
                    const Eigen::Index n = settings.causal ? std::min(i + 1, tk) : tk;
                    for (Eigen::Index j = 0; j < n; ++j) band[j] = std::max(band[j], w[j]);
                }
            }
            poolColumns(factor, band, out.data() + r * cols, tk, cols);
        }
    }
}

}  // namespace

void poolTexels(const MatRef& weights, const Settings& settings, int factor, std::vector<float>& out) {
    if (factor <= 1) {
        toTexels(weights, settings, out);
        return;
    }
    poolRows(weights.rows(), weights.cols(), settings, factor, out, [&](Eigen::Index i, float*) { return weights.row(i).data(); });
}

void poolMeanTexels(const Forward& forward, const Settings& settings, int factor, std::vector<float>& out, const MeanOptions& options) {
    if (factor <= 1 || forward.heads.empty() || options.skipFirstKey) {  // every cell a texel: the mean itself is that large
        // (the first key left out: the mean is made whole, then pooled)
        poolTexels(meanWeights(forward, options), settings, factor, out);
        return;
    }
    const auto& heads = forward.heads;
    const Eigen::Index tk = heads.front().weights.cols();
    const float count = static_cast<float>(heads.size());
    poolRows(heads.front().weights.rows(), tk, settings, factor, out, [&](Eigen::Index i, float* scratch) {
        // The same additions, in the same order, as meanWeights.
        Eigen::Map<Eigen::Matrix<float, 1, Eigen::Dynamic>> mean(scratch, tk);
        mean = heads.front().weights.row(i);
        for (std::size_t h = 1; h < heads.size(); ++h) mean += heads[h].weights.row(i);
        mean /= count;
        return static_cast<const float*>(scratch);
    });
}

float logitScale(int dk, const Settings& settings) {
    const double divisor = (settings.scaled ? std::sqrt(static_cast<double>(dk)) : 1.0) * static_cast<double>(settings.temperature);
    // Clamped into the positive float range so that (s - max) * c is never 0 * inf.
    return static_cast<float>(std::clamp(1.0 / divisor, static_cast<double>(std::numeric_limits<float>::min()),
                                         static_cast<double>(std::numeric_limits<float>::max())));
}

double alibiStep(float slope, int dk, const Settings& settings) {
    return static_cast<double>(slope) * (settings.scaled ? std::sqrt(static_cast<double>(dk)) : 1.0);
}

namespace {

// 2^y for y <= 0, written so the compiler vectorises it (attention.cpp is built with
// -fno-trapping-math): n = round(y) by the 1.5·2^23 trick (the low mantissa bits of y + 1.5·2^23
// hold n), r = y - n in [-1/2, 1/2] exactly, 2^r by a degree-5 polynomial fitted for least
// maximum relative error (9e-8, 2e-7 once evaluated in float), and 2^n added to its exponent
// bits. y below -125 (and -inf) gives exactly 0: those weights are below 2.4e-38.
// Compared with exp(x) by Cody-Waite reduction in natural units, the base-2 form has two
// multiply-adds and a multiply fewer per element.
inline float exp2NonPositive(float y) {
    const float shifted = y + 12582912.0f;
    const float r = y - (shifted - 12582912.0f);
    float p = 1.326472731307149e-3f;
    p = p * r + 9.671512991189957e-3f;
    p = p * r + 5.550733581185341e-2f;
    p = p * r + 2.4022242426872253e-1f;
    p = p * r + 6.931470036506653e-1f;
    p = p * r + 1.0f;
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(p) + (std::bit_cast<std::uint32_t>(shifted) << 23);
    return y < -125.0f ? 0.0f : std::bit_cast<float>(bits);
}

// c·log2(e), so that exp((s - max)·c) = 2^((s - max)·c·log2 e); clamped like c, so that
// (s - max)·c2 is never 0·inf.
float log2Scale(float scale) {
    return static_cast<float>(
        std::min(static_cast<double>(scale) * std::numbers::log2e, static_cast<double>(std::numeric_limits<float>::max())));
}

// out[j] = exp((raw[j] - max) * c) = 2^((raw[j] - max) * scale2) over n readable keys, with
// scale2 = log2Scale(c); returns their sum (eight partial sums, so the adds vectorise too).
float expRow(const float* __restrict raw, float* __restrict out, Eigen::Index n, float rowMax, float scale2) {
    float partial[8] = {};
    Eigen::Index j = 0;
    for (; j + 8 <= n; j += 8)
        for (int l = 0; l < 8; ++l) {
            const float e = exp2NonPositive((raw[j + l] - rowMax) * scale2);
            out[j + l] = e;
            partial[l] += e;
        }
    float sum = 0.0f;
    for (; j < n; ++j) sum += out[j] = exp2NonPositive((raw[j] - rowMax) * scale2);
    for (float p : partial) sum += p;
    return sum;
}

}  // namespace

void weightsOfLogits(const float* __restrict raw, float* __restrict weights, float* __restrict logs, Eigen::Index n, float top, float scale,
                     float logSum) {
    const float scale2 = log2Scale(scale), shift = logSum * std::numbers::log2e_v<float>;
    constexpr float kLn2 = std::numbers::ln2_v<float>;
    for (Eigen::Index j = 0; j < n; ++j) {
        const float y = (raw[j] - top) * scale2 - shift;  // log2 of the weight
        weights[j] = exp2NonPositive(std::min(y, 0.0f));
        logs[j] = y * kLn2;
    }
}

namespace {

// `maxima` when it has queries [0, end), else null (the maxima are then read from the scores).
const ScoreMaxima* covering(const ScoreMaxima* maxima, Eigen::Index end) {
    return maxima && maxima->all.size() >= end && maxima->causal.size() >= end ? maxima : nullptr;
}

// Steps 1 and 2 for a plain or causal row: query i, row r of scores, its first n keys readable
// (all keys, or i + 1 under a causal mask). out[0, n) = exp((s - max) · c), and the result is
// 1/Σ, step 3's factor. The maximum comes from `known` = covering(…), else from the row. A row
// with no readable key, or whose scores overflowed (then finite = 0), returns 0, its out zeros.
float exponentiate(const MatRef& scores, Eigen::Index r, Eigen::Index i, Eigen::Index n, const ScoreMaxima* known, float scale2, float* out,
                   int& finite) {
    if (n == 0) return 0.0f;
    // Shift by the raw max before scaling: (s - max) <= 0, so exp never overflows and a huge
    // scale (tiny τ) turns every non-max logit into -inf, never inf - inf.
    const float rowMax =
        known ? (n == scores.cols() ? known->all(i) : known->causal(i)) : scores.row(r).head(n).maxCoeff<Eigen::PropagateNaN>();
    if (!std::isfinite(rowMax)) {
        finite = 0;
        std::fill(out, out + n, 0.0f);
        return 0.0f;
    }
    return 1.0f / expRow(scores.row(r).data(), out, n, rowMax, scale2);
}

}  // namespace

bool attendTiled(const MatRef& q, const PackedRows* pq, const MatRef& k, const PackedKeys& keys, const MatRef& v,
                 const PackedColumns& values, float scale, int window, const std::vector<int>& hidden, Eigen::Index first, float* top,
                 float* sum, Eigen::Ref<Mat> out) {
    constexpr float kMinusInf = -std::numeric_limits<float>::infinity();
    const Eigen::Index rows = q.rows(), last = std::min(k.rows(), first + rows);  // keys [0, last): the last query's
    const Eigen::Index lo = window > 0 ? std::max<Eigen::Index>(0, first - window + 1) : 0;
    const float scale2 = log2Scale(scale);
    thread_local Mat scores, weights;
    thread_local std::vector<float> largest, total;  // per row: the largest score so far, and the sum under it
    largest.assign(static_cast<std::size_t>(rows), kMinusInf);
    total.assign(static_cast<std::size_t>(rows), 0.0f);
    out.setZero();
    for (Eigen::Index j0 = lo / kAttentionTileKeys * kAttentionTileKeys; j0 < last; j0 += kAttentionTileKeys) {
        const Eigen::Index n = std::min(kAttentionTileKeys, last - j0);
        scores.resize(rows, n);
        weights.resize(rows, n);
        scoreTile(q, pq, k, keys, j0, scores);
        const auto hidden0 = std::lower_bound(hidden.begin(), hidden.end(), j0);
        for (Eigen::Index r = 0; r < rows; ++r) {
            const Eigen::Index i = first + r;
            // the row's readable keys of this tile, [a, b) from j0, and the others at -∞ (weight 0)
            const Eigen::Index a = std::clamp<Eigen::Index>((window > 0 ? i - window + 1 : 0) - j0, 0, n);
            const Eigen::Index b = std::clamp<Eigen::Index>(i + 1 - j0, 0, n);
            auto s = scores.row(r);
            if (a >= b) {
                weights.row(r).setZero();
                continue;
            }
            s.head(a).setConstant(kMinusInf);
            s.tail(n - b).setConstant(kMinusInf);
            for (auto h = hidden0; h != hidden.end() && *h < j0 + b; ++h)
                if (*h >= j0 + a) s(*h - j0) = kMinusInf;
            const float tileMax = s.segment(a, b - a).maxCoeff<Eigen::PropagateNaN>();
            if (std::isnan(tileMax) || tileMax == std::numeric_limits<float>::infinity()) return false;
            if (tileMax == kMinusInf) {  // every readable key of the tile hidden
                weights.row(r).setZero();
                continue;
            }
            float& m = largest[static_cast<std::size_t>(r)];
            const float grown = std::max(m, tileMax);
            // Σ and the outputs so far were under exp(-scale · m): rescaled to the new largest
            const float rescale = m == kMinusInf ? 0.0f : exp2NonPositive((m - grown) * scale2);
            if (rescale != 1.0f) out.row(r) *= rescale;
            total[static_cast<std::size_t>(r)] =
                total[static_cast<std::size_t>(r)] * rescale + expRow(s.data(), weights.row(r).data(), n, grown, scale2);
            m = grown;
        }
        weighValueTile(weights, v, values, j0, out, true);
    }
    for (Eigen::Index r = 0; r < rows; ++r) {
        const float m = largest[static_cast<std::size_t>(r)], s = total[static_cast<std::size_t>(r)];
        if (m == kMinusInf || !(s > 0.0f)) {  // no key at all
            top[r] = 0.0f, sum[r] = kMinusInf;
            out.row(r).setZero();
            continue;
        }
        top[r] = m, sum[r] = std::log(s);
        out.row(r) *= 1.0f / s;
    }
    return true;
}

void capScores(Eigen::Ref<Mat> scores, float scale, float cap) {
    if (cap <= 0.0f) return;
    // 16 values at a time in a local array, so that Eigen's vectorised tanh gives every element
    // the same bits wherever it lies (its scalar path differs in the last bit).
    using Sixteen = Eigen::Array<float, 16, 1>;
    const float in = scale / cap, back = cap / scale;
    const Eigen::Index n = scores.cols();
    Sixteen a;
    for (Eigen::Index r = 0; r < scores.rows(); ++r) {
        float* row = scores.row(r).data();
        for (Eigen::Index c = 0; c < n; c += 16) {
            const Eigen::Index k = std::min<Eigen::Index>(16, n - c);
            a.setZero();
            std::copy_n(row + c, k, a.data());
            a = (a * in).tanh() * back;
            std::copy_n(a.data(), k, row + c);
        }
    }
}

void scoreMaxima(const MatRef& scores, Eigen::Index firstRow, ScoreMaxima& out) {
    const Eigen::Index rows = scores.rows(), tk = scores.cols();
    constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
    for (Eigen::Index r = 0; r < rows; ++r) {
        const Eigen::Index i = firstRow + r, prefix = std::min(i + 1, tk);
        const auto row = scores.row(r);
        const float upTo = prefix > 0 ? row.head(prefix).maxCoeff<Eigen::PropagateNaN>() : kNaN;
        const float rest = prefix < tk ? row.tail(tk - prefix).maxCoeff<Eigen::PropagateNaN>() : upTo;
        out.causal(i) = upTo;
        out.all(i) = std::isnan(upTo) || std::isnan(rest) ? kNaN : std::max(upTo, rest);
    }
}

bool softmaxRows(const MatRef& scores, float scale, const Settings& settings, Mat& weights, const ScoreMaxima* maxima) {
    weights.resize(scores.rows(), scores.cols());
    return softmaxRows(scores, scale, settings, Eigen::Ref<Mat>(weights), 0, maxima);
}

bool softmaxRows(const MatRef& scores, float scale, const Settings& settings, Eigen::Ref<Mat> weights, Eigen::Index firstRow,
                 const ScoreMaxima* maxima) {
    const Eigen::Index rows = scores.rows();
    const Eigen::Index tk = scores.cols();
    int finite = 1;  // every row's maximum is a finite number (else the scores overflowed)
    const float scale2 = log2Scale(scale);
    const bool perElement = masksCells(settings);
    const ScoreMaxima* known = covering(maxima, firstRow + rows);
    if (!perElement) {
        // Plain or causal: each row reads a prefix [0, n) of the keys. Rows are independent:
        // large matrices use every core (a no-op inside an already parallel region).
#pragma omp parallel for schedule(static) reduction(&& : finite) if (rows * tk >= (1 << 16))
        for (Eigen::Index r = 0; r < rows; ++r) {
            const Eigen::Index i = firstRow + r;  // the query this row belongs to
            const Eigen::Index n = settings.causal ? std::min(i + 1, tk) : tk;
            auto out = weights.row(r);
            out.head(n) *= exponentiate(scores, r, i, n, known, scale2, out.data(), finite);
            out.tail(tk - n).setZero();
        }
        return finite;
    }
    std::vector<char> padded(static_cast<std::size_t>(tk), 0);
    for (int p : settings.paddedKeys)
        if (p >= 0 && p < tk) padded[static_cast<std::size_t>(p)] = 1;
    const auto blocked = [&](Eigen::Index i, Eigen::Index j) {
        return (settings.causal && j > i) || padded[static_cast<std::size_t>(j)] || outsideWindow(settings.window, settings.causal, i, j) ||
               (settings.custom.size() != 0 && settings.custom(i, j));
    };
#pragma omp parallel for schedule(static) reduction(&& : finite) if (rows * tk >= (1 << 16))
    for (Eigen::Index r = 0; r < rows; ++r) {
        const Eigen::Index i = firstRow + r;
        float rowMax = -std::numeric_limits<float>::infinity();
        bool open = false, rowFinite = true;
        for (Eigen::Index j = 0; j < tk; ++j)
            if (!blocked(i, j)) {
                rowFinite = rowFinite && std::isfinite(scores(r, j));
                rowMax = std::max(rowMax, scores(r, j)), open = true;
            }
        if (!open || !rowFinite) {  // every key blocked (or overflowed scores)
            finite = finite && rowFinite;
            weights.row(r).setZero();
            continue;
        }
        float sum = 0.0f;
        for (Eigen::Index j = 0; j < tk; ++j) {
            const float e = blocked(i, j) ? 0.0f : exp2NonPositive((scores(r, j) - rowMax) * scale2);
            weights(r, j) = e;
            sum += e;
        }
        weights.row(r) *= 1.0f / sum;
    }
    return finite;
}

namespace {

// out[j] *= inv over [0, n) (softmaxRows' normalisation, the same product) and band[j] =
// max(band[j], out[j]), while the row is still in cache; then zeros over [n, tk).
void normalizeAndPool(float inv, Eigen::Index n, Eigen::Index tk, float* __restrict out, float* __restrict band) {
    Eigen::Index j = 0;
    for (; j < n; ++j) band[j] = std::max(band[j], out[j] *= inv);
    for (; j < tk; ++j) out[j] = 0.0f;
}

}  // namespace

bool softmaxPooled(const MatRef& scores, float scale, const Settings& settings, Mat& weights, int factor, std::vector<float>& texels,
                   const ScoreMaxima* maxima) {
    factor = std::max(1, factor);
    if (masksCells(settings)) {  // padding or a custom mask: the two passes
        const bool finite = softmaxRows(scores, scale, settings, weights, maxima);
        poolTexels(weights, settings, factor, texels);
        return finite;
    }
    const Eigen::Index tq = scores.rows(), tk = scores.cols();
    weights.resize(tq, tk);
    const Eigen::Index rows = pooledSize(tq, factor), cols = pooledSize(tk, factor);
    texels.resize(static_cast<std::size_t>(rows * cols));
    const float scale2 = log2Scale(scale);
    const ScoreMaxima* known = covering(maxima, tq);
    int finite = 1;
#pragma omp parallel reduction(&& : finite) if (tq * tk >= (1 << 16))
    {
        // The column maxima of one band of `factor` rows.
        std::vector<float> bandStore(static_cast<std::size_t>(tk));
        float* __restrict band = bandStore.data();
#pragma omp for schedule(static)
        for (Eigen::Index r = 0; r < rows; ++r) {
            std::fill(band, band + tk, kMaskedTexel);
            for (Eigen::Index i = r * factor; i < std::min(tq, (r + 1) * factor); ++i) {
                const Eigen::Index n = settings.causal ? std::min(i + 1, tk) : tk;
                float* out = weights.row(i).data();
                normalizeAndPool(exponentiate(scores, i, i, n, known, scale2, out, finite), n, tk, out, band);
            }
            poolColumns(factor, band, texels.data() + r * cols, tk, cols);
        }
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

const char* meanRule(const MeanOptions& options) {
    return options.skipFirstKey ? "mean over heads, first key left out (each head's row over keys j >= 1 renormalised)" : "mean over heads";
}

Mat meanWeights(const Forward& forward, const MeanOptions& options) {
    if (forward.heads.empty()) return {};
    return meanWeights(forward, 0, forward.heads.front().weights.rows(), options);
}

Mat withoutFirstKey(const MatRef& rows) {
    Mat out = rows;
    if (out.cols() > 0) out.col(0).setZero();
    for (Eigen::Index i = 0; i < out.rows(); ++i) {
        const float rest = out.row(i).sum();
        if (rest > 0.0f) out.row(i) /= rest;
    }
    return out;
}

Mat meanWeights(const Forward& forward, Eigen::Index firstRow, Eigen::Index rows, const MeanOptions& options) {
    if (forward.heads.empty()) return {};
    if (options.skipFirstKey) {
        Mat mean = withoutFirstKey(forward.heads.front().weights.middleRows(firstRow, rows));
        for (std::size_t h = 1; h < forward.heads.size(); ++h) mean += withoutFirstKey(forward.heads[h].weights.middleRows(firstRow, rows));
        mean /= static_cast<float>(forward.heads.size());
        return mean;
    }
    Mat mean = forward.heads.front().weights.middleRows(firstRow, rows);
    for (std::size_t h = 1; h < forward.heads.size(); ++h) mean += forward.heads[h].weights.middleRows(firstRow, rows);
    mean /= static_cast<float>(forward.heads.size());
    return mean;
}

}  // namespace attnviz::core
