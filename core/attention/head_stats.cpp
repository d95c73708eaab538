// Head statistics (head_stats.hpp gives the definitions): one pass over each row.
#include "core/attention/head_stats.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <unordered_map>

namespace attnviz::core {

HeadStats headStats(const MatRef& a, const std::vector<int>& ids, const Settings& settings) {
    HeadStats s;
    const Eigen::Index tq = a.rows(), tk = a.cols();
    const bool tokens = static_cast<Eigen::Index>(ids.size()) == tk && tk >= tq;
    // For induction: the keys j whose previous token t_{j-1} is each id, in order.
    std::unordered_map<int, std::vector<Eigen::Index>> after;
    if (tokens)
        for (Eigen::Index j = 1; j < tk; ++j) after[ids[static_cast<std::size_t>(j - 1)]].push_back(j);
    double shareSum = 0, total = 0, duplicate = 0, induction = 0;
    long long shareRows = 0, selfRows = 0, previousRows = 0, firstRows = 0;
    for (Eigen::Index i = 0; i < tq; ++i) {
        double entropy = 0, distance = 0, rowSum = 0;
        long long readable = 0;
        for (Eigen::Index j = 0; j < tk; ++j) {
            const double w = a(i, j);
            rowSum += w;
            if (!isBlocked(settings, i, j)) ++readable;
            if (w > 0) entropy -= w * std::log(w);
            distance += w * static_cast<double>(std::llabs(static_cast<long long>(i - j)));
        }
        s.entropy += entropy;
        s.distance += distance;
        if (readable >= 2) shareSum += entropy / std::log(static_cast<double>(readable)), ++shareRows;
        if (i < tk && !isBlocked(settings, i, i)) s.self += a(i, i), ++selfRows;
        if (i >= 1 && i - 1 < tk && !isBlocked(settings, i, i - 1)) s.previous += a(i, i - 1), ++previousRows;
        if (!isBlocked(settings, i, 0)) s.first += a(i, 0), ++firstRows;
        total += rowSum;
        if (!tokens) continue;
        const int t = ids[static_cast<std::size_t>(i)];
        for (Eigen::Index j = 0; j < i; ++j)
            if (ids[static_cast<std::size_t>(j)] == t) duplicate += a(i, j);
        if (const auto it = after.find(t); it != after.end())
            for (const Eigen::Index j : it->second) {
                if (j > i) break;
                induction += a(i, j);
            }
    }
    const auto mean = [](double sum, long long n) { return n > 0 ? sum / static_cast<double>(n) : 0.0; };
    s.entropy = mean(s.entropy, tq);
    s.distance = mean(s.distance, tq);
    s.entropyShare = mean(shareSum, shareRows);
    s.self = mean(s.self, selfRows);
    s.previous = mean(s.previous, previousRows);
    s.first = mean(s.first, firstRows);
    s.duplicate = total > 0 ? duplicate / total : 0.0;
    s.induction = total > 0 ? induction / total : 0.0;
    return s;
}

std::vector<HeadStats> allHeadStats(const AttentionMaps& maps) {
    std::vector<HeadStats> out(static_cast<std::size_t>(std::max(0, maps.count())));
    if (!maps) return out;
    const int count = maps.count();
#pragma omp parallel for schedule(dynamic)
    for (int k = 0; k < count; ++k) {
        const int layer = k / maps.heads, head = k % maps.heads;
        out[static_cast<std::size_t>(k)] = headStats(maps.weights(layer, head), maps.ids, maps.layerSettings(layer));
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
