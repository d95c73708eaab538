// Token swaps, permutation matrices and the equivariance check of seed 000 §39.5 / seed 004.
//
// A permutation is stored as perm: position p of the new order holds the token from position
// perm[p] of the original. As a matrix, (P X)[p] = X[perm[p]].
#pragma once

#include "core/attention/attention.hpp"

#include <string>
#include <utility>
#include <vector>

namespace attnviz::core {

std::vector<int> identityPermutation(int n);
// Applies swaps in order to the identity; `where` names the field in errors.
std::vector<int> permutationFromSwaps(int n, const std::vector<std::pair<int, int>>& swaps, const std::string& where);
bool isIdentity(const std::vector<int>& perm);

Mat permuteRows(const MatRef& m, const std::vector<int>& perm);  // P M
Mat permuteBoth(const MatRef& m, const std::vector<int>& perm);  // P M Pᵀ
std::vector<std::string> permuteLabels(const std::vector<std::string>& labels, const std::vector<int>& perm);

float maxAbsDiff(const MatRef& a, const MatRef& b);

// ‖f(PX) − P f(X)‖ (max-abs) for the layer output and for every head's weights (A′ vs P A Pᵀ).
struct EquivarianceReport {
    float outputDiff = 0.0f;
    std::vector<float> weightDiff;  // per head
    float maxWeightDiff() const;
    bool holds(float tolerance = 1e-5f) const { return outputDiff <= tolerance && maxWeightDiff() <= tolerance; }
};
// original: forward on X; permuted: forward on P X.
EquivarianceReport checkEquivariance(const Forward& original, const Forward& permuted, const std::vector<int>& perm);

// True when the rows of a and b are the same multiset (each row of a matched to a distinct
// row of b within `tolerance`, max-abs): the anagram test of seed 000 §39.5.1.
bool sameRowMultiset(const MatRef& a, const MatRef& b, float tolerance);

}  // namespace attnviz::core
