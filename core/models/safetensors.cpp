#include "core/models/safetensors.hpp"

#include "core/base/error.hpp"
#include "core/base/json_text.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>
#include <set>
#include <utility>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

// The header's integers and the tensors' bytes are read as little-endian, which is what the host is.
static_assert(std::endian::native == std::endian::little, "safetensors are read in place: a little-endian host only");

namespace attnviz::core {

using json = nlohmann::json;

namespace {

constexpr std::size_t kMaxRank = 8;

struct DTypeRow {
    DType dtype;
    const char* name;
    std::size_t bytes;
};
constexpr DTypeRow kDTypes[] = {
    {DType::Bool, "BOOL", 1}, {DType::U8, "U8", 1},          {DType::I8, "I8", 1},          {DType::I16, "I16", 2},
    {DType::U16, "U16", 2},   {DType::F16, "F16", 2},        {DType::BF16, "BF16", 2},      {DType::I32, "I32", 4},
    {DType::U32, "U32", 4},   {DType::F32, "F32", 4},        {DType::F64, "F64", 8},        {DType::I64, "I64", 8},
    {DType::U64, "U64", 8},   {DType::F8E4M3, "F8_E4M3", 1}, {DType::F8E5M2, "F8_E5M2", 1},
};

const DTypeRow& row(DType dtype) {
    for (const DTypeRow& r : kDTypes)
        if (r.dtype == dtype) return r;
    return kDTypes[0];  // unreachable: every enumerator has a row
}

std::string shapeText(const std::vector<std::int64_t>& shape) {
    std::string s = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

// "file: tensor", the name clipped so that a long one cannot push the file out of the message.
std::string tensorPlace(const std::string& path, const std::string& name) { return path + ": " + clipText(name, 100); }

std::string offsetsText(std::uint64_t begin, std::uint64_t end) {
    return "data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) + "]";
}

// A header integer that is >= 0 and fits in int64 (a shape entry or an offset): true and `out`.
bool nonNegativeInt(const json& v, std::int64_t& out) {
    if (v.is_number_unsigned()) {
        const auto u = v.get<std::uint64_t>();
        if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return false;
        out = static_cast<std::int64_t>(u);
        return true;
    }
    if (!v.is_number_integer()) return false;
    out = v.get<std::int64_t>();
    return out >= 0;
}

// "header is not JSON: parse error at line 1, column 9: syntax error …; expected end of input",
// without nlohmann's "last read: '…'" (a piece of the input).
std::string jsonErrorText(const json::exception& e) {
    std::string what = e.what();
    if (const auto close = what.find("] "); close != std::string::npos) what.erase(0, close + 2);
    if (e.id == 406) {  // "number overflow parsing '1e999'": the number, clipped
        const auto open = what.find('\''), close = what.rfind('\'');
        if (open < close)
            return "header is not JSON: number overflow parsing " + quoteValue(std::string_view(what).substr(open + 1, close - open - 1));
    }
    if (const auto lastRead = what.find("; last read: '"); lastRead != std::string::npos) {
        const auto expected = what.rfind("'; expected ");
        const bool keep = expected != std::string::npos && expected > lastRead && what.size() - expected < 40;
        what = what.substr(0, lastRead) + (keep ? what.substr(expected + 1) : "");
    }
    return "header is not JSON: " + what;
}

// The header's JSON, strict (nothing but white space after it), with the first key that appears
// twice in one object: nlohmann would keep the last silently.
json parseHeader(std::string_view text, const std::string& where) {
    std::vector<std::set<std::string>> keys;  // one set per open object
    std::string top, duplicate;               // the tensor being read; the first repeated key
    bool repeated = false, nested = false;    // a key repeated; inside a tensor's object
    const json::parser_callback_t watch = [&](int depth, json::parse_event_t event, json& parsed) {
        if (event == json::parse_event_t::object_start) keys.emplace_back();
        else if (event == json::parse_event_t::object_end) keys.pop_back();
        else if (event == json::parse_event_t::key && !keys.empty()) {
            const auto& key = parsed.get_ref<const std::string&>();
            if (depth == 1) top = key;
            if (!repeated && !keys.back().insert(key).second) {
                repeated = true;
                nested = depth > 1;
                duplicate = key;
            }
        }
        return true;
    };
    json header;
    try {
        header = json::parse(text.data(), text.data() + text.size(), watch);
    } catch (const json::exception& e) {
        throw InputError(where, jsonErrorText(e));
    }
    if (!header.is_object()) throw InputError(where, "header is " + describeJson(header) + ", expected a JSON object");
    if (repeated) {
        const std::string place = tensorPlace(where, top);
        throw InputError(place, !nested ? "appears twice in the header" : "field " + quoteValue(duplicate) + " appears twice");
    }
    return header;
}

const json& field(const json& entry, const char* key, const std::string& where) {
    const auto it = entry.find(key);
    if (it == entry.end()) throw InputError(where, std::string("no ") + key);
    return *it;
}

}  // namespace

const char* dtypeName(DType dtype) { return row(dtype).name; }
std::size_t dtypeBytes(DType dtype) { return row(dtype).bytes; }
bool isFloatDType(DType dtype) { return dtype == DType::F16 || dtype == DType::BF16 || dtype == DType::F32 || dtype == DType::F64; }

std::int64_t TensorInfo::elements() const {
    // parse() checked that the product fits; a zero anywhere makes it 0 whatever comes before
    if (std::find(shape.begin(), shape.end(), 0) != shape.end()) return 0;
    std::int64_t n = 1;
    for (const std::int64_t d : shape) n *= d;
    return n;
}

// Exact: a half's 11-bit significand and 5-bit exponent fit a float's; a subnormal half is
// normalised (its value is m · 2^-24), infinities and NaN keep their payload.
float halfToFloat(std::uint16_t h) {
    const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000U) << 16;
    std::uint32_t exponent = (h >> 10) & 0x1FU, mantissa = h & 0x3FFU, bits = 0;
    if (exponent == 0x1F) {
        bits = sign | 0x7F800000U | (mantissa << 13);
    } else if (exponent != 0) {
        bits = sign | ((exponent + 112) << 23) | (mantissa << 13);  // rebias 15 → 127
    } else if (mantissa == 0) {
        bits = sign;
    } else {
        exponent = 113;  // 2^-14 as a float exponent, lowered once per shift below
        while ((mantissa & 0x400U) == 0) mantissa <<= 1, --exponent;
        bits = sign | (exponent << 23) | ((mantissa & 0x3FFU) << 13);
    }
    return std::bit_cast<float>(bits);
}

