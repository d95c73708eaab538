#include "core/io/npy.hpp"

#include "core/base/error.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

namespace attnviz::core {

std::string npyHeader(const std::vector<long long>& dims, const char* descr) {
    std::string shape = "(";
    for (std::size_t i = 0; i < dims.size(); ++i) {
        shape += std::to_string(dims[i]);
        if (dims.size() == 1 || i + 1 < dims.size()) shape += ",";
        if (i + 1 < dims.size()) shape += " ";
    }
    shape += ")";
    std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
    // magic (6) + version (2) + header length (2) + header + '\n' is a multiple of 64.
    const std::size_t unpadded = 10 + header.size() + 1;
    header.append((64 - unpadded % 64) % 64, ' ');
    header += '\n';
    std::string out("\x93NUMPY\x01\x00", 8);
    out += static_cast<char>(header.size() & 0xFF);
    out += static_cast<char>((header.size() >> 8) & 0xFF);
    out += header;
    return out;
}

std::string encodeNpy(const Tensor& tensor) {
    std::string out = npyHeader(tensor.shape);
    const std::size_t bytes = tensor.data.size() * sizeof(float);
    const std::size_t start = out.size();
    out.resize(start + bytes);
    if (bytes != 0)                                                  // an empty vector's data() may be null, which memcpy may not receive
        std::memcpy(out.data() + start, tensor.data.data(), bytes);  // x86-64 is little-endian
    return out;
}

Tensor matrixTensor(const MatRef& m) {
    Tensor t;
    t.shape = {static_cast<long long>(m.rows()), static_cast<long long>(m.cols())};
    t.data.resize(static_cast<std::size_t>(m.size()));
    Eigen::Map<Mat>(t.data.data(), m.rows(), m.cols()) = m;
    return t;
}

Tensor stackTensor(const std::vector<const Mat*>& matrices) {
    Tensor t;
    const Eigen::Index rows = matrices.empty() ? 0 : matrices.front()->rows();
    const Eigen::Index cols = matrices.empty() ? 0 : matrices.front()->cols();
    t.shape = {static_cast<long long>(matrices.size()), static_cast<long long>(rows), static_cast<long long>(cols)};
    for (const Mat* m : matrices) {
        const std::size_t start = t.data.size();
        t.data.resize(start + static_cast<std::size_t>(m->size()));
        Eigen::Map<Mat>(t.data.data() + start, rows, cols) = *m;
    }
    return t;
}

namespace {

// Value of `key` in the header dict, as raw text up to the next top-level comma. The dict is a
// Python literal: a key or string in double quotes is the same as in single ones (numpy reads
// both), so a string value comes back in single quotes.
std::string headerValue(const std::string& header, const std::string& key, const std::string& where) {
    auto at = header.find("'" + key + "'");
    if (at == std::string::npos) at = header.find("\"" + key + "\"");
    if (at == std::string::npos) throw InputError(where, "npy header has no '" + key + "'");
    auto pos = header.find(':', at);
    if (pos == std::string::npos) throw InputError(where, "npy header is malformed near '" + key + "'");
    ++pos;
    while (pos < header.size() && header[pos] == ' ') ++pos;
    if (pos < header.size() && header[pos] == '(') {
        const auto close = header.find(')', pos);
        if (close == std::string::npos) throw InputError(where, "npy header: unterminated shape");
        return header.substr(pos, close - pos + 1);
    }
    auto end = pos;
    while (end < header.size() && header[end] != ',' && header[end] != '}') ++end;
    std::string v = header.substr(pos, end - pos);
    while (!v.empty() && v.back() == ' ') v.pop_back();
    if (v.size() >= 2 && v.front() == '"' && v.back() == '"' && v.find('\'') == std::string::npos) v.front() = v.back() = '\'';
    return v;
}

}  // namespace

std::size_t npyItemBytes(NpyDType dtype) {
    switch (dtype) {
        case NpyDType::F16: return 2;
        case NpyDType::F32: return 4;
        case NpyDType::F64:
        case NpyDType::I8: return 8;
        case NpyDType::Other: return 0;
    }
    return 0;
}

NpyHeader parseNpyHeader(std::span<const std::byte> file, const std::string& where) {
    const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(file[i]); };
    if (file.size() < 10 || std::memcmp(file.data(), "\x93NUMPY", 6) != 0) throw InputError(where, "not a .npy file (wrong magic bytes)");
    const unsigned major = byte(6);
    std::size_t headerLen = 0, headerStart = 0;
    if (major == 1) {
        headerLen = byte(8) | (static_cast<std::size_t>(byte(9)) << 8);
        headerStart = 10;
    } else if (major == 2 || major == 3) {
        if (file.size() < 12) throw InputError(where, "truncated .npy header");
        for (int i = 3; i >= 0; --i) headerLen = (headerLen << 8) | byte(8 + static_cast<std::size_t>(i));
        headerStart = 12;
    } else {
        throw InputError(where, "unsupported .npy version " + std::to_string(major));
    }
    if (headerLen > file.size() - headerStart) throw InputError(where, "truncated .npy header");
    const std::string header(reinterpret_cast<const char*>(file.data()) + headerStart, headerLen);

