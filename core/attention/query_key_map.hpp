// The query–key map of one head (AttentionViz: Yeh et al., "AttentionViz: A Global View of
// Transformer Attention", IEEE VIS 2023, §4.1): a head's queries and keys in one plane, placed so
// that a query lies near the keys it scores highly.
//
// q [T_q, d], k [T_k, d] as the head reads them (after bias, q/k norm and rotary positions):
//   1. translate the keys   k'_j = k_j + c,  c = mean_i q_i − mean_j k_j  (both clouds share a
//      centroid; every score of row i moves by q_i·c, which softmax over the row cancels);
//   2. scale                q̂ = a·q, k̂ = k'/a,  a = sqrt(mean_j ‖k'_j‖ / mean_i ‖q_i‖)  (the mean
//      norms become equal; every dot product is unchanged);
//   3. project              stack [q̂; k̂] (T_q + T_k rows), centre, and take the first two principal
//      components of both together (the d × d covariance in double, SelfAdjointEigenSolver); each
//      component's sign is fixed so that its loading of largest magnitude is positive (the first
//      such coordinate on a tie).
// The paper embeds with t-SNE or UMAP; principal components keep the map linear, deterministic and
// live at T = 4,096. The translation comes first, so the scale is measured on the translated keys
// and the mean norms come out exactly equal; the scaled clouds' centroids are then a·m and m/a
// (m = mean q), equal only when a = 1.
#pragma once

#include "core/base/matrix.hpp"

#include <Eigen/Core>

#include <array>
#include <vector>

namespace attnviz::core {

// Steps 1 and 2: the queries and keys with the same dot products up to a per-row constant.
struct QueryKeyNormalised {
    Mat q;             // [T_q, d] a·q
    Mat k;             // [T_k, d] (k + shift)/a
    RowVec shift;      // [d] mean(q) − mean(k), in the keys' original units
    double scale = 1;  // a; 1 when either cloud has zero mean norm (nothing to balance)
};
// Throws InputError on no queries or keys, different widths, or a value that is not finite.
QueryKeyNormalised normaliseQueryKey(const MatRef& q, const MatRef& k);

struct QueryKeyMap {
    Eigen::Index queries = 0, keys = 0;  // T_q, T_k
    Mat points;                          // [T_q + T_k, 2]: the queries (rows 0 … T_q − 1), then the keys, on PC1 and PC2
    RowVec shift;                        // [d] the keys' translation (QueryKeyNormalised::shift)
    double scale = 1;                    // a
    double meanNorm = 0;                 // the mean norm of the scaled queries, and of the scaled keys
    Eigen::MatrixXd components;          // [d, 2] PC1 and PC2, unit length (a zero column where d < 2)
    Eigen::VectorXd centre;              // [d] the mean of the stacked, normalised points
    std::array<double, 2> explained{};   // each component's share of the total variance (0 … 1)
    // Point of query i and of key j.
    auto query(Eigen::Index i) const { return points.row(i); }
    auto key(Eigen::Index j) const { return points.row(queries + j); }
};

// Steps 1 to 3. Throws as normaliseQueryKey.
QueryKeyMap queryKeyMap(const MatRef& q, const MatRef& k);

// The `count` keys of a weights row with the largest weights, largest first (ties: the lower
// index); keys of weight 0 (masked or vanished) are left out.
std::vector<int> strongestKeys(const Eigen::Ref<const RowVec>& row, int count);

}  // namespace attnviz::core