float bfloat16ToFloat(std::uint16_t bits) { return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16); }

struct SafetensorsFile::Mapping {
    void* address = nullptr;
    std::size_t length = 0;
    Mapping(void* a, std::size_t n) : address(a), length(n) {}
    Mapping(const Mapping&) = delete;
    Mapping& operator=(const Mapping&) = delete;
    ~Mapping() { ::munmap(address, length); }
};

SafetensorsFile::SafetensorsFile(SafetensorsFile&&) noexcept = default;
SafetensorsFile& SafetensorsFile::operator=(SafetensorsFile&&) noexcept = default;
SafetensorsFile::~SafetensorsFile() = default;

SafetensorsFile SafetensorsFile::open(const std::string& path, Progress* progress) {
    // O_NONBLOCK: a FIFO opens at once instead of waiting for a writer, and is refused below.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        const int err = errno;
        throw InputError(path, err == ENOENT ? std::string("no such file") : std::string("cannot open: ") + std::strerror(err));
    }
    struct stat info {};
    const int statted = ::fstat(fd, &info);
    const int statErr = errno;
    std::string problem;
    if (statted != 0) problem = std::string("cannot stat: ") + std::strerror(statErr);
    else if (S_ISDIR(info.st_mode)) problem = "is a directory, expected a safetensors file";
    else if (!S_ISREG(info.st_mode)) problem = "is not a regular file (a pipe or a device cannot be mapped)";
    else if (info.st_size == 0) problem = "is empty, expected a safetensors file (8-byte header length, header, data)";
    if (!problem.empty()) {
        ::close(fd);
        throw InputError(path, problem);
    }
    // The file is trusted not to shrink while mapped (a byte past its new end would be SIGBUS), as
    // llm.c and ggml trust their checkpoints.
    SafetensorsFile file;
    file.m_path = path;
    const auto length = static_cast<std::size_t>(info.st_size);
    void* address = ::mmap(nullptr, length, PROT_READ, MAP_PRIVATE, fd, 0);
    const int mapErr = errno;
    ::close(fd);  // the mapping keeps the file
    if (address == MAP_FAILED) throw InputError(path, std::string("cannot map: ") + std::strerror(mapErr));
    file.m_mapping = std::make_unique<Mapping>(address, length);
    file.m_bytes = {static_cast<const std::byte*>(address), length};
    file.parse();
    // Every tensor is read next: the pages are mapped a few MiB a call rather than faulted in one
    // 4 KiB page at a time (a second for GPT-2 small on a virtual machine). Advice only; the
    // steps between calls are where a stop is heard.
    expect(progress, length);
    constexpr std::size_t kStep = std::size_t{64} << 20;
    for (std::size_t at = 0; at < length; at += kStep) {
        const std::size_t n = std::min(kStep, length - at);
#ifdef MADV_POPULATE_READ
        ::madvise(static_cast<std::byte*>(address) + at, n, MADV_POPULATE_READ);
#endif
        advance(progress, n);
    }
    return file;
}

