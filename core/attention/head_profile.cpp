// Attention by distance and the mass on the first tokens across positions (head_profile.hpp gives
// the definitions). A row reading one band of keys [lo, hi) sums each distance bin over at most two
// segments of it (left and right of the query), in float chunks added in double as the head
// statistics do; a row under padding or a custom mask is read key by key against its mask.
#include "core/attention/head_profile.hpp"

#include "core/attention/attention_maps.hpp"

#include <algorithm>
#include <bit>
#include <cstdlib>

namespace attnviz::core {
namespace {

using Index = Eigen::Index;
constexpr Index kChunk = 64;
constexpr Index kOwnBins = 8;  // distances 0 … 7 each a bin of their own
constexpr Index kPerDoubling = 4;

double massOf(const float* w, Index n) {
    double mass = 0;
    for (Index k = 0; k < n; k += kChunk) mass += Eigen::Map<const Eigen::ArrayXf>(w + k, std::min(kChunk, n - k)).sum();
    return mass;
}

// The least of 1, 2, 5, 10, 20, 50, … at least `needed`.
Index roundBlock(Index needed) {
    for (Index decade = 1;; decade *= 10)
        for (const Index m : {1, 2, 5})
            if (m * decade >= needed) return m * decade;
}

}  // namespace

ProfileBins profileBins(Index queries, Index keys, int firstTokens, int positionBins) {
    ProfileBins bins;
    bins.firstTokens = std::max(1, firstTokens);
    const Index end = std::max<Index>({1, queries, keys});  // distances 0 … end − 1
    for (Index d = 0; d <= std::min(kOwnBins, end); ++d) bins.distance.push_back(d);
    for (Index base = kOwnBins; bins.distance.back() < end; base *= 2)
        for (Index m = 1; m <= kPerDoubling && bins.distance.back() < end; ++m)
            bins.distance.push_back(std::min(end, base + m * (base / kPerDoubling)));
    const Index block = roundBlock((std::max<Index>(queries, 1) + positionBins - 1) / std::max(positionBins, 1));
    for (Index p = 0; p < queries; p += block) bins.positions.push_back(p);
    bins.positions.push_back(std::max<Index>(queries, 0));
    return bins;
}

int distanceBin(const ProfileBins& bins, Index distance) {
    Index bin = distance;
    if (distance >= kOwnBins) {
        const auto doubling = static_cast<Index>(std::bit_width(static_cast<std::uint64_t>(distance))) - 1;  // 2^doubling ≤ distance
        const Index quarter = (distance - (Index{1} << doubling)) >> (doubling - 2);
        bin = kOwnBins + (doubling - 3) * kPerDoubling + quarter;
    }
    return static_cast<int>(std::clamp<Index>(bin, 0, bins.distanceBins() - 1));
}

ProfileSums::ProfileSums(const ProfileBins& bins, Index queries, Index keys, const Settings& settings)
    : m_bins(bins), m_tk(keys), m_settings(settings) {
    static_cast<void>(queries);
    m_banded = settings.custom.size() == 0 && settings.paddedKeys.empty();
    const auto distanceBins = static_cast<std::size_t>(std::max(0, bins.distanceBins()));
    const auto positionBins = static_cast<std::size_t>(std::max(0, bins.positionBins()));
    m_weight.assign(distanceBins, 0.0);
    m_uniform.assign(distanceBins, 0.0);
    m_pairs.assign(distanceBins, 0);
    m_firstK.assign(positionBins, 0.0);
    m_rows.assign(positionBins, 0);
}

void ProfileSums::addRows(const MatRef& rows, Index firstRow) {
    addTile(rows, firstRow, 0);
    finishRows(firstRow, rows.rows());
}

void ProfileSums::addTile(const MatRef& w, Index r0, Index c0) {
    for (Index r = 0; r < w.rows(); ++r) addTileRow(w.data() + r * w.outerStride(), r0 + r, c0, c0 + w.cols());
}

void ProfileSums::finishRows(Index r0, Index n) {
    for (Index i = r0; i < r0 + n; ++i) countRow(i);
}

// Row i's weights of keys [c0, c1) (tile[j − c0]: key j) into the distance bins, and its mass on
// the first k keys among them.
void ProfileSums::addTileRow(const float* tile, Index i, Index c0, Index c1) {
    const auto at = [&](Index j) { return tile + (j - c0); };
    if (m_banded) {
        const KeyBand band = keyBand(m_settings, i, m_tk);
        const Index lo = std::max(band.lo, c0), hi = std::min(band.hi, c1);
        // left of the query (and the query itself): distances i − j, nearest first, a bin at a time
        for (Index j = std::min(hi, i + 1) - 1; j >= lo;) {
            const int b = distanceBin(m_bins, i - j);
            const Index first = std::clamp(i - m_bins.distance[static_cast<std::size_t>(b) + 1] + 1, lo, j);  // the bin's farthest key here
            m_weight[static_cast<std::size_t>(b)] += massOf(at(first), j + 1 - first);
            j = first - 1;
        }
        // right of it: distances j − i
        for (Index j = std::max(lo, i + 1); j < hi;) {
            const int b = distanceBin(m_bins, j - i);
            const Index end = std::clamp(i + m_bins.distance[static_cast<std::size_t>(b) + 1], j + 1, hi);
            m_weight[static_cast<std::size_t>(b)] += massOf(at(j), end - j);
            j = end;
        }
    } else {
        blockedRow(m_settings, i, m_tk, m_blocked);
        for (Index j = c0; j < c1; ++j)
            if (!m_blocked[static_cast<std::size_t>(j)]) m_weight[static_cast<std::size_t>(distanceBin(m_bins, std::abs(i - j)))] += *at(j);
    }
    const Index k = m_bins.firstTokens;
    if (i < k || m_bins.positionBins() < 1 || c0 >= std::min(k, m_tk)) return;
    // a blocked key holds 0: the first k keys' weights are the row's mass on the ones it may read
    m_firstK[positionBin(i)] += massOf(tile, std::min({k, m_tk, c1}) - c0);
}

// Row i's pairs of each distance (what the uniform row would put there), and that it counts for
// the mass on the first k keys.
void ProfileSums::countRow(Index i) {
    if (m_banded) {
        const auto [lo, hi] = keyBand(m_settings, i, m_tk);
        const Index readable = std::max<Index>(hi - lo, 0);
        for (int b = 0; b < m_bins.distanceBins() && readable > 0; ++b) {
            const Index near = m_bins.distance[static_cast<std::size_t>(b)], far = m_bins.distance[static_cast<std::size_t>(b) + 1];
            // left of the query (and the query itself): j ∈ [i − far + 1, i − near]; right: [i + near, i + far − 1], j = i once
            const Index leftLo = std::max(lo, i - far + 1), leftHi = std::min(hi, i - near + 1);
            const Index rightLo = std::max(lo, i + std::max<Index>(near, 1)), rightHi = std::min(hi, i + far);
            if (i - near < lo && i + std::max<Index>(near, 1) >= hi) break;  // this bin and every later one past the band
            const Index pairs = std::max<Index>(leftHi - leftLo, 0) + std::max<Index>(rightHi - rightLo, 0);
            if (pairs == 0) continue;
            const auto at = static_cast<std::size_t>(b);
            m_pairs[at] += pairs;
            m_uniform[at] += static_cast<double>(pairs) / static_cast<double>(readable);
        }
    } else {
        blockedRow(m_settings, i, m_tk, m_blocked);
        const auto readable = static_cast<Index>(std::count(m_blocked.begin(), m_blocked.end(), 0));
        for (Index j = 0; j < m_tk && readable > 0; ++j) {
            if (m_blocked[static_cast<std::size_t>(j)]) continue;
            const auto at = static_cast<std::size_t>(distanceBin(m_bins, std::abs(i - j)));
            m_pairs[at] += 1;
            m_uniform[at] += 1.0 / static_cast<double>(readable);
        }
    }
    if (i < m_bins.firstTokens || m_bins.positionBins() < 1) return;
    m_rows[positionBin(i)] += 1;
}

std::size_t ProfileSums::positionBin(Index i) const {
    const auto p =
        static_cast<std::size_t>(std::upper_bound(m_bins.positions.begin(), m_bins.positions.end(), i) - m_bins.positions.begin() - 1);
    return std::min(p, m_firstK.size() - 1);
}

HeadProfile ProfileSums::result() const {
    HeadProfile out;
    out.pairs = m_pairs;
    out.rows = m_rows;
    out.byDistance.resize(m_weight.size());
    out.uniform.resize(m_weight.size());
    for (std::size_t b = 0; b < m_weight.size(); ++b) {
        const double n = static_cast<double>(std::max<long long>(m_pairs[b], 1));
        out.byDistance[b] = m_pairs[b] > 0 ? m_weight[b] / n : 0.0;
        out.uniform[b] = m_pairs[b] > 0 ? m_uniform[b] / n : 0.0;
    }
    out.firstKAt.resize(m_firstK.size());
    for (std::size_t p = 0; p < m_firstK.size(); ++p) out.firstKAt[p] = m_rows[p] > 0 ? m_firstK[p] / static_cast<double>(m_rows[p]) : 0.0;
    return out;
}

HeadProfile headProfile(const MatRef& weights, const Settings& settings, int firstTokens) {
    const ProfileBins bins = profileBins(weights.rows(), weights.cols(), firstTokens);
    ProfileSums sums(bins, weights.rows(), weights.cols(), settings);
    sums.addRows(weights, 0);
    return sums.result();
}

std::string headProfileRule(const ProfileBins& bins) {
    const Index block = bins.positions.size() >= 2 ? bins.positions[1] - bins.positions[0] : 1;
    return "by distance: the mean weight over the pairs (query i, key j) the mask lets i read whose |i - j| falls in the bin "
           "(0 ... 7 each, then four bins a doubling), beside the same mean for attention spread evenly over each row's readable "
           "keys; first k: the mass on tokens 1 ... " +
           std::to_string(bins.firstTokens) + ", the mean over the queries after them, in blocks of " + std::to_string(block) +
           (block == 1 ? " position" : " positions");
}

}  // namespace attnviz::core
