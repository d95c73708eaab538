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

// The keys of each kind (AttentionMaps::kinds), ascending: separators and punctuation.
struct KeyClasses {
    std::vector<Index> separators, punctuation;
};

KeyClasses keyClasses(const std::vector<std::uint8_t>& kinds) {
    KeyClasses c;
    for (std::size_t j = 0; j < kinds.size(); ++j) {
        if ((kinds[j] & kSeparatorToken) != 0) c.separators.push_back(static_cast<Index>(j));
        if ((kinds[j] & kPunctuationToken) != 0) c.punctuation.push_back(static_cast<Index>(j));
    }
    return c;
}

// 0, 1, …, T_k − 1 and T_k − 1, …, 0 as floats: the distances |i − j| of a band's keys are a
// segment of one of them.
struct Ramps {
    Eigen::ArrayXf up, down;
    explicit Ramps(Index tk) : up(Eigen::ArrayXf::LinSpaced(tk, 0.0f, static_cast<float>(tk - 1))), down(up.reverse()) {}
};

// A row segment's sums, each over chunks of kChunk floats (Eigen's packets: a few terms a lane,
// so a chunk's float sum is good to ~1e-7), the chunks added in double:
//   mass Σ w, entropy −Σ w ln w (0 ln 0 = 0: ln FLT_MIN times 0; ln w as the map's maker had it
//   when given), and distance Σ w · r with r the keys' distances from the query.
// A row renormalised by 1/M (the first key left out, M its mass on the others) has the entropy
// −Σ (w/M) ln(w/M) = (−Σ w ln w)/M + ln M: the row's sums need not wait for its mass, so a row
// may come in tiles of keys.
constexpr Index kChunk = 64;

struct RowSums {
    double mass = 0, entropy = 0, distance = 0;
};

void addRowSums(const float* w, const float* logs, const float* r, Index n, RowSums& sums) {
    for (Index k = 0; k < n; k += kChunk) {
        const Index m = std::min(kChunk, n - k);
        const ArrayMap c(w + k, m), d(r + k, m);
        sums.mass += c.sum();
        if (logs) sums.entropy -= (c * ArrayMap(logs + k, m)).sum();
        else sums.entropy -= (c * c.max(std::numeric_limits<float>::min()).log()).sum();
        sums.distance += (c * d).sum();
    }
}

// One head's statistics accumulated over its map's rows, handed over in blocks in any order
// (a map made on demand is never whole): addRows, or beginRows, the block's tiles of keys in
// descending order of keys (addTile: the token walks go down the keys) and endRows; then result.
class StatsSums {
public:
    StatsSums(Eigen::Index tq, Eigen::Index tk, const TokenLinks& links, const KeyClasses& classes, const Ramps& ramps,
              const Settings& settings, const HeadStatsOptions& options)
        : m_tq(tq), m_tk(tk), m_links(links), m_classes(classes), m_ramps(ramps), m_settings(settings), m_options(options) {
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
        beginRows(r0, a.rows());
        addTile(a, nullptr, r0, 0);
        endRows();
    }

    // Rows [r0, r0 + n) come next, in tiles of keys.
    void beginRows(Index r0, Index n) {
        m_r0 = r0;
        m_parts.assign(static_cast<std::size_t>(std::max<Index>(n, 0)), RowPart{});
        if (!m_tokens) return;
        for (Index r = 0; r < n; ++r) {
            RowPart& part = m_parts[static_cast<std::size_t>(r)];
            part.sameAt = m_links.sameBefore[static_cast<std::size_t>(r0 + r)];
            part.inductionAt = m_links.inductionLast[static_cast<std::size_t>(r0 + r)];
        }
    }

