// NumPy .npy files (format version 1.0), float32 little-endian, C order.
#pragma once

#include "core/base/matrix.hpp"

#include <string>
#include <vector>

namespace attnviz::core {

// A dense float tensor: shape plus row-major data.
struct Tensor {
    std::vector<long long> shape;
    std::vector<float> data;
};

// The bytes of a .npy file holding `tensor` as '<f4'.
std::string encodeNpy(const Tensor& tensor);
// The magic, version and header of a .npy file of this shape and dtype ('<f4', or '<i8' for
// token ids): what comes before the data.
std::string npyHeader(const std::vector<long long>& shape, const char* descr = "<f4");
Tensor matrixTensor(const MatRef& m);                         // shape [rows, cols]
Tensor stackTensor(const std::vector<const Mat*>& matrices);  // shape [n, rows, cols], all the same shape

// Parses a .npy file ('<f4' or '<f8', C order, any rank). Throws InputError(where, …) naming
// what is wrong: magic, version, header, dtype, order, shape or truncated data.
Tensor decodeNpy(const std::string& bytes, const std::string& where);

}  // namespace attnviz::core
