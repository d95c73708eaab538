// Two curves of one head that a long input is read by: where the head looks by distance, and how
// much it keeps on the first tokens as the query moves on (StreamingLLM's attention sinks).
//
// For one head's weights A [T_q, T_k] (row = query; a blocked key holds 0) under its mask, every
// key counted (the first key is what the sink is):
//   byDistance[b]  the mean of Aᵢⱼ over the pairs (i, j) the mask lets query i read whose distance
//                  |i − j| lies in distance bin b;
//   uniform[b]     the same mean for attention spread evenly over each row's readable keys
//                  (Aᵢⱼ = 1 / keys row i may read): the curve to read byDistance against: a local
//                  head lies above it at short distances, a sliding window ends where its keys
//                  end, a sink rises above it at the longest distances (key 0 is i away from row i);
//   pairs[b]       how many pairs bin b holds (0: none; its means are then 0);
//   firstKAt[p]    Σ_{j<k} Aᵢⱼ, the mass on the first k keys, the mean over the queries i ≥ k of
//                  position bin p (rows[p] of them; 0 when none).
// Distance bins: 0, 1, …, 7 each their own, then four a doubling, [8, 10), [10, 12), [12, 14),
// [14, 16), [16, 20), …, the last cut at the longest distance. Position bins: consecutive queries
// in blocks of 1, 2, 5, 10, 20, 50, … positions, the least that makes at most `positionBins`.
#pragma once

#include "core/attention/attention.hpp"
#include "core/base/matrix.hpp"

#include <string>
#include <vector>

namespace attnviz::core {

inline constexpr int kProfilePositionBins = 256;

struct ProfileBins {
    std::vector<Eigen::Index> distance;   // edges: bin b holds distances [distance[b], distance[b + 1])
    std::vector<Eigen::Index> positions;  // edges: bin p holds queries [positions[p], positions[p + 1])
    int firstTokens = 4;                  // k of firstKAt
    int distanceBins() const { return static_cast<int>(distance.size()) - 1; }
    int positionBins() const { return static_cast<int>(positions.size()) - 1; }
};
// The bins of maps of `queries` × `keys` (distances up to the longer side − 1).
ProfileBins profileBins(Eigen::Index queries, Eigen::Index keys, int firstTokens, int positionBins = kProfilePositionBins);
// The bin a distance falls in (ProfileBins::distance's rule; past the last edge: the last bin).
int distanceBin(const ProfileBins& bins, Eigen::Index distance);

struct HeadProfile {
    std::vector<double> byDistance, uniform;  // [distance bins]
    std::vector<long long> pairs;             // [distance bins]
    std::vector<double> firstKAt;             // [position bins]
    std::vector<long long> rows;              // [position bins]: the queries i ≥ k each mean is over
};

// One head's profile accumulated over its map's rows, handed over in blocks in any order (a map
// made on demand is never whole): addRows, or the block's tiles of keys (addTile, any order) and
// then finishRows; then result.
class ProfileSums {
public:
    ProfileSums(const ProfileBins& bins, Eigen::Index queries, Eigen::Index keys, const Settings& settings);
    void addRows(const MatRef& rows, Eigen::Index firstRow);
    // The weights of rows [r0, r0 + w.rows()) for keys [c0, c0 + w.cols()); the tiles of a row
    // cover every key it may read, each key once.
    void addTile(const MatRef& w, Eigen::Index r0, Eigen::Index c0);
    // Every tile of rows [r0, r0 + n) added: their pairs of each distance are counted.
    void finishRows(Eigen::Index r0, Eigen::Index n);
    HeadProfile result() const;

private:
    void addTileRow(const float* tile, Eigen::Index i, Eigen::Index c0, Eigen::Index c1);
    void countRow(Eigen::Index i);
    std::size_t positionBin(Eigen::Index i) const;  // the bin of positions query i is in

    const ProfileBins& m_bins;
    Eigen::Index m_tk;
    const Settings& m_settings;
    bool m_banded = true;         // no padding and no custom mask: a row reads one band of keys
    std::vector<char> m_blocked;  // a row's mask when not banded
    std::vector<double> m_weight, m_uniform, m_firstK;
    std::vector<long long> m_pairs, m_rows;
};

// One head's profile from its whole map.
HeadProfile headProfile(const MatRef& weights, const Settings& settings, int firstTokens);

// The rule of the curves in one sentence, for exports and the panel.
std::string headProfileRule(const ProfileBins& bins);

}  // namespace attnviz::core
