#include "core/attention/query_key_map.hpp"

#include "core/base/error.hpp"

#include <Eigen/Eigenvalues>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

namespace attnviz::core {
namespace {

void check(const MatRef& q, const MatRef& k) {
    if (q.rows() == 0 || k.rows() == 0) throw InputError("query-key map", "needs at least one query and one key");
    if (q.cols() != k.cols())
        throw InputError("query-key map", "queries are " + std::to_string(q.cols()) + " wide but keys " + std::to_string(k.cols()));
    if (q.cols() == 0) throw InputError("query-key map", "queries and keys have no components");
    if (!q.allFinite()) throw InputError("query-key map", "a query holds a value that is not finite");
    if (!k.allFinite()) throw InputError("query-key map", "a key holds a value that is not finite");
}

// Mean row norm, in double.
double meanNorm(const Eigen::MatrixXd& x) { return x.rowwise().norm().mean(); }

// The sign rule: the loading of largest magnitude positive (the first such on a tie).
void fixSign(Eigen::Ref<Eigen::VectorXd> v) {
    Eigen::Index at = 0;
    for (Eigen::Index i = 1; i < v.size(); ++i)
        if (std::abs(v(i)) > std::abs(v(at))) at = i;
    if (v(at) < 0) v = -v;
}

struct Normalised {
    Eigen::MatrixXd q, k;  // in double: [T_q, d], [T_k, d]
    Eigen::RowVectorXd shift;
    double scale = 1;
};

Normalised normalise(const MatRef& q, const MatRef& k) {
    check(q, k);
    Normalised n;
    n.q = q.cast<double>();
    n.k = k.cast<double>();
    // 1. translate the keys onto the queries' centroid
    n.shift = n.q.colwise().mean() - n.k.colwise().mean();
    n.k.rowwise() += n.shift;
    // 2. balance the mean norms (measured after the translation)
    const double nq = meanNorm(n.q), nk = meanNorm(n.k);
    n.scale = nq > 0 && nk > 0 ? std::sqrt(nk / nq) : 1.0;
    n.q *= n.scale;
    n.k /= n.scale;
    return n;
}

}  // namespace

QueryKeyNormalised normaliseQueryKey(const MatRef& q, const MatRef& k) {
    const Normalised n = normalise(q, k);
    return {n.q.cast<float>(), n.k.cast<float>(), n.shift.cast<float>(), n.scale};
}

QueryKeyMap queryKeyMap(const MatRef& q, const MatRef& k) {
    const Normalised n = normalise(q, k);
    const Eigen::Index tq = q.rows(), tk = k.rows(), d = q.cols(), rows = tq + tk;
    QueryKeyMap map;
    map.queries = tq;
    map.keys = tk;
    map.shift = n.shift.cast<float>();
    map.scale = n.scale;
    map.meanNorm = meanNorm(n.q);
    // 3. centre the stacked points; covariance C = XᵀX / N  [d, d]
    map.centre = (n.q.colwise().sum() + n.k.colwise().sum()).transpose() / static_cast<double>(rows);
    Eigen::MatrixXd x(rows, d);
    x.topRows(tq) = n.q.rowwise() - map.centre.transpose();
    x.bottomRows(tk) = n.k.rowwise() - map.centre.transpose();
    Eigen::MatrixXd cov = Eigen::MatrixXd::Zero(d, d);
    cov.selfadjointView<Eigen::Lower>().rankUpdate(x.transpose(), 1.0 / static_cast<double>(rows));
    // 4. the two largest eigenpairs (the solver sorts eigenvalues ascending)
    const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(cov.selfadjointView<Eigen::Lower>());
    if (eig.info() != Eigen::Success) throw InputError("query-key map", "the covariance's eigenvectors did not converge");
    map.components = Eigen::MatrixXd::Zero(d, 2);
    const double total = std::max(0.0, eig.eigenvalues().sum());
    for (Eigen::Index c = 0; c < std::min<Eigen::Index>(2, d); ++c) {
        map.components.col(c) = eig.eigenvectors().col(d - 1 - c);
        fixSign(map.components.col(c));
        map.explained[static_cast<std::size_t>(c)] = total > 0 ? std::max(0.0, eig.eigenvalues()(d - 1 - c)) / total : 0.0;
    }
    // 5. the points on PC1 and PC2  [N, 2]
    map.points = (x * map.components).cast<float>();
    return map;
}

std::vector<int> strongestKeys(const Eigen::Ref<const RowVec>& row, int count) {
    std::vector<int> order(static_cast<std::size_t>(row.size()));
    std::iota(order.begin(), order.end(), 0);
    const auto n = static_cast<std::size_t>(std::clamp<Eigen::Index>(count, 0, row.size()));
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n), order.end(),
                      [&](int a, int b) { return row(a) > row(b) || (row(a) == row(b) && a < b); });
    order.resize(n);
    std::erase_if(order, [&](int j) { return !(row(j) > 0.0f); });
    return order;
}

}  // namespace attnviz::core
