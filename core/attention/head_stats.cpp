// Head statistics (head_stats.hpp gives the definitions). Each row is read once, over the keys it
// may read: a band [lo, hi) under no mask, a causal mask or a window (a blocked key holds 0, so
// nothing outside the band counts), every key with the mask matrix beside it under padding or a
// custom mask. A row's sums run on float vectors (Eigen's packet log) in chunks of 64 keys, the
// chunks added in double, so a head's numbers match a float64 recomputation to ~1e-7.
#include "core/attention/head_stats.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <limits>
#include <optional>
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

// One head's statistics accumulated over its map's rows, handed over in blocks in any order
// (a map made on demand is never whole): addRows, then result.
class StatsSums {
public:
    StatsSums(Eigen::Index tq, Eigen::Index tk, const TokenLinks& links, const Ramps& ramps, const Settings& settings,
              const HeadStatsOptions& options)
        : m_tq(tq), m_tk(tk), m_links(links), m_ramps(ramps), m_settings(settings), m_options(options) {
        m_tokens = links && static_cast<Index>(links.sameBefore.size()) == tk && tk >= tq;
        m_banded = settings.custom.size() == 0;  // a custom mask: blocked keys anywhere in a row
        if (!settings.paddedKeys.empty()) {
            // padded keys: blocked in every row (they hold 0), counted out of each band's keys
            std::vector<char> flag(static_cast<std::size_t>(tk), 0);
            for (const int p : settings.paddedKeys)
                if (p >= 0 && p < tk) flag[static_cast<std::size_t>(p)] = 1;
            m_padded.assign(static_cast<std::size_t>(tk) + 1, 0);
            for (std::size_t j = 0; j < flag.size(); ++j) m_padded[j + 1] = m_padded[j] + flag[j];
        }
    }

    void addRows(const MatRef& a, Index r0) {
        for (Index r = 0; r < a.rows(); ++r) addRow(a.data() + r * a.outerStride(), r0 + r);
    }

    HeadStats result() const {
        HeadStats s;
        const auto mean = [](double sum, long long n) { return n > 0 ? sum / static_cast<double>(n) : 0.0; };
        // Without leaving out the first key every row counts, also one that may read nothing.
        const long long meanRows = m_options.skipFirstKey ? m_rows : static_cast<long long>(m_tq);
        s.entropy = mean(m_entropy, meanRows);
        s.distance = mean(m_distance, meanRows);
        s.entropyShare = mean(m_share, m_shareRows);
        s.self = mean(m_self, m_selfRows);
        s.previous = mean(m_previous, m_previousRows);
        s.first = mean(m_first, m_firstRows);
        s.firstK = mean(m_firstK, m_firstKRows);
        s.duplicate = m_total > 0 ? m_duplicate / m_total : 0.0;
        s.induction = m_total > 0 ? m_induction / m_total : 0.0;
        return s;
    }

private:
    bool padded(Index j) const {
        return !m_padded.empty() && m_padded[static_cast<std::size_t>(j) + 1] > m_padded[static_cast<std::size_t>(j)];
    }