SafetensorsFile SafetensorsFile::fromBytes(std::span<const std::byte> bytes, const std::string& name) {
    SafetensorsFile file;
    file.m_path = name;
    file.m_bytes = bytes;
    file.parse();
    return file;
}

// 1. the header length; 2. the header's JSON; 3. each entry: metadata, or a tensor with a known
// dtype, a bounded shape, offsets inside the data and a byte count that matches; 4. order by
// offset and refuse overlaps.
void SafetensorsFile::parse() {
    const std::uint64_t fileSize = m_bytes.size();
    if (fileSize < 8) throw InputError(m_path, "truncated: " + std::to_string(fileSize) + " bytes, shorter than the 8-byte header length");
    std::uint64_t headerBytes = 0;
    std::memcpy(&headerBytes, m_bytes.data(), 8);
    if (headerBytes > kMaxHeaderBytes)
        throw InputError(m_path, "header length " + std::to_string(headerBytes) + " is over the limit of " +
                                     std::to_string(kMaxHeaderBytes >> 20) + " MiB (is it a safetensors file?)");
    if (headerBytes > fileSize - 8)
        throw InputError(m_path, "truncated: header length " + std::to_string(headerBytes) + " runs past the end of the file (" +
                                     std::to_string(fileSize) + " bytes)");
    m_dataStart = 8 + headerBytes;
    const std::uint64_t dataSize = fileSize - m_dataStart;

    // 2. writers pad the header with spaces to align the data; nothing else may follow the JSON
    std::string_view text(reinterpret_cast<const char*>(m_bytes.data()) + 8, headerBytes);
    while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
    // nlohmann takes a NUL byte for the end of the input: the rest would be ignored unread
    if (const auto nul = text.find('\0'); nul != std::string_view::npos)
        throw InputError(m_path, "header is not JSON: a NUL byte at byte " + std::to_string(nul) + " of the header");
    const json header = parseHeader(text, m_path);

    // 3. the entries
    for (const auto& [name, entry] : header.items()) {
        if (name == "__metadata__") {
            const std::string where = m_path + ": __metadata__";
            if (!entry.is_object()) throw InputError(where, "is " + describeJson(entry) + ", expected an object of strings");
            for (const auto& [key, value] : entry.items()) {
                if (!value.is_string())
                    throw InputError(where + ": " + clipText(key, 100), "is " + describeJson(value) + ", expected a string");
                m_metadata[key] = value.get<std::string>();
            }
            continue;
        }
        if (name.empty()) throw InputError(m_path, "a tensor has an empty name");
        const std::string where = tensorPlace(m_path, name);
        if (!entry.is_object())
            throw InputError(where, "is " + describeJson(entry) + ", expected an object with dtype, shape and data_offsets");
        TensorInfo t;
        t.name = name;

        const json& dtype = field(entry, "dtype", where);
        if (!dtype.is_string()) throw InputError(where, "dtype is " + describeJson(dtype) + ", expected a string such as 'F32'");
        const auto known = std::find_if(std::begin(kDTypes), std::end(kDTypes),
                                        [&](const DTypeRow& r) { return dtype.get_ref<const std::string&>() == r.name; });
        if (known == std::end(kDTypes)) throw InputError(where, "unknown dtype " + quoteValue(dtype.get_ref<const std::string&>()));
        t.dtype = known->dtype;

        const json& shape = field(entry, "shape", where);
        if (!shape.is_array()) throw InputError(where, "shape is " + describeJson(shape) + ", expected an array of sizes");
        if (shape.size() > kMaxRank)
            throw InputError(where, "shape has " + std::to_string(shape.size()) + " dimensions, more than " + std::to_string(kMaxRank));
        for (std::size_t i = 0; i < shape.size(); ++i) {
            std::int64_t d = 0;
            if (!nonNegativeInt(shape[i], d))
                throw InputError(where,
                                 "shape[" + std::to_string(i) + "] is " + describeJson(shape[i]) + ", expected a non-negative integer");
            t.shape.push_back(d);
        }

        const json& offsets = field(entry, "data_offsets", where);
        if (!offsets.is_array() || offsets.size() != 2)
            throw InputError(where, "data_offsets is " + describeJson(offsets) + ", expected [begin, end]");
        std::int64_t begin = 0, end = 0;
        if (!nonNegativeInt(offsets[0], begin) || !nonNegativeInt(offsets[1], end))
            throw InputError(where, "data_offsets must be two non-negative integers, got " + describeJson(offsets[0]) + " and " +
                                        describeJson(offsets[1]));
        t.begin = static_cast<std::uint64_t>(begin);
        t.end = static_cast<std::uint64_t>(end);
        if (t.begin > t.end) throw InputError(where, offsetsText(t.begin, t.end) + ": begin is after end");
        if (t.end > dataSize)
            throw InputError(where, "truncated: " + offsetsText(t.begin, t.end) + " run past the end of the data (" +
                                        std::to_string(dataSize) + " bytes)");

        // elements × dtype size, in 64 bits without overflow (a zero dimension makes it 0)
        std::uint64_t bytes = dtypeBytes(t.dtype);
        bool overflow = false;
        if (std::find(t.shape.begin(), t.shape.end(), 0) != t.shape.end()) bytes = 0;
        for (const std::int64_t d : t.shape) overflow = overflow || __builtin_mul_overflow(bytes, static_cast<std::uint64_t>(d), &bytes);
        if (overflow) throw InputError(where, "shape " + shapeText(t.shape) + " is too large: its byte count overflows 64 bits");
        if (bytes != t.end - t.begin)
            throw InputError(where, "shape " + shapeText(t.shape) + " of " + dtypeName(t.dtype) + " takes " + std::to_string(bytes) +
                                        " bytes, but " + offsetsText(t.begin, t.end) + " span " + std::to_string(t.end - t.begin));
        m_tensors.push_back(std::move(t));
    }

    // 4. in the order of the data; an empty tensor may sit anywhere
    std::sort(m_tensors.begin(), m_tensors.end(),
              [](const TensorInfo& a, const TensorInfo& b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; });
    const TensorInfo* last = nullptr;  // the non-empty tensor reaching furthest so far
    for (const TensorInfo& t : m_tensors) {
        if (t.begin == t.end) continue;
        if (last && t.begin < last->end) {
            const std::string other =
                quoteValue(last->name) + " at [" + std::to_string(last->begin) + ", " + std::to_string(last->end) + "]";
            throw InputError(tensorPlace(m_path, t.name), offsetsText(t.begin, t.end) + " overlap tensor " + other);
        }
        last = &t;
    }
}

