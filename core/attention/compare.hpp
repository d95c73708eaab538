// Two passes' attention side by side: the same head over two inputs (a sentence and another), or
// over one input before and after an edit of the model (a what-if). Their positions are lined up
// by token, and a head's change is measured as how far its rows moved.
//
// Alignment: the two id lists' common prefix and common suffix line up position by position. When
// what lies between has the same length on both sides (words replaced, not inserted), it lines up
// position by position too; otherwise it has no partner. A one-token change: equal lengths and
// exactly one position whose ids differ.
//
// Moved: for query i (with a partner i′ in b), the total variation ½ Σⱼ |aᵢⱼ − bᵢ′ⱼ′| over the keys j
// that have a partner j′, averaged over the queries that have one. 0 when the rows are equal, 1 when
// every row's weight went to other keys. It reads weights, not logits, so a head that was already
// one-hot and stays so reads 0 however its scores changed.
#pragma once

#include "core/attention/attention_maps.hpp"
#include "core/base/matrix.hpp"

#include <string>
#include <vector>

namespace attnviz::core {

struct TokenAlignment {
    std::vector<int> partner;  // per position of a: the position of b that lines up with it, or -1
    int prefix = 0;            // positions equal at the start
    int suffix = 0;            // positions equal at the end (not overlapping the prefix)
    int changed = -1;          // the one position that differs, when exactly one does (equal lengths)
    bool sameLength = false;
    bool identical() const { return sameLength && prefix == static_cast<int>(partner.size()); }
    bool oneTokenChanged() const { return changed >= 0; }
};

TokenAlignment alignTokens(const std::vector<int>& a, const std::vector<int>& b);
// Every position its own partner (one input before and after an edit of the model).
TokenAlignment samePositions(int count);

// The alignment in words for a caption ("one token changed: position 3", "4 + 2 positions line up,
// 3 do not").
std::string alignmentText(const TokenAlignment& alignment, int countB);

// b − a on a's grid: cell (i, j) holds b[i′, j′] − a[i, j] where both i and j have partners (i′ < b's
// queries); elsewhere 0 with `lined` false there. `lined` is resized to a's shape.
Mat alignedDifference(const MatRef& a, const MatRef& b, const TokenAlignment& alignment, MaskMat& lined);

// The top of one linear colour scale for two maps of weights, so that equal colours are equal
// weights: 1 when either has a weight of at least kAutoStretchBelow, else the larger map's largest
// weight (a long sentence's maps, every weight near 1/T).
float sharedWeightTop(const MatRef& a, const MatRef& b);

// How far a head's map moved from a to b (see above): 0 … 1; 0 when no query lines up.
double mapMoved(const MatRef& a, const MatRef& b, const TokenAlignment& alignment);
// The rule in words, for a panel or a figure.
const char* movedRule();

// mapMoved for every layer × head, layer-major. Throws InputError("compare", …) when the two sets of
// maps differ in layers or heads.
std::vector<double> headsMoved(const AttentionMaps& a, const AttentionMaps& b, const TokenAlignment& alignment);

}  // namespace attnviz::core