    void addRow(const float* row, Index i) {
        const Index tk = m_tk;
        const Index firstKept = m_options.skipFirstKey ? 1 : 0;
        // 1. the keys the row may read: [lo, hi), and how many
        Index lo = 0, hi = tk, readable = 0;
        if (m_banded) {
            if (m_settings.causal) hi = std::min(hi, i + 1);
            if (m_settings.window > 0) {
                lo = std::clamp<Index>(i - m_settings.window + 1, 0, tk);
                if (!m_settings.causal) hi = std::min(hi, i + m_settings.window);
            }
            hi = std::max(hi, lo);
            readable = hi - lo;
            if (!m_padded.empty()) readable -= m_padded[static_cast<std::size_t>(hi)] - m_padded[static_cast<std::size_t>(lo)];
        } else {
            blockedRow(m_settings, i, tk, m_blocked);
            readable = tk - std::count(m_blocked.begin(), m_blocked.end(), 1);
        }
        const auto reads = [&](Index j) {
            return j >= firstKept && j < tk && (m_banded ? j >= lo && j < hi && !padded(j) : !m_blocked[static_cast<std::size_t>(j)]);
        };
        if (m_options.skipFirstKey && tk > 0 && (m_banded ? lo == 0 && hi > 0 && !padded(0) : !m_blocked[0]))
            --readable;  // key 0 no longer counts
        const Index from = std::max(lo, firstKept);
        const Index count = std::max<Index>(hi - from, 0);
        // 2. the row's mass over the keys kept, and the scale that renormalises it
        double mass = 0, scale = 1;
        if (m_options.skipFirstKey) {
            mass = massOf(row + from, count);
            if (readable < 1 || !(mass > 0)) return;  // reads key 0 alone (or puts nothing elsewhere): left out
            scale = 1 / mass;
        }
        ++m_rows;
        // 3. the sums: keys left of the query weigh i − j (a segment of the falling ramp), keys
        // right of it j − i (of the rising one); a blocked key holds 0 and adds nothing
        const Index split = std::clamp(i + 1, from, std::max(from, hi));
        RowSums sums;
        if (split > from) addRowSums(row + from, m_ramps.down.data() + (tk - 1 - i + from), split - from, static_cast<float>(scale), sums);
        if (hi > split) addRowSums(row + split, m_ramps.up.data() + (split - i), hi - split, static_cast<float>(scale), sums);
        if (!m_options.skipFirstKey) mass = sums.mass;
        // 4. entropy (of the renormalised row when the first key is left out), its share of
        // ln(keys readable), and the distance
        const double h = sums.entropy;
        m_entropy += h;
        if (readable >= 2) m_share += h / std::log(static_cast<double>(readable)), ++m_shareRows;
        m_distance += sums.distance * scale;
        // 5. the keys of a fixed offset
        if (reads(i)) m_self += row[i] * scale, ++m_selfRows;
        if (i >= 1 && reads(i - 1)) m_previous += row[i - 1] * scale, ++m_previousRows;
        if (reads(firstKept)) m_first += row[firstKept] * scale, ++m_firstRows;
        const Index k = std::max(1, m_options.firstTokens);
        if (i >= firstKept + k) {  // a row after the first k keys: its mass on them
            double sink = 0;
            for (Index j = firstKept; j < std::min(tk, firstKept + k); ++j)
                if (reads(j)) sink += row[j];
            m_firstK += sink * scale, ++m_firstKRows;
        }
        // 6. the token patterns (a blocked key holds 0: the walks stop at the band's start)
        m_total += mass * scale;
        if (!m_tokens) return;
        double dup = 0, ind = 0;
        for (Index j = m_links.sameBefore[static_cast<std::size_t>(i)]; j >= from; j = m_links.sameBefore[static_cast<std::size_t>(j)])
            dup += row[j];
        for (Index j = m_links.inductionLast[static_cast<std::size_t>(i)]; j >= std::max<Index>(from, 1);
             j = m_links.inductionPrev[static_cast<std::size_t>(j)])
            if (j < hi) ind += row[j];
        m_duplicate += dup * scale;
        m_induction += ind * scale;
    }

    Index m_tq, m_tk;
    const TokenLinks& m_links;
    const Ramps& m_ramps;
    const Settings& m_settings;
    HeadStatsOptions m_options;
    bool m_tokens = false, m_banded = true;
    std::vector<Index> m_padded;  // padded keys before each key (prefix counts, T_k + 1), or empty
    std::vector<char> m_blocked;  // the row's mask when not banded
    double m_entropy = 0, m_share = 0, m_distance = 0, m_self = 0, m_previous = 0, m_first = 0, m_total = 0, m_duplicate = 0,
           m_induction = 0, m_firstK = 0;
    long long m_rows = 0, m_shareRows = 0, m_selfRows = 0, m_previousRows = 0, m_firstRows = 0, m_firstKRows = 0;
};

HeadStats statsOf(const MatRef& a, const TokenLinks& links, const Ramps& ramps, const Settings& settings, const HeadStatsOptions& options) {
    StatsSums sums(a.rows(), a.cols(), links, ramps, settings, options);
    sums.addRows(a, 0);
    return sums.result();
}

}  // namespace

std::string headStatsRule(const HeadStatsOptions& options) {
    if (!options.skipFirstKey) return "every key: each row's weights as the head computed them";
    return "first key left out: each row's weights over keys j >= 1 renormalised to sum 1; rows that may read only key 0 left out; "
           "'first' is the weight on key 1, 'first_k' the mass on keys 1 ... k";
}

HeadStats headStats(const MatRef& weights, const std::vector<int>& ids, const Settings& settings, const HeadStatsOptions& options) {
    const TokenLinks links = ids.empty() ? TokenLinks() : tokenLinks(ids);
    return statsOf(weights, links, Ramps(weights.cols()), settings, options);
}

std::vector<HeadStats> allHeadStats(const AttentionMaps& maps, const HeadStatsOptions& options) {
    return sweepHeads(maps, {.stats = options}).stats;
}