    // The weights of rows [r0, r0 + w.rows()) (within beginRows') for keys [c0, c0 + w.cols()),
    // and their logs when the maker gives them (TileSink::tile).
    void addTile(const MatRef& w, const MatRef* logs, Index r0, Index c0) {
        const Index c1 = c0 + w.cols(), firstKept = m_options.skipFirstKey ? 1 : 0;
        const Index sinkEnd = std::min(m_tk, firstKept + std::max(1, m_options.firstTokens));
        for (Index r = 0; r < w.rows(); ++r) {
            const Index i = r0 + r;
            RowPart& part = m_parts[static_cast<std::size_t>(i - m_r0)];
            const float* tile = w.data() + r * w.outerStride();
            const auto at = [&](Index j) { return tile + (j - c0); };  // key j's weight
            const float* logRow = logs ? logs->data() + r * logs->outerStride() : nullptr;
            const auto logAt = [&](Index j) { return logRow ? logRow + (j - c0) : nullptr; };
            const Band b = band(i);
            // the sums over the tile's keys kept: keys left of the query weigh i − j (a segment of
            // the falling ramp), keys right of it j − i (of the rising one); a blocked key holds 0
            const Index lo = std::max(b.from, c0), hi = std::max(lo, std::min(b.hi, c1));
            const Index split = std::clamp(i + 1, lo, hi);
            if (split > lo) addRowSums(at(lo), logAt(lo), m_ramps.down.data() + (m_tk - 1 - i + lo), split - lo, part.sums);
            if (hi > split) addRowSums(at(split), logAt(split), m_ramps.up.data() + (split - i), hi - split, part.sums);
            // the keys of a fixed offset (whether the row may read them: endRows)
            const auto inTile = [&](Index j) { return j >= c0 && j < c1; };
            if (inTile(i)) part.self = *at(i);
            if (i >= 1 && inTile(i - 1)) part.previous = *at(i - 1);
            if (inTile(i + 1)) part.next = *at(i + 1);
            // the keys of a kind the row reads, in this tile
            const auto kindMass = [&](const std::vector<Index>& keys) {
                double mass = 0;
                for (auto it = std::lower_bound(keys.begin(), keys.end(), std::max(b.from, c0)); it != keys.end() && *it < c1; ++it)
                    if (reads(b, *it)) mass += *at(*it);
                return mass;
            };
            if (!m_classes.separators.empty()) part.separator += kindMass(m_classes.separators);
            if (!m_classes.punctuation.empty()) part.punctuation += kindMass(m_classes.punctuation);
            if (inTile(firstKept)) part.first = *at(firstKept);
            for (Index j = std::max(firstKept, c0); j < std::min(sinkEnd, c1); ++j)
                if (reads(b, j)) part.sink += *at(j);
            // the token patterns, walking down the keys (a blocked key holds 0: the walks stop at
            // the band's start)
            if (!m_tokens) continue;
            // a walk not yet past the band's start must be below this tile's keys
            if ((part.sameAt >= c1 && part.sameAt >= b.from) || (part.inductionAt >= c1 && part.inductionAt >= std::max<Index>(b.from, 1)))
                throw std::logic_error("StatsSums: tiles of keys out of order");
            for (Index& j = part.sameAt; j >= std::max(b.from, c0); j = m_links.sameBefore[static_cast<std::size_t>(j)])
                part.duplicate += *at(j);
            for (Index& j = part.inductionAt; j >= std::max({b.from, c0, Index{1}}); j = m_links.inductionPrev[static_cast<std::size_t>(j)])
                if (j < b.hi) part.induction += *at(j);
        }
    }

    // Every tile of the rows begun handed over: their sums are counted.
    void endRows() {
        for (std::size_t r = 0; r < m_parts.size(); ++r) endRow(m_r0 + static_cast<Index>(r), m_parts[r]);
        m_parts.clear();
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
        s.next = mean(m_next, m_nextRows);
        s.separator = mean(m_separator, meanRows);
        s.punctuation = mean(m_punctuation, meanRows);
        s.duplicate = m_total > 0 ? m_duplicate / m_total : 0.0;
        s.induction = m_total > 0 ? m_induction / m_total : 0.0;
        return s;
    }

private:
    // A row's sums so far.
    struct RowPart {
        RowSums sums;                                                                                // over the keys kept
        double self = 0, previous = 0, next = 0, first = 0, sink = 0, duplicate = 0, induction = 0;  // the weights read
        double separator = 0, punctuation = 0;                                                       // the mass on the keys of each kind
        Index sameAt = -1, inductionAt = -1;                                                         // the token walks' next keys
    };
    // The keys a row may read: [lo, hi) and how many (a custom mask: every key, `blocked` beside),
    // and the first of them kept (lo, or 1 when the first key is left out).
    struct Band {
        Index lo = 0, hi = 0, readable = 0, from = 0;
    };

    bool padded(Index j) const {
        return !m_padded.empty() && m_padded[static_cast<std::size_t>(j) + 1] > m_padded[static_cast<std::size_t>(j)];
    }

    Band band(Index i) {
        const Index tk = m_tk;
        Band b;
        b.hi = tk;
        if (m_banded) {
            const KeyBand keys = keyBand(m_settings, i, tk);
            b.lo = keys.lo, b.hi = keys.hi;
            b.readable = b.hi - b.lo;
            if (!m_padded.empty()) b.readable -= m_padded[static_cast<std::size_t>(b.hi)] - m_padded[static_cast<std::size_t>(b.lo)];
        } else {
            blockedRow(m_settings, i, tk, m_blocked);  // the row's mask, for reads()
            b.readable = tk - std::count(m_blocked.begin(), m_blocked.end(), 1);
        }
        b.from = std::max(b.lo, m_options.skipFirstKey ? Index{1} : Index{0});
        return b;
    }

