#include "core/attention/compare.hpp"

#include "core/attention/colormap.hpp"
#include "core/base/error.hpp"

#include <algorithm>
#include <cmath>
#include <exception>

namespace attnviz::core {

TokenAlignment alignTokens(const std::vector<int>& a, const std::vector<int>& b) {
    TokenAlignment al;
    const int na = static_cast<int>(a.size()), nb = static_cast<int>(b.size());
    const int shorter = std::min(na, nb);
    al.sameLength = na == nb;
    while (al.prefix < shorter && a[static_cast<std::size_t>(al.prefix)] == b[static_cast<std::size_t>(al.prefix)]) ++al.prefix;
    while (al.suffix < shorter - al.prefix &&
           a[static_cast<std::size_t>(na - 1 - al.suffix)] == b[static_cast<std::size_t>(nb - 1 - al.suffix)])
        ++al.suffix;
    al.partner.assign(static_cast<std::size_t>(na), -1);
    for (int i = 0; i < al.prefix; ++i) al.partner[static_cast<std::size_t>(i)] = i;
    for (int i = 0; i < al.suffix; ++i) al.partner[static_cast<std::size_t>(na - 1 - i)] = nb - 1 - i;
    // Replaced, not inserted: the middles have the same length and line up position by position.
    if (al.sameLength)
        for (int i = al.prefix; i < na - al.suffix; ++i) al.partner[static_cast<std::size_t>(i)] = i;
    if (al.sameLength && na - al.prefix - al.suffix == 1) al.changed = al.prefix;
    return al;
}

TokenAlignment samePositions(int count) {
    TokenAlignment al;
    al.partner.resize(static_cast<std::size_t>(count));
    for (int i = 0; i < count; ++i) al.partner[static_cast<std::size_t>(i)] = i;
    al.prefix = count;
    al.sameLength = true;
    return al;
}

std::string alignmentText(const TokenAlignment& alignment, int countB) {
    const int na = static_cast<int>(alignment.partner.size());
    if (alignment.identical()) return "the same " + std::to_string(na) + " tokens";
    if (alignment.oneTokenChanged()) return "one token changed: position " + std::to_string(alignment.changed + 1);
    if (alignment.sameLength)
        return std::to_string(na - alignment.prefix - alignment.suffix) + " of " + std::to_string(na) +
               " tokens changed, positions line up";
    return std::to_string(alignment.prefix) + " + " + std::to_string(alignment.suffix) + " tokens line up; " +
           std::to_string(na - alignment.prefix - alignment.suffix) + " of A and " +
           std::to_string(countB - alignment.prefix - alignment.suffix) + " of B do not";
}

namespace {

// a's position i's partner in b when it is one of b's rows (queries) or columns (keys).
int partnerIn(const TokenAlignment& al, Eigen::Index i, Eigen::Index limit) {
    const int p = al.partner[static_cast<std::size_t>(i)];
    return p >= 0 && p < limit ? p : -1;
}

void checkCovers(const MatRef& a, const TokenAlignment& al) {
    if (static_cast<Eigen::Index>(al.partner.size()) < a.cols())
        throw InputError("compare", "the alignment has " + std::to_string(al.partner.size()) + " positions, the map " +
                                        std::to_string(a.cols()) + " keys");
}

}  // namespace

Mat alignedDifference(const MatRef& a, const MatRef& b, const TokenAlignment& alignment, MaskMat& lined) {
    checkCovers(a, alignment);
    Mat d = Mat::Zero(a.rows(), a.cols());
    lined = MaskMat::Constant(a.rows(), a.cols(), false);
    for (Eigen::Index i = 0; i < a.rows(); ++i) {
        const int pi = partnerIn(alignment, i, b.rows());
        if (pi < 0) continue;
        for (Eigen::Index j = 0; j < a.cols(); ++j) {
            const int pj = partnerIn(alignment, j, b.cols());
            if (pj < 0) continue;
            d(i, j) = b(pi, pj) - a(i, j);
            lined(i, j) = true;
        }
    }
    return d;
}

float sharedWeightTop(const MatRef& a, const MatRef& b) {
    const float largest = std::max(a.size() > 0 ? a.maxCoeff() : 0.0f, b.size() > 0 ? b.maxCoeff() : 0.0f);
    return largest >= kAutoStretchBelow || largest <= 0.0f ? 1.0f : largest;
}

double mapMoved(const MatRef& a, const MatRef& b, const TokenAlignment& alignment) {
    checkCovers(a, alignment);
    std::vector<int> keys;  // a's keys with a partner among b's, and the partners
    std::vector<int> partners;
    for (Eigen::Index j = 0; j < a.cols(); ++j)
        if (const int pj = partnerIn(alignment, j, b.cols()); pj >= 0) {
            keys.push_back(static_cast<int>(j));
            partners.push_back(pj);
        }
    double total = 0;
    int rows = 0;
    for (Eigen::Index i = 0; i < a.rows(); ++i) {
        const int pi = partnerIn(alignment, i, b.rows());
        if (pi < 0) continue;
        double tv = 0;
        for (std::size_t k = 0; k < keys.size(); ++k)
            tv += std::abs(static_cast<double>(b(pi, partners[k])) - static_cast<double>(a(i, keys[k])));
        total += 0.5 * tv;
        ++rows;
    }
    return rows > 0 ? total / rows : 0.0;
}

const char* movedRule() {
    return "moved = mean over lined-up queries of ½ Σ_j |A_ij − B_ij| over lined-up keys (0 = unchanged, 1 = "
           "every weight elsewhere)";
}

std::vector<double> headsMoved(const AttentionMaps& a, const AttentionMaps& b, const TokenAlignment& alignment) {
    if (a.layers != b.layers || a.heads != b.heads)
        throw InputError("compare", "the two passes differ in shape: " + std::to_string(a.layers) + " × " + std::to_string(a.heads) +
                                        " and " + std::to_string(b.layers) + " × " + std::to_string(b.heads) + " layers × heads");
    if (static_cast<Eigen::Index>(alignment.partner.size()) < a.keys)
        throw InputError("compare", "the alignment has " + std::to_string(alignment.partner.size()) + " positions, the maps " +
                                        std::to_string(a.keys) + " keys");
    std::vector<double> moved(static_cast<std::size_t>(a.count()), 0.0);
    std::exception_ptr failure;  // the first head's error (out of memory): no exception leaves a parallel region
#pragma omp parallel
    {
        Mat sa, sb;  // maps made on demand
#pragma omp for schedule(dynamic)
        for (int m = 0; m < a.count(); ++m) {
            const int l = m / a.heads, h = m % a.heads;
            try {
                moved[static_cast<std::size_t>(m)] = mapMoved(a.map(l, h, sa), b.map(l, h, sb), alignment);
            } catch (...) {
#pragma omp critical(attnviz_moved_failure)
                if (!failure) failure = std::current_exception();
            }
        }
    }
    if (failure) std::rethrow_exception(failure);
    return moved;
}

}  // namespace attnviz::core