const TensorInfo* SafetensorsFile::find(std::string_view name) const {
    const auto it = std::find_if(m_tensors.begin(), m_tensors.end(), [&](const TensorInfo& t) { return t.name == name; });
    return it == m_tensors.end() ? nullptr : &*it;
}

std::span<const std::byte> SafetensorsFile::bytes(const TensorInfo& tensor) const {
    return m_bytes.subspan(m_dataStart + tensor.begin, tensor.end - tensor.begin);
}

// out: [tensor.elements()] floats. Each element is read with memcpy: the data need not be aligned.
void SafetensorsFile::toFloats(const TensorInfo& tensor, float* out) const {
    if (!isFloatDType(tensor.dtype))
        throw InputError(tensorPlace(m_path, tensor.name), std::string("dtype ") + dtypeName(tensor.dtype) + " is not a float type");
    const std::span<const std::byte> in = bytes(tensor);
    const auto n = static_cast<std::size_t>(tensor.elements());
    if (n == 0) return;
    switch (tensor.dtype) {
        case DType::F32: std::memcpy(out, in.data(), 4 * n); break;
        case DType::F64:
            for (std::size_t i = 0; i < n; ++i) {
                double v = 0;
                std::memcpy(&v, in.data() + 8 * i, 8);
                out[i] = static_cast<float>(v);  // beyond float's range: ±inf (IEEE rounding)
            }
            break;
        default: {  // F16, BF16
            const bool half = tensor.dtype == DType::F16;
            for (std::size_t i = 0; i < n; ++i) {
                std::uint16_t v = 0;
                std::memcpy(&v, in.data() + 2 * i, 2);
                out[i] = half ? halfToFloat(v) : bfloat16ToFloat(v);
            }
        }
    }
}

const float* SafetensorsFile::floatsInPlace(const TensorInfo& tensor) const {
    if (tensor.dtype != DType::F32) return nullptr;
    const std::byte* first = m_bytes.data() + m_dataStart + tensor.begin;
    if (reinterpret_cast<std::uintptr_t>(first) % alignof(float) != 0) return nullptr;
    return reinterpret_cast<const float*>(first);
}

void SafetensorsFile::release(const TensorInfo& tensor) const {
    if (!m_mapping || tensor.end <= tensor.begin) return;
    // The whole pages inside the tensor's bytes (the mapping starts on a page): a neighbour's
    // bytes on a shared page stay.
    const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    const std::uint64_t from = (m_dataStart + tensor.begin + page - 1) / page * page, to = (m_dataStart + tensor.end) / page * page;
    if (to <= from) return;
    void* first = const_cast<std::byte*>(m_bytes.data() + from);  // madvise takes a mutable pointer; nothing is written
    ::madvise(first, to - from, MADV_DONTNEED);                   // a hint: nothing to do if it fails
}

}  // namespace attnviz::core