    // Whether the row of `b` (the last band() computed, for a custom mask) reads key j and keeps it.
    bool reads(const Band& b, Index j) const {
        return j >= b.from && j < m_tk && (m_banded ? j < b.hi && !padded(j) : !m_blocked[static_cast<std::size_t>(j)]);
    }

    void endRow(Index i, const RowPart& part) {
        const Band b = band(i);
        Index readable = b.readable;
        if (m_options.skipFirstKey && m_tk > 0 && (m_banded ? b.lo == 0 && b.hi > 0 && !padded(0) : !m_blocked[0]))
            --readable;  // key 0 no longer counts
        // the row's mass over the keys kept, and the scale that renormalises it
        const double mass = part.sums.mass;
        double scale = 1, h = part.sums.entropy;
        if (m_options.skipFirstKey) {
            if (readable < 1 || !(mass > 0)) return;  // reads key 0 alone (or puts nothing elsewhere): left out
            scale = 1 / mass;
            h = h * scale + std::log(mass);
        }
        ++m_rows;
        // entropy (of the renormalised row when the first key is left out), its share of
        // ln(keys readable), and the distance
        m_entropy += h;
        if (readable >= 2) m_share += h / std::log(static_cast<double>(readable)), ++m_shareRows;
        m_distance += part.sums.distance * scale;
        // the keys of a fixed offset
        const Index firstKept = m_options.skipFirstKey ? 1 : 0;
        if (reads(b, i)) m_self += part.self * scale, ++m_selfRows;
        if (i >= 1 && reads(b, i - 1)) m_previous += part.previous * scale, ++m_previousRows;
        if (reads(b, i + 1)) m_next += part.next * scale, ++m_nextRows;
        m_separator += part.separator * scale;
        m_punctuation += part.punctuation * scale;
        if (reads(b, firstKept)) m_first += part.first * scale, ++m_firstRows;
        if (i >= firstKept + std::max(1, m_options.firstTokens)) m_firstK += part.sink * scale, ++m_firstKRows;  // after the first k keys
        // the token patterns
        m_total += mass * scale;
        if (!m_tokens) return;
        m_duplicate += part.duplicate * scale;
        m_induction += part.induction * scale;
    }

    Index m_tq, m_tk;
    const TokenLinks& m_links;
    const KeyClasses& m_classes;
    const Ramps& m_ramps;
    const Settings& m_settings;
    HeadStatsOptions m_options;
    bool m_tokens = false, m_banded = true;
    std::vector<Index> m_padded;   // padded keys before each key (prefix counts, T_k + 1), or empty
    std::vector<char> m_blocked;   // the row's mask when not banded
    Index m_r0 = 0;                // the first row begun
    std::vector<RowPart> m_parts;  // the rows begun
    double m_entropy = 0, m_share = 0, m_distance = 0, m_self = 0, m_previous = 0, m_first = 0, m_total = 0, m_duplicate = 0,
           m_induction = 0, m_firstK = 0, m_next = 0, m_separator = 0, m_punctuation = 0;
    long long m_rows = 0, m_shareRows = 0, m_selfRows = 0, m_previousRows = 0, m_firstRows = 0, m_firstKRows = 0, m_nextRows = 0;
};

HeadStats statsOf(const MatRef& a, const TokenLinks& links, const KeyClasses& classes, const Ramps& ramps, const Settings& settings,
                  const HeadStatsOptions& options) {
    StatsSums sums(a.rows(), a.cols(), links, classes, ramps, settings, options);
    sums.addRows(a, 0);
    return sums.result();
}

}  // namespace

std::string headStatsRule(const HeadStatsOptions& options) {
    if (!options.skipFirstKey) return "every key: each row's weights as the head computed them";
    return "first key left out: each row's weights over keys j >= 1 renormalised to sum 1; rows that may read only key 0 left out; "
           "'first' is the weight on key 1, 'first_k' the mass on keys 1 ... k";
}

HeadStats headStats(const MatRef& weights, const std::vector<int>& ids, const Settings& settings, const HeadStatsOptions& options,
                    const std::vector<std::uint8_t>& kinds) {
    const TokenLinks links = ids.empty() ? TokenLinks() : tokenLinks(ids);
    return statsOf(weights, links, keyClasses(kinds), Ramps(weights.cols()), settings, options);
}

std::vector<HeadStats> allHeadStats(const AttentionMaps& maps, const HeadStatsOptions& options) {
    return sweepHeads(maps, {.stats = options}).stats;
}

