// Head statistics (head_stats.hpp gives the definitions). Each row is read once, over the keys it
// may read: a band [lo, hi) under no mask, a causal mask or a window (a blocked key holds 0, so
// nothing outside the band counts), every key with the mask matrix beside it under padding or a
// custom mask. A row's sums run on float vectors (Eigen's packet log) in chunks of 64 keys, the
// chunks added in double, so a head's numbers match a float64 recomputation to ~1e-7.
#include "core/attention/head_stats.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>
#include <utility>

namespace attnviz::core {
namespace {

using Index = Eigen::Index;
using ArrayMap = Eigen::Map<const Eigen::ArrayXf>;

// Where the keys matching each query's token are, as chains through earlier positions (built
// once for every head of a pass; the walks below cost the matches, not T²):
//   sameBefore[i]     the largest j < i with tⱼ = tᵢ, or −1; sameBefore[j] goes on from there;
//   inductionLast[i]  the largest j ≤ i, j ≥ 1, with tⱼ₋₁ = tᵢ, or −1;
//   inductionPrev[j]  the next smaller j′ ≥ 1 with tⱼ′₋₁ = tⱼ₋₁, or −1.
struct TokenLinks {
    std::vector<Index> sameBefore, inductionLast, inductionPrev;
    explicit operator bool() const { return !sameBefore.empty(); }
};

TokenLinks tokenLinks(const std::vector<int>& ids) {
    TokenLinks links;
    const std::size_t n = ids.size();
    links.sameBefore.assign(n, -1);
    links.inductionLast.assign(n, -1);
    links.inductionPrev.assign(n, -1);
    std::unordered_map<int, Index> lastSeen, lastAfter;  // id → latest position; id → latest key after it
    for (std::size_t i = 0; i < n; ++i) {
        if (i >= 1) {
            const auto [it, fresh] = lastAfter.try_emplace(ids[i - 1], static_cast<Index>(i));
            if (!fresh) links.inductionPrev[i] = std::exchange(it->second, static_cast<Index>(i));
        }
        if (const auto it = lastAfter.find(ids[i]); it != lastAfter.end()) links.inductionLast[i] = it->second;
        const auto [it, fresh] = lastSeen.try_emplace(ids[i], static_cast<Index>(i));
        if (!fresh) links.sameBefore[i] = std::exchange(it->second, static_cast<Index>(i));
    }
    return links;
}

// 0, 1, …, T_k − 1 and T_k − 1, …, 0 as floats: the distances |i − j| of a band's keys are a
// segment of one of them.
struct Ramps {
    Eigen::ArrayXf up, down;
    explicit Ramps(Index tk) : up(Eigen::ArrayXf::LinSpaced(tk, 0.0f, static_cast<float>(tk - 1))), down(up.reverse()) {}
};

// A row segment's sums, each over chunks of kChunk floats (Eigen's packets: a few terms a lane,
// so a chunk's float sum is good to ~1e-7), the chunks added in double:
//   mass Σ w, entropy −Σ x ln x with x = w · scale (0 ln 0 = 0: ln FLT_MIN times 0), and
//   distance Σ w · r with r the keys' distances from the query.
constexpr Index kChunk = 64;

struct RowSums {
    double mass = 0, entropy = 0, distance = 0;
};

void addRowSums(const float* w, const float* r, Index n, float scale, RowSums& sums) {
    for (Index k = 0; k < n; k += kChunk) {
        const Index m = std::min(kChunk, n - k);
        const ArrayMap c(w + k, m), d(r + k, m);
        const auto x = c * scale;
        sums.mass += c.sum();
        sums.entropy -= (x * x.max(std::numeric_limits<float>::min()).log()).sum();
        sums.distance += (c * d).sum();
    }
}

double massOf(const float* w, Index n) {
    double mass = 0;
    for (Index k = 0; k < n; k += kChunk) mass += ArrayMap(w + k, std::min(kChunk, n - k)).sum();
    return mass;
}

// One head's statistics: weights [T_q, T_k]; links of the T_k ids (or empty).
HeadStats statsOf(const MatRef& a, const TokenLinks& links, const Ramps& ramps, const Settings& settings, const HeadStatsOptions& options) {
    HeadStats s;
    const Index tq = a.rows(), tk = a.cols();
    const bool tokens = links && static_cast<Index>(links.sameBefore.size()) == tk && tk >= tq;
    // Padding or a custom mask: blocked keys anywhere in a row, read from the whole mask.
    const bool banded = settings.paddedKeys.empty() && settings.custom.size() == 0;
    const MaskMat blocked = banded ? MaskMat() : blockedMatrix(settings, tq, tk);
    const Index firstKept = options.skipFirstKey ? 1 : 0;
    double entropy = 0, share = 0, distance = 0, self = 0, previous = 0, first = 0, total = 0, duplicate = 0, induction = 0;
    long long rows = 0, shareRows = 0, selfRows = 0, previousRows = 0, firstRows = 0;
    for (Index i = 0; i < tq; ++i) {
        // 1. the keys the row may read: [lo, hi), and how many
        Index lo = 0, hi = tk, readable = 0;
        if (banded) {
            if (settings.causal) hi = std::min(hi, i + 1);
            if (settings.window > 0) {
                lo = std::clamp<Index>(i - settings.window + 1, 0, tk);
                if (!settings.causal) hi = std::min(hi, i + settings.window);
            }
            hi = std::max(hi, lo);
            readable = hi - lo;
        } else {
            readable = tk - blocked.row(i).count();
        }
        const auto reads = [&](Index j) { return j >= firstKept && j < tk && (banded ? j >= lo && j < hi : !blocked(i, j)); };
        if (options.skipFirstKey && tk > 0 && (banded ? lo == 0 && hi > 0 : !blocked(i, 0))) --readable;  // key 0 no longer counts
        const Index from = std::max(lo, firstKept);
        const Index count = std::max<Index>(hi - from, 0);
        const float* row = a.data() + i * a.outerStride();
        // 2. the row's mass over the keys kept, and the scale that renormalises it
        double mass = 0, scale = 1;
        if (options.skipFirstKey) {
            mass = massOf(row + from, count);
            if (readable < 1 || !(mass > 0)) continue;  // reads key 0 alone (or puts nothing elsewhere): left out
            scale = 1 / mass;
        }
        ++rows;
        // 3. the sums: keys left of the query weigh i − j (a segment of the falling ramp), keys
        // right of it j − i (of the rising one)
        const Index split = std::clamp(i + 1, from, std::max(from, hi));
        RowSums sums;
        if (split > from) addRowSums(row + from, ramps.down.data() + (tk - 1 - i + from), split - from, static_cast<float>(scale), sums);
        if (hi > split) addRowSums(row + split, ramps.up.data() + (split - i), hi - split, static_cast<float>(scale), sums);
        if (!options.skipFirstKey) mass = sums.mass;
        // 4. entropy (of the renormalised row when the first key is left out), its share of
        // ln(keys readable), and the distance
        const double h = sums.entropy;
        entropy += h;
        if (readable >= 2) share += h / std::log(static_cast<double>(readable)), ++shareRows;
        distance += sums.distance * scale;
        // 5. the keys of a fixed offset
        if (reads(i)) self += row[i] * scale, ++selfRows;
        if (i >= 1 && reads(i - 1)) previous += row[i - 1] * scale, ++previousRows;
        if (reads(firstKept)) first += row[firstKept] * scale, ++firstRows;
        // 6. the token patterns (a blocked key holds 0: the walks stop at the band's start)
        total += mass * scale;
        if (!tokens) continue;
        double dup = 0, ind = 0;
        for (Index j = links.sameBefore[static_cast<std::size_t>(i)]; j >= from; j = links.sameBefore[static_cast<std::size_t>(j)])
            dup += row[j];
        for (Index j = links.inductionLast[static_cast<std::size_t>(i)]; j >= std::max<Index>(from, 1);
             j = links.inductionPrev[static_cast<std::size_t>(j)])
            if (j < hi) ind += row[j];
        duplicate += dup * scale;
        induction += ind * scale;
    }
    const auto mean = [](double sum, long long n) { return n > 0 ? sum / static_cast<double>(n) : 0.0; };
    // Without leaving out the first key every row counts, also one that may read nothing.
    const long long meanRows = options.skipFirstKey ? rows : static_cast<long long>(tq);
    s.entropy = mean(entropy, meanRows);
    s.distance = mean(distance, meanRows);
    s.entropyShare = mean(share, shareRows);
    s.self = mean(self, selfRows);
    s.previous = mean(previous, previousRows);
    s.first = mean(first, firstRows);
    s.duplicate = total > 0 ? duplicate / total : 0.0;
    s.induction = total > 0 ? induction / total : 0.0;
    return s;
}

}  // namespace

std::string headStatsRule(const HeadStatsOptions& options) {
    if (!options.skipFirstKey) return "every key: each row's weights as the head computed them";
    return "first key left out: each row's weights over keys j >= 1 renormalised to sum 1; rows that may read only key 0 left out; "
           "'first' is the weight on key 1";
}

HeadStats headStats(const MatRef& weights, const std::vector<int>& ids, const Settings& settings, const HeadStatsOptions& options) {
    const TokenLinks links = ids.empty() ? TokenLinks() : tokenLinks(ids);
    return statsOf(weights, links, Ramps(weights.cols()), settings, options);
}

std::vector<HeadStats> allHeadStats(const AttentionMaps& maps, const HeadStatsOptions& options) {
    std::vector<HeadStats> out(static_cast<std::size_t>(std::max(0, maps.count())));
    if (!maps) return out;
    const TokenLinks links = maps.ids.empty() ? TokenLinks() : tokenLinks(maps.ids);
    const Ramps ramps(maps.keys);
    const int count = maps.count();
#pragma omp parallel for schedule(dynamic)
    for (int k = 0; k < count; ++k) {
        const int layer = k / maps.heads, head = k % maps.heads;
        out[static_cast<std::size_t>(k)] = statsOf(maps.weights(layer, head), links, ramps, maps.layerSettings(layer), options);
        maps.finished(layer, head);
    }
    return out;
}

double sinkShare(const std::vector<HeadStats>& heads, double eps) {
    if (heads.empty()) return 0.0;
    long long sinks = 0;
    for (const HeadStats& h : heads) sinks += h.first > eps ? 1 : 0;
    return static_cast<double>(sinks) / static_cast<double>(heads.size());
}

}  // namespace attnviz::core
