#include "core/attention/qk_tiles.hpp"

#include "core/attention/attention.hpp"
#include "core/attention/kernels.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace attnviz::core {

KeyBand readableKeys(const QkMask& mask, Eigen::Index i, Eigen::Index keys) { return keyBand(mask.causal, mask.window, i, keys); }

KeyRange tileKeyRange(const QkMask& mask, Eigen::Index keys, Eigen::Index r0, Eigen::Index n, Eigen::Index k0, Eigen::Index k1) {
    if (k1 < 0 || k1 > keys) k1 = keys;
    k0 = std::clamp<Eigen::Index>(k0, 0, k1);
    if (n <= 0) return {};
    const Eigen::Index end = std::min(readableKeys(mask, r0 + n - 1, keys).hi, k1);
    const Eigen::Index first = std::min(end, std::max(k0, readableKeys(mask, r0, keys).lo)) / kAttentionTileKeys * kAttentionTileKeys;
    return {first, std::max(first, end)};
}

void weightTiles(const MatRef& q, const MatRef& k, KeyRange range, const float* top, const float* sum, const QkMask& mask,
                 Eigen::Index keys, Eigen::Index r0, Eigen::Index k0, Eigen::Index k1, TileSink& sink) {
    const Eigen::Index n = q.rows();
    if (n == 0) return;
    if (k1 < 0 || k1 > keys) k1 = keys;
    k0 = std::clamp<Eigen::Index>(k0, 0, k1);
    thread_local PackedKeys packed;
    thread_local PackedRows queries;
    thread_local Mat scores, weights, logs;
    if (k.rows() > 0) packKeys(k, packed);
    static const std::vector<int> none;
    const std::vector<int>& hidden = mask.hidden ? *mask.hidden : none;
    for (Eigen::Index b0 = r0; b0 < r0 + n; b0 += kWeightTileRows) {
        const Eigen::Index rows = std::min(kWeightTileRows, r0 + n - b0);
        // keys [lo, last) of the block's rows, those asked for
        const Eigen::Index last = std::min(readableKeys(mask, b0 + rows - 1, keys).hi, k1);
        const Eigen::Index lo = std::max(k0, readableKeys(mask, b0, keys).lo);
        const MatRef qb = q.middleRows(b0 - r0, rows);
        packRows(qb, queries);
        for (Eigen::Index j0 = (last - 1) / kAttentionTileKeys * kAttentionTileKeys; last > lo && j0 >= 0 && j0 + kAttentionTileKeys > lo;
             j0 -= kAttentionTileKeys) {
            const Eigen::Index m = std::min(kAttentionTileKeys, last - j0);
            scores.resize(rows, m);
            weights.resize(rows, m);
            logs.resize(rows, m);
            scoreTile(qb, &queries, k, packed, j0 - range.first, scores);
            capScores(scores, mask.scale, mask.softcap);
            const auto hidden0 = std::lower_bound(hidden.begin(), hidden.end(), j0);
            for (Eigen::Index r = 0; r < rows; ++r) {
                const Eigen::Index i = b0 + r;
                // the row's readable keys of this tile, [a, b) from j0, the others 0
                const KeyBand band = readableKeys(mask, i, keys);
                const Eigen::Index a = std::clamp<Eigen::Index>(band.lo - j0, 0, m);
                const Eigen::Index b = std::clamp<Eigen::Index>(band.hi - j0, 0, m);
                auto w = weights.row(r), l = logs.row(r);
                if (a >= b || !std::isfinite(sum[i])) {  // no key here (or none at all: a zero row, as the pass gave)
                    w.setZero(), l.setZero();
                    continue;
                }
                w.head(a).setZero(), l.head(a).setZero();
                w.tail(m - b).setZero(), l.tail(m - b).setZero();
                weightsOfLogits(scores.row(r).data() + a, w.data() + a, l.data() + a, b - a, top[i], mask.scale, sum[i]);
                for (auto h = hidden0; h != hidden.end() && *h < j0 + b; ++h)
                    if (*h >= j0 + a) w(*h - j0) = l(*h - j0) = 0.0f;
            }
            const MatRef logView = logs;
            sink.tile(weights, &logView, b0, j0);
        }
        sink.rowsDone(b0, rows);
    }
}

bool logSumExp(const MatRef& q, const MatRef& k, const QkMask& mask, Eigen::Index keys, Eigen::Index first, float* top, float* sum) {
    const Eigen::Index tq = q.rows();
    thread_local PackedKeys packed;
    thread_local PackedRows queries;
    thread_local Mat scores, weights, logs;
    if (k.rows() > 0) packKeys(k, packed);
    std::vector<double> running;
    for (Eigen::Index b0 = 0; b0 < tq; b0 += kWeightTileRows) {
        const Eigen::Index rows = std::min(kWeightTileRows, tq - b0);
        const Eigen::Index last = std::min(readableKeys(mask, first + b0 + rows - 1, keys).hi, k.rows());
        const Eigen::Index lo = readableKeys(mask, first + b0, keys).lo;
        const MatRef qb = q.middleRows(b0, rows);
        packRows(qb, queries);
        // An online softmax's sums: each row's largest score so far, and the sum of the
        // exponentials under it (a tile's by the pass's own base-2 exponentials in float, the
        // tiles' in double), scaled down when a later tile holds a larger score.
        running.assign(static_cast<std::size_t>(rows), 0.0);
        for (Eigen::Index r = 0; r < rows; ++r) top[b0 + r] = -std::numeric_limits<float>::infinity();
        for (Eigen::Index j0 = lo / kAttentionTileKeys * kAttentionTileKeys; j0 < last; j0 += kAttentionTileKeys) {
            const Eigen::Index m = std::min(kAttentionTileKeys, last - j0);
            scores.resize(rows, m);
            scoreTile(qb, &queries, k, packed, j0, scores);
            capScores(scores, mask.scale, mask.softcap);
            for (Eigen::Index r = 0; r < rows; ++r) {
                const KeyBand band = readableKeys(mask, first + b0 + r, keys);
                const Eigen::Index a = std::clamp<Eigen::Index>(band.lo - j0, 0, m);
                const Eigen::Index b = std::clamp<Eigen::Index>(band.hi - j0, 0, m);
                if (a >= b) continue;
                const auto row = scores.row(r);
                if (!row.segment(a, b - a).allFinite()) return false;
                const float largest = row.segment(a, b - a).maxCoeff();
                float& t = top[b0 + r];
                double& sumHere = running[static_cast<std::size_t>(r)];
                if (largest > t) {
                    if (sumHere > 0) sumHere *= std::exp(static_cast<double>(mask.scale) * (static_cast<double>(t) - largest));
                    t = largest;
                }
                weights.resize(1, b - a);
                logs.resize(1, b - a);
                weightsOfLogits(row.data() + a, weights.data(), logs.data(), b - a, t, mask.scale, 0.0f);
                sumHere += static_cast<double>(weights.sum());
            }
        }
        for (Eigen::Index r = 0; r < rows; ++r) {
            const double s = running[static_cast<std::size_t>(r)];
            if (s > 0) {
                sum[b0 + r] = static_cast<float>(std::log(s));
            } else {
                top[b0 + r] = 0.0f;
                sum[b0 + r] = -std::numeric_limits<float>::infinity();
            }
        }
    }
    return true;
}

void RowsSink::tile(const MatRef& w, const MatRef* /*logs*/, Eigen::Index r0, Eigen::Index c0) {
    m_out.block(r0 - m_r0, c0, w.rows(), w.cols()) = w;
}

}  // namespace attnviz::core