namespace {

// What one head of sweepHeads reads its map into: its sums, those over every key, its thumbnails
// and its profile, each tile handed to every one of them while it is in cache. Counts the rows
// finished through the progress (a unit a block of `block` rows), and stops between blocks once
// `stopped` (Cancelled through the progress, or another head's failure).
class HeadSink final : public TileSink {
public:
    HeadSink(const AttentionMaps& maps, int k, Index block, const TokenLinks& links, const KeyClasses& classes, const Ramps& ramps,
             const HeadSweepOptions& options, int factor, const ProfileBins& bins, const std::atomic<bool>& stopped)
        : m_block(block),
          m_progress(options.progress),
          m_stopped(stopped),
          m_sums(maps.queries, maps.keys, links, classes, ramps, maps.layerSettings(k / maps.heads), options.stats) {
        const Settings& settings = maps.layerSettings(k / maps.heads);
        if (options.everyKey) m_every.emplace(maps.queries, maps.keys, links, classes, ramps, settings, HeadStatsOptions{});
        if (options.factor > 0) m_pooler.emplace(maps.queries, maps.keys, settings, factor);
        if (options.profiles) m_profile.emplace(bins, maps.queries, maps.keys, settings);
    }

    void tile(const MatRef& w, const MatRef* logs, Index r0, Index c0) override {
        if (r0 >= m_begun) begin(r0, w.rows());  // the first tile of the next block of rows
        m_sums.addTile(w, logs, r0, c0);
        if (m_every) m_every->addTile(w, logs, r0, c0);
        if (m_pooler) m_pooler->addTile(w, r0, c0);
        if (m_profile) m_profile->addTile(w, r0, c0);
    }

    void rowsDone(Index r0, Index n) override {
        if (r0 + n > m_begun) begin(r0, n);  // rows no key of which was handed over
        m_sums.endRows();
        if (m_every) m_every->endRows();
        if (m_pooler) m_pooler->finishRows(r0, n);
        if (m_profile) m_profile->finishRows(r0, n);
        // a unit of progress each time the rows finished pass a multiple of the block
        const Index units = (r0 + n) / m_block - r0 / m_block;
        if (m_progress && units > 0) m_progress->advance(static_cast<std::uint64_t>(units));  // Cancelled once asked to stop
        if (m_stopped) throw Cancelled{};
    }

    void finish(Index queries, int k, HeadSweep& out) {
        if (m_progress && queries % m_block != 0) m_progress->advance(1);  // the last, short block
        out.stats[static_cast<std::size_t>(k)] = m_sums.result();
        if (m_every) out.everyKey[static_cast<std::size_t>(k)] = m_every->result();
        if (m_profile) out.profiles[static_cast<std::size_t>(k)] = m_profile->result();
        if (m_pooler) {
            const auto size = static_cast<std::ptrdiff_t>(m_pooler->means().size()), at = size * k;
            std::copy(m_pooler->means().begin(), m_pooler->means().end(), out.means.begin() + at);
            std::copy(m_pooler->maxima().begin(), m_pooler->maxima().end(), out.maxima.begin() + at);
        }
    }

private:
    // The next rows, [r0, r0 + n), before their tiles.
    void begin(Index r0, Index n) {
        if (m_stopped) throw Cancelled{};
        m_sums.beginRows(r0, n);
        if (m_every) m_every->beginRows(r0, n);
        m_begun = r0 + n;
    }

    Index m_block;
    Progress* m_progress;
    const std::atomic<bool>& m_stopped;
    Index m_begun = 0;  // the row after the last begun
    StatsSums m_sums;
    std::optional<StatsSums> m_every;
    std::optional<BlockPooler> m_pooler;
    std::optional<ProfileSums> m_profile;
};

// One head of sweepHeads: its map made a tile at a time where the maps can (maps.tiles), else read
// a block of rows at a time (each block one tile of every key), into its sink, written to `out`
// at the head's index.
void sweepHead(const AttentionMaps& maps, int k, Index block, const TokenLinks& links, const KeyClasses& classes, const Ramps& ramps,
               const HeadSweepOptions& options, int factor, const std::atomic<bool>& stopped, Mat& scratch, HeadSweep& out) {
    const int layer = k / maps.heads, head = k % maps.heads;
    HeadSink sink(maps, k, block, links, classes, ramps, options, factor, out.bins, stopped);
    if (maps.tiles) {
        maps.tiles(layer, head, 0, maps.queries, 0, maps.keys, sink);
    } else {
        for (Index r0 = 0; r0 < maps.queries; r0 += block) {
            const Index n = std::min(block, maps.queries - r0);
            sink.tile(maps.rowBlock(layer, head, r0, n, scratch), nullptr, r0, 0);
            sink.rowsDone(r0, n);
        }
    }
    maps.finished(layer, head);
    sink.finish(maps.queries, k, out);
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
    const KeyClasses classes = maps.kinds.size() == static_cast<std::size_t>(maps.keys) ? keyClasses(maps.kinds) : KeyClasses{};
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
                sweepHead(maps, k, block, links, classes, ramps, options, factor, stopped, scratch, out);
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
