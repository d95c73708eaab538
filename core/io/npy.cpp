#include "core/io/npy.hpp"

#include "core/base/error.hpp"

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

// Value of `key` in the header dict, as raw text up to the next top-level comma.
std::string headerValue(const std::string& header, const std::string& key, const std::string& where) {
    const auto at = header.find("'" + key + "'");
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
    return v;
}

}  // namespace

Tensor decodeNpy(const std::string& bytes, const std::string& where) {
    if (bytes.size() < 10 || std::memcmp(bytes.data(), "\x93NUMPY", 6) != 0) throw InputError(where, "not a .npy file (wrong magic bytes)");
    const auto major = static_cast<unsigned char>(bytes[6]);
    std::size_t headerLen = 0, headerStart = 0;
    if (major == 1) {
        headerLen = static_cast<unsigned char>(bytes[8]) | (static_cast<std::size_t>(static_cast<unsigned char>(bytes[9])) << 8);
        headerStart = 10;
    } else if (major == 2 || major == 3) {
        if (bytes.size() < 12) throw InputError(where, "truncated .npy header");
        headerLen = 0;
        for (int i = 3; i >= 0; --i) headerLen = (headerLen << 8) | static_cast<unsigned char>(bytes[8 + i]);
        headerStart = 12;
    } else {
        throw InputError(where, "unsupported .npy version " + std::to_string(major));
    }
    if (headerStart + headerLen > bytes.size()) throw InputError(where, "truncated .npy header");
    const std::string header = bytes.substr(headerStart, headerLen);

    const std::string descr = headerValue(header, "descr", where);
    const bool isF4 = descr == "'<f4'" || descr == "'=f4'";
    const bool isF8 = descr == "'<f8'" || descr == "'=f8'";
    if (!isF4 && !isF8) throw InputError(where, "dtype " + descr + " is not supported (expected float32 '<f4' or float64 '<f8')");
    if (headerValue(header, "fortran_order", where) != "False")
        throw InputError(where, "Fortran-ordered arrays are not supported (save with C order)");

    Tensor t;
    const std::string shape = headerValue(header, "shape", where);
    // At most kMaxRank dimensions of at most 15 digits: count stays finite (below 1e960), so a
    // zero dimension after huge ones gives 0, never inf · 0 = NaN.
    constexpr std::size_t kMaxRank = 64;  // NumPy's own limit (32 before NumPy 2)
    long double count = 1;
    for (std::size_t i = 1; i + 1 < shape.size();) {
        while (i + 1 < shape.size() && (shape[i] == ' ' || shape[i] == ',')) ++i;
        if (i + 1 >= shape.size()) break;
        std::size_t end = i;
        while (end + 1 < shape.size() && shape[end] >= '0' && shape[end] <= '9') ++end;
        if (end == i) throw InputError(where, "npy header: bad shape " + shape);
        if (end - i > 15) throw InputError(where, "npy shape " + shape + " is absurdly large");
        if (t.shape.size() == kMaxRank) throw InputError(where, "npy shape has more than " + std::to_string(kMaxRank) + " dimensions");
        const long long dim = std::stoll(shape.substr(i, end - i));
        t.shape.push_back(dim);
        count *= static_cast<long double>(dim);
        i = end;
    }
    const std::size_t itemSize = isF4 ? 4 : 8;
    const std::size_t dataStart = headerStart + headerLen;
    const long double need = count * itemSize;
    if (need > static_cast<long double>(bytes.size() - dataStart)) {
        // Beyond 2^64 no integer type holds the count (up to 1e960 bytes): print it as a number.
        char huge[32];
        std::snprintf(huge, sizeof huge, "%.3Lg", need);
        const std::string needText = need < 1.8e19L ? std::to_string(static_cast<unsigned long long>(need)) : huge;
        throw InputError(where, "truncated data: shape " + shape + " needs " + needText + " bytes, the file has " +
                                    std::to_string(bytes.size() - dataStart));
    }
    const auto n = static_cast<std::size_t>(count);
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
