// NumPy .npy files (format version 1.0), float32 little-endian, C order.
#pragma once

#include "core/base/matrix.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
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

// The element types a .npy header may name that something here reads ('<f2', '<f4', '<f8', '<i8';
// '=' for '<'), or Other (anything else: big-endian, integers of other sizes, objects).
enum class NpyDType : std::uint8_t { F16, F32, F64, I8, Other };
std::size_t npyItemBytes(NpyDType dtype);  // 2, 4, 8, 8; 0 for Other

struct NpyHeader {
    NpyDType dtype = NpyDType::Other;
    std::string descr;  // as written, quotes included, clipped for messages: "'<f2'"
    bool fortranOrder = false;
    std::vector<long long> shape;
    std::string shapeText;        // the shape as written, clipped for messages: "(2, 3)"
    std::size_t dataOffset = 0;   // the first byte after the header
    std::uint64_t elements = 0;   // the product of shape
    std::uint64_t dataBytes = 0;  // elements × item size (0 for Other); UINT64_MAX when it does not fit
    std::string dataBytesText;    // the byte count for messages: exact, or "2.42e+30" beyond 2^64
};

// Parses a .npy file's magic, version (1, 2 or 3), header length and header dict from the
// file's first bytes (`bytes` may be the whole file; only 12 + the header length are read).
// Throws InputError(where, …) for the magic, the version, a header that runs past `bytes`, a
// malformed dict or shape. It does not judge the
// dtype, the order or the data that follows: the readers do.
NpyHeader parseNpyHeader(std::span<const std::byte> bytes, const std::string& where);

// Parses a .npy file ('<f4' or '<f8', C order, any rank). Throws InputError(where, …) naming
// what is wrong: magic, version, header, dtype, order, shape or truncated data.
Tensor decodeNpy(const std::string& bytes, const std::string& where);

}  // namespace attnviz::core
