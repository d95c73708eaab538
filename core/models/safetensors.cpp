#include "core/models/safetensors.hpp"

#include "core/base/error.hpp"
#include "core/base/json_text.hpp"
#include "core/base/mapped_file.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <functional>
#include <limits>
#include <numeric>
#include <optional>
#include <set>
#include <unordered_set>
#include <utility>

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
// from nlohmann's exception id and text, without its "last read: '…'" (a piece of the input).
std::string jsonErrorText(int id, std::string what) {
    if (const auto close = what.find("] "); close != std::string::npos) what.erase(0, close + 2);
    if (id == 406) {  // "number overflow parsing '1e999'": the number, clipped
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

// A header event's JSON error as nlohmann words it (what jsonErrorText trims).
struct JsonFailure {
    int id = 0;
    std::string what;
};

// The header read as parser events, in one pass: each top-level entry's value is built as a
// small JSON value on its own, handed to `take` and dropped, so that reading is linear in the
// header's size (a header of a million entries never lives as one JSON object, and nothing is
// rescanned per entry). Remembers the first key that appears twice in its object (nlohmann
// would keep the last silently) and what `take` refused first; the caller reports them after the
// whole text has parsed, so that a syntax error anywhere comes first.
class HeaderEvents : public nlohmann::json_sax<json> {
public:
    using Take = std::function<void(const std::string& name, const json& entry)>;
    HeaderEvents(std::string where, Take take) : m_where(std::move(where)), m_take(std::move(take)) {}

    // The value parsed when the header is not an object (for the message), and the problems.
    json root;
    bool isObject = false;
    std::optional<InputError> duplicate, refused;
    std::optional<JsonFailure> failure;

    bool null() override { return value(nullptr); }
    bool boolean(bool v) override { return value(v); }
    bool number_integer(number_integer_t v) override { return value(v); }
    bool number_unsigned(number_unsigned_t v) override { return value(v); }
    bool number_float(number_float_t v, const string_t& /*text*/) override { return value(v); }
    bool string(string_t& v) override { return value(std::move(v)); }
    bool binary(binary_t& v) override { return value(json::binary(std::move(v))); }
    bool start_object(std::size_t /*elements*/) override {
        if (!m_started) return (m_started = isObject = true);  // the header's own object
        return open(json::object());
    }
    bool key(string_t& k) override {
        if (m_open.empty()) {  // a key of the header's own object: the next entry's name
            if (!m_names.insert(k).second && !duplicate) duplicate.emplace(tensorPlace(m_where, k), "appears twice in the header");
            m_name = std::move(k);
            return true;
        }
        if (!m_keys.back().insert(k).second && !duplicate)
            duplicate.emplace(tensorPlace(m_where, m_name), "field " + quoteValue(k) + " appears twice");
        m_key = std::move(k);
        return true;
    }
    bool end_object() override { return m_open.empty() || close(); }  // empty: the header's own object ends
    bool start_array(std::size_t /*elements*/) override { return open(json::array()); }
    bool end_array() override { return close(); }
    bool parse_error(std::size_t /*position*/, const std::string& /*last_token*/, const nlohmann::detail::exception& e) override {
        failure = JsonFailure{e.id, e.what()};
        return false;
    }

private:
    // A new value: the header itself (when it is not an object), an entry's whole value, or a
    // part of one.
    json* place(json v) {
        m_started = true;
        if (m_open.empty()) {
            json& slot = isObject ? m_entry : root;
            slot = std::move(v);
            return &slot;
        }
        json& parent = *m_open.back();
        if (parent.is_array()) {
            parent.push_back(std::move(v));
            return &parent.back();
        }
        json& slot = parent[m_key];
        slot = std::move(v);
        return &slot;
    }
    bool open(json container) {
        m_open.push_back(place(std::move(container)));
        m_keys.emplace_back();
        return true;
    }
    bool value(json v) {
        place(std::move(v));
        if (m_open.empty() && isObject) finishEntry();
        return true;
    }
    bool close() {
        m_open.pop_back();
        m_keys.pop_back();
        if (m_open.empty() && isObject) finishEntry();
        return true;
    }
    void finishEntry() {
        if (!refused) {
            try {
                m_take(m_name, m_entry);
            } catch (const InputError& e) {
                refused.emplace(e);
            }
        }
        m_entry = nullptr;
    }

    std::string m_where;
    Take m_take;
    bool m_started = false;                     // an event was read
    std::vector<json*> m_open;                  // the open objects and arrays of the value being built
    std::vector<std::set<std::string>> m_keys;  // each open object's keys (arrays: none)
    std::unordered_set<std::string> m_names;    // the header's keys
    std::string m_name, m_key;                  // the entry being read; the key of the next field
    json m_entry;                               // its value
};

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

SafetensorsFile::SafetensorsFile(SafetensorsFile&&) noexcept = default;
SafetensorsFile& SafetensorsFile::operator=(SafetensorsFile&&) noexcept = default;
SafetensorsFile::~SafetensorsFile() = default;

SafetensorsFile SafetensorsFile::open(const std::string& path, Progress* progress) {
    // The mapping turns a read past a shrunk end into zeros and changed()
    // (core/base/mapped_file.hpp). Opening reads the header only: the tensors' pages are read
    // when a model takes them (populate).
    SafetensorsFile file;
    file.m_path = path;
    file.m_mapping = MappedFile::open(path, "a safetensors file", "8-byte header length, header, data");
    file.m_bytes = file.m_mapping->bytes();
    try {
        file.parse();
    } catch (const InputError&) {
        file.checkUnchanged();  // a header read as zeros is a file that changed, not a broken one
        throw;
    }
    file.checkUnchanged();
    check(progress);
    return file;
}

SafetensorsFile SafetensorsFile::fromBytes(std::span<const std::byte> bytes, const std::string& name) {
    SafetensorsFile file;
    file.m_path = name;
    file.m_bytes = bytes;
    file.parse();
    return file;
}

// 1. the header length; 2. the header's JSON, read as events; 3. each entry as it ends
// (takeEntry); 4. order by offset and refuse overlaps; 5. nothing after the last tensor.
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
    HeaderEvents events(m_path, [&](const std::string& name, const json& entry) { takeEntry(name, entry, dataSize); });
    json::sax_parse(text.begin(), text.end(), &events);
    if (events.failure) throw InputError(m_path, jsonErrorText(events.failure->id, events.failure->what));
    if (!events.isObject) throw InputError(m_path, "header is " + describeJson(events.root) + ", expected a JSON object");
    if (events.duplicate) throw InputError(*events.duplicate);
    if (events.refused) throw InputError(*events.refused);

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
    // 5. the data ends where its last tensor does (Hugging Face's reader refuses anything else):
    // bytes after it would be mapped for nothing, and a sparse tail of a terabyte is a header that lies.
    const std::uint64_t used = last ? last->end : 0;
    if (used != dataSize)
        throw InputError(m_path, std::to_string(dataSize - used) + " bytes follow the last tensor's end (byte " + std::to_string(used) +
                                     " of the data): a safetensors file's data ends where its last tensor does");
    // 6. the names in order, for find
    m_byName.resize(m_tensors.size());
    std::iota(m_byName.begin(), m_byName.end(), std::size_t{0});
    std::sort(m_byName.begin(), m_byName.end(), [&](std::size_t a, std::size_t b) { return m_tensors[a].name < m_tensors[b].name; });
}

// 3. one entry of the header: metadata, or a tensor with a known dtype, a bounded shape, offsets
// inside the data and a byte count that matches.
void SafetensorsFile::takeEntry(const std::string& name, const json& entry, std::uint64_t dataSize) {
    if (name == "__metadata__") {
        const std::string where = m_path + ": __metadata__";
        if (!entry.is_object()) throw InputError(where, "is " + describeJson(entry) + ", expected an object of strings");
        for (const auto& [key, value] : entry.items()) {
            if (!value.is_string())
                throw InputError(where + ": " + clipText(key, 100), "is " + describeJson(value) + ", expected a string");
            m_metadata[key] = value.get<std::string>();
        }
        return;
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
            throw InputError(where, "shape[" + std::to_string(i) + "] is " + describeJson(shape[i]) + ", expected a non-negative integer");
        t.shape.push_back(d);
    }

    const json& offsets = field(entry, "data_offsets", where);
    if (!offsets.is_array() || offsets.size() != 2)
        throw InputError(where, "data_offsets is " + describeJson(offsets) + ", expected [begin, end]");
    std::int64_t begin = 0, end = 0;
    if (!nonNegativeInt(offsets[0], begin) || !nonNegativeInt(offsets[1], end))
        throw InputError(
            where, "data_offsets must be two non-negative integers, got " + describeJson(offsets[0]) + " and " + describeJson(offsets[1]));
    t.begin = static_cast<std::uint64_t>(begin);
    t.end = static_cast<std::uint64_t>(end);
    if (t.begin > t.end) throw InputError(where, offsetsText(t.begin, t.end) + ": begin is after end");
    if (t.end > dataSize)
        throw InputError(
            where, "truncated: " + offsetsText(t.begin, t.end) + " run past the end of the data (" + std::to_string(dataSize) + " bytes)");

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

const TensorInfo* SafetensorsFile::find(std::string_view name) const {
    const auto it =
        std::lower_bound(m_byName.begin(), m_byName.end(), name, [&](std::size_t i, std::string_view n) { return m_tensors[i].name < n; });
    return it != m_byName.end() && m_tensors[*it].name == name ? &m_tensors[*it] : nullptr;
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

void SafetensorsFile::populate(const TensorInfo& tensor) const {
    if (m_mapping) m_mapping->populate(m_dataStart + tensor.begin, tensor.end - tensor.begin);
}

void SafetensorsFile::release(const TensorInfo& tensor) const {
    if (m_mapping) m_mapping->release(m_dataStart + tensor.begin, tensor.end - tensor.begin);
}

bool SafetensorsFile::changed() const { return m_mapping && m_mapping->changed(); }

void SafetensorsFile::checkUnchanged() const {
    if (m_mapping) m_mapping->checkUnchanged();
}

}  // namespace attnviz::core
