#include "core/labs/flash_walk.hpp"

#include "core/base/error.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace attnviz::core {
namespace {

constexpr float kMinusInf = -std::numeric_limits<float>::infinity();

// Raw scores of one tile, as scoreHead makes them: s: [rows, cols] = q[q0 …] k[k0 …]ᵀ minus
// ALiBi's penaltyStep · |i - j|, and -inf where the query may not read the key. Returns whether
// any cell is readable (false: the tile is skipped).
bool scoreTile(const HeadTensors& head, const Settings& settings, double penaltyStep, Eigen::Index q0, Eigen::Index k0, Eigen::Ref<Mat> s) {
    s.noalias() = head.q.middleRows(q0, s.rows()) * head.k.middleRows(k0, s.cols()).transpose();
    bool open = false;
    for (Eigen::Index r = 0; r < s.rows(); ++r)
        for (Eigen::Index c = 0; c < s.cols(); ++c) {
            const Eigen::Index i = q0 + r, j = k0 + c;
            if (isBlocked(settings, i, j)) {
                s(r, c) = kMinusInf;
                continue;
            }
            if (penaltyStep != 0.0) s(r, c) -= static_cast<float>(penaltyStep * static_cast<double>(i > j ? i - j : j - i));
            if (!std::isfinite(s(r, c))) throw InputError("scores", "Q Kᵀ overflows the float range; the inputs or weights are too large");
            open = true;
        }
    return open;
}

void checkShapes(const HeadTensors& head, const FlashTiles& tiles) {
    if (tiles.queries < 1 || tiles.keys < 1)
        throw InputError("tiles", "must be 1 or more, got " + std::to_string(tiles.queries) + " x " + std::to_string(tiles.keys));
    if (head.k.cols() != head.q.cols())
        throw InputError("K",
                         "expected " + std::to_string(head.q.cols()) + " columns like Q, got " + shapeString(head.k.rows(), head.k.cols()));
    if (head.v.rows() != head.k.rows())
        throw InputError("V",
                         "expected " + std::to_string(head.k.rows()) + " rows like K, got " + shapeString(head.v.rows(), head.v.cols()));
}

}  // namespace

FlashWalk flashWalk(const HeadTensors& head, const Settings& settings, const FlashTiles& tiles) {
    checkShapes(head, tiles);
    const Eigen::Index tq = head.q.rows(), tk = head.k.rows(), dk = head.q.cols(), dv = head.v.cols();
    const float scale = logitScale(static_cast<int>(dk), settings);
    // ALiBi's penalty per step of distance in raw-score units, as the scores have it.
    const double penaltyStep = alibiStep(head.alibiSlope, static_cast<int>(dk), settings);
    const Eigen::Index br = std::clamp<Eigen::Index>(tiles.queries, 1, std::max<Eigen::Index>(tq, 1));
    const Eigen::Index bc = std::clamp<Eigen::Index>(tiles.keys, 1, std::max<Eigen::Index>(tk, 1));

    FlashWalk walk;
    walk.output = Mat::Zero(tq, dv);
    walk.weights = Mat::Zero(tq, tk);
    walk.materialisedFloats = static_cast<std::uint64_t>(tq) * static_cast<std::uint64_t>(tk);
    walk.peakFloats = tq > 0 && tk > 0 ? static_cast<std::uint64_t>(br * bc + 2 * br) : 0;
    walk.steps.reserve(static_cast<std::size_t>(((tq + br - 1) / br) * ((tk + bc - 1) / bc)));

    // The working set: one tile of scores (then P, in place), m and l of its rows. m is kept in
    // raw-score units and scaled with each difference, exp((s - m) c), as softmaxRows does: the
    // same as exp(S - m·c), but without rounding a large s·c first.
    Mat s(br, bc);
    Vec m(br), l(br);
    Mat acc(br, dv);  // Õ of the tile's rows (counted with O)
    for (Eigen::Index q0 = 0; q0 < tq; q0 += br) {
        const Eigen::Index rows = std::min(br, tq - q0);
        m.setConstant(kMinusInf);
        l.setZero();
        acc.setZero();
        for (Eigen::Index k0 = 0; k0 < tk; k0 += bc) {
            const Eigen::Index cols = std::min(bc, tk - k0);
            auto tile = s.topLeftCorner(rows, cols);
            FlashStep step{q0, rows, k0, cols, {}, {}, Vec::Ones(rows), false};
            // 1. scores of the tile, masked; a tile with no readable cell is skipped whole
            step.skipped = !scoreTile(head, settings, penaltyStep, q0, k0, tile);
            if (!step.skipped) {
                for (Eigen::Index r = 0; r < rows; ++r) {
                    // 2. the new running maximum (c > 0 keeps the argmax)
                    const float mNew = std::max(m(r), tile.row(r).maxCoeff());
                    if (mNew == kMinusInf) {  // nothing read yet: exp(-inf - -inf) would be NaN; l, Õ stay 0
                        tile.row(r).setZero();
                        continue;
                    }
                    // 3. P = exp((s - m_new) c): exactly 0 for blocked cells
                    float sum = 0.0f;
                    for (Eigen::Index c = 0; c < cols; ++c) sum += tile(r, c) = std::exp((tile(r, c) - mNew) * scale);
                    // 4. the old sum and output rescaled to the new maximum (0 when m was -inf)
                    step.rescale(r) = std::exp((m(r) - mNew) * scale);
                    l(r) = step.rescale(r) * l(r) + sum;
                    acc.row(r) *= step.rescale(r);
                    m(r) = mNew;
                }
                // 5. Õ += P V_j
                acc.topRows(rows).noalias() += tile * head.v.middleRows(k0, cols);
            }
            step.rowMax = m.head(rows) * scale;
            step.rowSum = l.head(rows);
            walk.steps.push_back(std::move(step));
        }
        // 6. O = diag(1/l) Õ; a row that read no key stays 0
        for (Eigen::Index r = 0; r < rows; ++r)
            if (l(r) > 0.0f) walk.output.row(q0 + r) = acc.row(r) / l(r);
        // 7. A for display from the final m and l, the scores recomputed a tile at a time
        for (Eigen::Index k0 = 0; k0 < tk; k0 += bc) {
            const Eigen::Index cols = std::min(bc, tk - k0);
            auto tile = s.topLeftCorner(rows, cols);
            if (!scoreTile(head, settings, penaltyStep, q0, k0, tile)) continue;
            for (Eigen::Index r = 0; r < rows; ++r)
                if (l(r) > 0.0f)
                    for (Eigen::Index c = 0; c < cols; ++c) walk.weights(q0 + r, k0 + c) = std::exp((tile(r, c) - m(r)) * scale) / l(r);
        }
    }
    return walk;
}

FlashGap flashGap(const FlashWalk& walk, const HeadTensors& head) {
    const auto largest = [](const Mat& a, const Mat& b) {
        if (a.rows() != b.rows() || a.cols() != b.cols()) return std::numeric_limits<float>::infinity();
        return a.size() ? (a - b).cwiseAbs().maxCoeff() : 0.0f;
    };
    return {largest(walk.output, head.output), largest(walk.weights, head.weights)};
}

}  // namespace attnviz::core