namespace {

// One head of sweepHeads: its map read a block of rows at a time into its sums and thumbnails,
// written to `out` at the head's index. Stops between blocks once `stopped` (Cancelled through
// the progress, or another head's failure).
void sweepHead(const AttentionMaps& maps, int k, Index block, const TokenLinks& links, const Ramps& ramps, const HeadSweepOptions& options,
               int factor, std::atomic<bool>& stopped, Mat& scratch, HeadSweep& out) {
    const int layer = k / maps.heads, head = k % maps.heads;
    const Settings& settings = maps.layerSettings(layer);
    StatsSums sums(maps.queries, maps.keys, links, ramps, settings, options.stats);
    std::optional<StatsSums> every;
    if (options.everyKey) every.emplace(maps.queries, maps.keys, links, ramps, settings, HeadStatsOptions{});
    std::optional<BlockPooler> pooler;
    if (options.factor > 0) pooler.emplace(maps.queries, maps.keys, settings, factor);
    std::optional<ProfileSums> profile;
    if (options.profiles) profile.emplace(out.bins, maps.queries, maps.keys, settings);
    for (Index r0 = 0; r0 < maps.queries && !stopped; r0 += block) {
        const MatRef rows = maps.rowBlock(layer, head, r0, std::min(block, maps.queries - r0), scratch);
        sums.addRows(rows, r0);
        if (every) every->addRows(rows, r0);
        if (pooler) pooler->add(rows, r0);
        if (profile) profile->addRows(rows, r0);
        if (options.progress) options.progress->advance(1);  // Cancelled once asked to stop
    }
    maps.finished(layer, head);
    out.stats[static_cast<std::size_t>(k)] = sums.result();
    if (every) out.everyKey[static_cast<std::size_t>(k)] = every->result();
    if (profile) out.profiles[static_cast<std::size_t>(k)] = profile->result();
    if (pooler) {
        const auto size = static_cast<std::ptrdiff_t>(pooler->means().size()), at = size * k;
        std::copy(pooler->means().begin(), pooler->means().end(), out.means.begin() + at);
        std::copy(pooler->maxima().begin(), pooler->maxima().end(), out.maxima.begin() + at);
    }
}

}  // namespace

HeadSweep sweepHeads(const AttentionMaps& maps, const HeadSweepOptions& options) {
    HeadSweep out;
    const auto count = static_cast<std::size_t>(std::max(0, maps.count()));
    out.stats.resize(count);
    if (options.everyKey) out.everyKey.resize(count);
    if (!maps) return out;
    if (options.profiles) {
        out.bins = profileBins(maps.queries, maps.keys, options.stats.firstTokens);
        out.profiles.resize(count);
    }
    const int factor = std::max(1, options.factor);
    if (options.factor > 0) {
        out.side = pooledSize(maps.queries, factor);
        out.sideKeys = pooledSize(maps.keys, factor);
        out.means.resize(static_cast<std::size_t>(out.side * out.sideKeys) * count);
        out.maxima.resize(out.means.size());
    }
    const TokenLinks links = maps.ids.empty() ? TokenLinks() : tokenLinks(maps.ids);
    const Ramps ramps(maps.keys);
    // Whole maps are read in place; maps made on demand a block of rows at a time (a multiple of
    // the thumbnails' factor), each block made once and read by every sum.
    const Index block = maps.whole() ? std::max<Index>(maps.queries, 1) : maps.blockRows(options.blockFloats, factor);
    const auto blocks = static_cast<std::uint64_t>((maps.queries + block - 1) / block);
    expect(options.progress, blocks * count);
    const int heads = maps.count();
    std::atomic<bool> stopped{false};
    std::exception_ptr failure;  // the first error of any head (out of memory): no exception leaves a parallel region
#pragma omp parallel
    {
        Mat scratch;
#pragma omp for schedule(dynamic)
        for (int k = 0; k < heads; ++k) {
            if (stopped) continue;
            try {
                sweepHead(maps, k, block, links, ramps, options, factor, stopped, scratch, out);
            } catch (const Cancelled&) {
                stopped = true;
            } catch (...) {
#pragma omp critical(attnviz_sweep_failure)
                if (!failure) failure = std::current_exception();
                stopped = true;
            }
        }
    }
    if (failure) std::rethrow_exception(failure);
    if (stopped) throw Cancelled{};
    return out;
}

double sinkShare(const std::vector<HeadStats>& heads, double eps) {
    if (heads.empty()) return 0.0;
    long long sinks = 0;
    for (const HeadStats& h : heads) sinks += h.first > eps ? 1 : 0;
    return static_cast<double>(sinks) / static_cast<double>(heads.size());
}

}  // namespace attnviz::core