    NpyHeader h;
    h.dataOffset = headerStart + headerLen;
    const std::string descr = headerValue(header, "descr", where);
    h.descr = clipText(oneLine(descr), 40);
    if (descr == "'<f2'" || descr == "'=f2'") h.dtype = NpyDType::F16;
    else if (descr == "'<f4'" || descr == "'=f4'") h.dtype = NpyDType::F32;
    else if (descr == "'<f8'" || descr == "'=f8'") h.dtype = NpyDType::F64;
    else if (descr == "'<i8'" || descr == "'=i8'") h.dtype = NpyDType::I8;
    h.fortranOrder = headerValue(header, "fortran_order", where) != "False";

    const std::string shape = headerValue(header, "shape", where);
    h.shapeText = clipText(oneLine(shape), 80);
    // At most kMaxRank dimensions of at most 15 digits; the product is computed without overflow
    // (a zero anywhere makes it 0 whatever comes before).
    constexpr std::size_t kMaxRank = 64;  // NumPy's own limit (32 before NumPy 2)
    for (std::size_t i = 1; i + 1 < shape.size();) {
        while (i + 1 < shape.size() && (shape[i] == ' ' || shape[i] == ',')) ++i;
        if (i + 1 >= shape.size()) break;
        std::size_t end = i;
        while (end + 1 < shape.size() && shape[end] >= '0' && shape[end] <= '9') ++end;
        if (end == i) throw InputError(where, "npy header: bad shape " + h.shapeText);
        if (end - i > 15) throw InputError(where, "npy shape " + h.shapeText + " is absurdly large");
        if (h.shape.size() == kMaxRank) throw InputError(where, "npy shape has more than " + std::to_string(kMaxRank) + " dimensions");
        h.shape.push_back(std::stoll(shape.substr(i, end - i)));
        i = end;
    }
    // The byte count, exact when it fits in 64 bits; beyond, as a number for messages (at most
    // 64 dimensions of 15 digits stay below 1e960, finite in a long double).
    const bool empty = std::find(h.shape.begin(), h.shape.end(), 0LL) != h.shape.end();
    const auto item = static_cast<std::uint64_t>(npyItemBytes(h.dtype));
    std::uint64_t count = 1;
    bool fits = true;
    long double approx = 1;
    for (const long long d : h.shape) {
        fits = fits && !__builtin_mul_overflow(count, static_cast<std::uint64_t>(d), &count);
        approx *= static_cast<long double>(d);
    }
    fits = fits && !__builtin_mul_overflow(count, item, &h.dataBytes);
    if (empty) {
        h.elements = h.dataBytes = 0;
    } else if (fits) {
        h.elements = count;
    } else {
        h.elements = h.dataBytes = std::numeric_limits<std::uint64_t>::max();
    }
    if (empty || fits) {
        h.dataBytesText = std::to_string(h.dataBytes);
    } else {
        char huge[32];
        std::snprintf(huge, sizeof huge, "%.3Lg", approx * static_cast<long double>(item));
        h.dataBytesText = huge;
    }
    return h;
}

Tensor decodeNpy(const std::string& bytes, const std::string& where) {
    const NpyHeader h = parseNpyHeader(std::as_bytes(std::span(bytes.data(), bytes.size())), where);
    if (h.dtype != NpyDType::F32 && h.dtype != NpyDType::F64)
        throw InputError(where, "dtype " + h.descr + " is not supported (expected float32 '<f4' or float64 '<f8')");
    if (h.fortranOrder) throw InputError(where, "Fortran-ordered arrays are not supported (save with C order)");
    const bool isF4 = h.dtype == NpyDType::F32;
    const std::size_t dataStart = h.dataOffset;
    if (h.dataBytes > bytes.size() - dataStart)
        throw InputError(where, "truncated data: shape " + h.shapeText + " needs " + h.dataBytesText + " bytes, the file has " +
                                    std::to_string(bytes.size() - dataStart));
    Tensor t;
    t.shape = h.shape;
    const auto n = static_cast<std::size_t>(h.elements);
    t.data.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
        double value;
        if (isF4) {
            float f;
            std::memcpy(&f, bytes.data() + dataStart + 4 * i, 4);
            value = f;
        } else {
            std::memcpy(&value, bytes.data() + dataStart + 8 * i, 8);
        }
        if (!std::isfinite(value) || std::abs(value) > std::numeric_limits<float>::max())
            throw InputError(where, "value #" + std::to_string(i) + " is not a finite float");
        t.data[i] = static_cast<float>(value);
    }
    return t;
}

}  // namespace attnviz::core
