// Matrix types shared by the whole engine.
// Row-major so that a [T, T] weight matrix maps onto a texture without a transpose.
#pragma once

#include <Eigen/Core>

#include <string>

namespace attnviz::core {

using Mat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Vec = Eigen::Matrix<float, Eigen::Dynamic, 1>;
using RowVec = Eigen::Matrix<float, 1, Eigen::Dynamic>;
// Boolean mask: true = blocked (this query may not read this key).
using MaskMat = Eigen::Matrix<bool, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MatRef = Eigen::Ref<const Mat>;

// "3 x 4", used in messages and the shape passport.
inline std::string shapeString(Eigen::Index rows, Eigen::Index cols) { return std::to_string(rows) + " x " + std::to_string(cols); }

}  // namespace attnviz::core
