#include "core/attention/permutation.hpp"

#include "core/base/error.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace attnviz::core {

std::vector<int> identityPermutation(int n) {
    std::vector<int> perm(static_cast<std::size_t>(n));
    std::iota(perm.begin(), perm.end(), 0);
    return perm;
}

std::vector<int> permutationFromSwaps(int n, const std::vector<std::pair<int, int>>& swaps, const std::string& where) {
    std::vector<int> perm = identityPermutation(n);
    for (std::size_t s = 0; s < swaps.size(); ++s) {
        const auto [a, b] = swaps[s];
        if (a < 0 || a >= n || b < 0 || b >= n)
            throw InputError(
                where + "[" + std::to_string(s) + "]",
                "[" + std::to_string(a) + ", " + std::to_string(b) + "] is out of range: positions go from 0 to " + std::to_string(n - 1));
        std::swap(perm[static_cast<std::size_t>(a)], perm[static_cast<std::size_t>(b)]);
    }
    return perm;
}

bool isIdentity(const std::vector<int>& perm) {
    for (std::size_t i = 0; i < perm.size(); ++i)
        if (perm[i] != static_cast<int>(i)) return false;
    return true;
}

Mat permuteRows(const MatRef& m, const std::vector<int>& perm) {
    Mat out(m.rows(), m.cols());
    for (Eigen::Index p = 0; p < m.rows(); ++p) out.row(p) = m.row(perm[static_cast<std::size_t>(p)]);
    return out;
}

Mat permuteBoth(const MatRef& m, const std::vector<int>& perm) {
    Mat out(m.rows(), m.cols());
    for (Eigen::Index p = 0; p < m.rows(); ++p)
        for (Eigen::Index q = 0; q < m.cols(); ++q) out(p, q) = m(perm[static_cast<std::size_t>(p)], perm[static_cast<std::size_t>(q)]);
    return out;
}

std::vector<std::string> permuteLabels(const std::vector<std::string>& labels, const std::vector<int>& perm) {
    std::vector<std::string> out;
    out.reserve(labels.size());
    for (int p : perm) out.push_back(labels[static_cast<std::size_t>(p)]);
    return out;
}

float maxAbsDiff(const MatRef& a, const MatRef& b) {
    if (a.rows() != b.rows() || a.cols() != b.cols()) return INFINITY;
    if (a.size() == 0) return 0.0f;
    return (a - b).cwiseAbs().maxCoeff();
}

float EquivarianceReport::maxWeightDiff() const {
    return weightDiff.empty() ? 0.0f : *std::max_element(weightDiff.begin(), weightDiff.end());
}

EquivarianceReport checkEquivariance(const Forward& original, const Forward& permuted, const std::vector<int>& perm) {
    EquivarianceReport report;
    report.outputDiff = maxAbsDiff(permuted.output, permuteRows(original.output, perm));
    for (std::size_t h = 0; h < original.heads.size() && h < permuted.heads.size(); ++h)
        report.weightDiff.push_back(maxAbsDiff(permuted.heads[h].weights, permuteBoth(original.heads[h].weights, perm)));
    return report;
}

bool sameRowMultiset(const MatRef& a, const MatRef& b, float tolerance) {
    if (a.rows() != b.rows() || a.cols() != b.cols()) return false;
    std::vector<bool> used(static_cast<std::size_t>(b.rows()), false);
    for (Eigen::Index i = 0; i < a.rows(); ++i) {
        bool matched = false;
        for (Eigen::Index j = 0; j < b.rows() && !matched; ++j) {
            if (used[static_cast<std::size_t>(j)]) continue;
            if ((a.row(i) - b.row(j)).cwiseAbs().maxCoeff() <= tolerance) {
                used[static_cast<std::size_t>(j)] = true;
                matched = true;
            }
        }
        if (!matched) return false;
    }
    return true;
}

}  // namespace attnviz::core
