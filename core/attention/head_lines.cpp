#include "core/attention/head_lines.hpp"

#include <algorithm>
#include <array>
#include <numeric>
#include <stdexcept>

namespace attnviz::core {

std::string HeadLineRule::describe(Eigen::Index keys) const {
    if (!drops(keys)) return "every line";
    return "the " + std::to_string(topK) + " strongest keys of each query and head (T > " + std::to_string(allUpTo) + ")";
}

namespace {

void checkLayer(const AttentionMaps& maps, int layer, const std::vector<int>& heads, const std::vector<int>& queries) {
    if (layer < 0 || layer >= maps.layers) throw std::out_of_range("head view: no layer " + std::to_string(layer));
    for (const int h : heads)
        if (h < 0 || h >= maps.heads) throw std::out_of_range("head view: no head " + std::to_string(h));
    for (const int q : queries)
        if (q < 0 || q >= maps.queries) throw std::out_of_range("head view: no query " + std::to_string(q));
}

std::vector<int> everyQuery(const AttentionMaps& maps, const std::vector<int>& queries) {
    if (!queries.empty()) return queries;
    std::vector<int> all(static_cast<std::size_t>(maps.queries));
    std::iota(all.begin(), all.end(), 0);
    return all;
}

}  // namespace

HeadLines headLines(const AttentionMaps& maps, int layer, const std::vector<int>& heads, const std::vector<int>& queries,
                    const HeadLineRule& rule, std::size_t blockFloats) {
    checkLayer(maps, layer, heads, queries);
    const Settings& settings = maps.layerSettings(layer);
    const bool drops = rule.drops(maps.keys);
    const auto keep = static_cast<std::size_t>(std::max(0, rule.topK));
    HeadLines out;
    // The maps read a run of consecutive queries at a time, every head's rows of it together (a map
    // made on demand is never whole): about blockFloats in all.
    const std::vector<int> qs = everyQuery(maps, queries);
    const auto run = static_cast<std::size_t>(
        std::max<Eigen::Index>(1, maps.blockRows(blockFloats) / static_cast<Eigen::Index>(std::max<std::size_t>(1, heads.size()))));
    std::vector<Mat> made(heads.size());
    std::vector<MatRef> weights;
    weights.reserve(heads.size());
    std::vector<HeadLine> row;
    for (std::size_t a = 0; a < qs.size();) {
        std::size_t b = a + 1;
        while (b < qs.size() && qs[b] == qs[b - 1] + 1 && b - a < run) ++b;
        const Eigen::Index r0 = qs[a], n = static_cast<Eigen::Index>(b - a);
        weights.clear();
        for (std::size_t h = 0; h < heads.size(); ++h) weights.push_back(maps.rowBlock(layer, heads[h], r0, n, made[h]));
        for (std::size_t k = a; k < b; ++k) {
            const int q = qs[k];
            for (std::size_t h = 0; h < heads.size(); ++h) {
                // 1. every readable key of weight > 0
                row.clear();
                for (Eigen::Index j = 0; j < maps.keys; ++j) {
                    const float w = weights[h](q - r0, j);
                    if (w > 0.0f && !isBlocked(settings, q, j)) row.push_back({heads[h], q, static_cast<int>(j), w});
                }
                out.readable += static_cast<long long>(row.size());
                // 2. the strongest first (the earlier key on a tie), then the rule's cut: only the
                // kept lines sorted
                const auto stronger = [](const HeadLine& x, const HeadLine& y) {
                    return x.weight > y.weight || (x.weight == y.weight && x.key < y.key);
                };
                if (drops && row.size() > keep) {
                    std::partial_sort(row.begin(), row.begin() + static_cast<std::ptrdiff_t>(keep), row.end(), stronger);
                    row.resize(keep);
                } else {
                    std::sort(row.begin(), row.end(), stronger);
                }
                out.lines.insert(out.lines.end(), row.begin(), row.end());
            }
        }
        a = b;
    }
    return out;
}

std::vector<float> summedAttention(const AttentionMaps& maps, int layer, const std::vector<int>& heads, const std::vector<int>& queries) {
    checkLayer(maps, layer, heads, queries);
    const Settings& settings = maps.layerSettings(layer);
    const auto keys = static_cast<std::size_t>(maps.keys);
    std::vector<float> sums(heads.size() * keys, 0.0f);
    Mat made;  // a row made on demand
    for (std::size_t n = 0; n < heads.size(); ++n)
        for (const int q : queries) {
            const MatRef w = maps.rowBlock(layer, heads[n], q, 1, made);
            for (std::size_t j = 0; j < keys; ++j)
                if (!isBlocked(settings, q, static_cast<Eigen::Index>(j))) sums[n * keys + j] += w(0, static_cast<Eigen::Index>(j));
        }
    return sums;
}

Rgb headColour(int head) {
    static constexpr std::array<Rgb, kHeadColourCount> kPalette = {{
        {31, 119, 180},   // blue
        {255, 127, 14},   // orange
        {44, 160, 44},    // green
        {214, 39, 40},    // red
        {148, 103, 189},  // purple
        {140, 86, 75},    // brown
        {227, 119, 194},  // pink
        {23, 190, 207},   // cyan
        {188, 189, 34},   // olive
        {0, 128, 128},    // teal
        {184, 134, 11},   // dark gold
        {106, 90, 205},   // slate blue
    }};
    const int n = ((head % kHeadColourCount) + kHeadColourCount) % kHeadColourCount;
    return kPalette[static_cast<std::size_t>(n)];
}

}  // namespace attnviz::core
