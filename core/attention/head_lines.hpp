// The head view's lines (BertViz's head view): one layer's tokens twice, queries on the left and
// keys on the right, a line from query i to key j for each head shown, its opacity the weight
// A[i, j], one colour per head. Which lines are drawn is decided here, once per pass and
// selection, for the window and the exported figure alike.
#pragma once

#include "core/attention/attention_maps.hpp"
#include "core/attention/colormap.hpp"

#include <string>
#include <vector>

namespace attnviz::core {

struct HeadLine {
    int head = 0, query = 0, key = 0;
    float weight = 0;  // A[query, key] of that head: the line's opacity
};

// Which lines are kept. Up to `allUpTo` keys every readable key of a query gets its line; beyond,
// only the `topK` strongest keys of each query and head (ties: the earlier key). A key the mask
// blocks, or one of weight 0, never gets a line.
struct HeadLineRule {
    int allUpTo = 24;
    int topK = 8;
    // The rule in words, for the view and the figure ("every line" when nothing is dropped).
    std::string describe(Eigen::Index keys) const;
    bool drops(Eigen::Index keys) const { return keys > allUpTo; }
};

struct HeadLines {
    std::vector<HeadLine> lines;  // by query, then head (in the order given), then falling weight
    long long readable = 0;       // lines before the rule: readable (query, key) pairs of weight > 0
};

// Lines of `layer` for `heads` (indices into maps.heads, in drawing order) and `queries` (empty:
// every query), the maps read a run of consecutive queries at a time, every head's rows of it
// together in about `blockFloats` floats. Throws std::out_of_range for a layer, head or query the
// maps lack.
HeadLines headLines(const AttentionMaps& maps, int layer, const std::vector<int>& heads, const std::vector<int>& queries,
                    const HeadLineRule& rule = {}, std::size_t blockFloats = std::size_t{4} << 20);

// [heads.size() × keys], row-major: for each head shown, Σ over `queries` of A[query, key]: the
// attention several selected tokens pay, summed (before any rule drops a line).
std::vector<float> summedAttention(const AttentionMaps& maps, int layer, const std::vector<int>& heads, const std::vector<int>& queries);

// A head's colour: a qualitative palette of 12 mid-lightness hues (matplotlib's tab10, without its
// grey, and two more) that reads on a dark and on a white background; head 13 repeats head 1's.
inline constexpr int kHeadColourCount = 12;
Rgb headColour(int head);

}  // namespace attnviz::core
