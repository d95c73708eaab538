#include "core/base/json_text.hpp"

#include "core/base/error.hpp"
#include "core/base/format.hpp"
#include "core/base/utf8.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace attnviz::core {

nlohmann::json parseJson(std::string_view text, const std::string& where, bool allowExceptions) {
    using json = nlohmann::json;
    const json::parser_callback_t bounded = [&where](int depth, json::parse_event_t event, json&) {
        if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) && depth >= kMaxJsonDepth)
            throw InputError(where, "nested deeper than " + std::to_string(kMaxJsonDepth) +
                                        " levels of objects and lists; no file attnviz reads nests so deep");
        return true;
    };
    return json::parse(text.begin(), text.end(), bounded, allowExceptions);
}

std::string typeName(const nlohmann::json& v) {
    if (v.is_number_integer() || v.is_number_unsigned()) return "an integer";
    if (v.is_number()) return "a number";
    if (v.is_null()) return "null";
    if (v.is_object() || v.is_array()) return std::string("an ") + v.type_name();
    return std::string("a ") + v.type_name();
}

std::string describeJson(const nlohmann::json& v) {
    if (v.is_number_unsigned()) return std::to_string(v.get<std::uint64_t>());
    if (v.is_number_integer()) return std::to_string(v.get<std::int64_t>());
    if (v.is_number()) return formatNumber(v.get<double>());
    if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
    if (v.is_string()) return "the text " + quoteValue(v.get_ref<const std::string&>());
    if (v.is_array()) return "an array of " + std::to_string(v.size()) + (v.size() == 1 ? " item" : " items");
    if (v.is_object()) return "an object of " + std::to_string(v.size()) + (v.size() == 1 ? " key" : " keys");
    return typeName(v);
}

namespace {

using nlohmann::json;

// A copy of `j` with every string and key repaired (two keys that repair alike: the last wins).
json repaired(const json& j) {
    if (j.is_string()) return sanitizeUtf8(j.get_ref<const std::string&>());
    if (j.is_array()) {
        json out = json::array();
        for (const json& v : j) out.push_back(repaired(v));
        return out;
    }
    if (j.is_object()) {
        json out = json::object();
        for (const auto& item : j.items()) out[sanitizeUtf8(item.key())] = repaired(item.value());
        return out;
    }
    return j;
}

bool isValidUtf8(std::string_view text) { return firstInvalidUtf8(text) == std::string_view::npos; }

int hexDigit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// The bytes of `bytes` (at `field`), which must repair to `text` (the value of `textField`).
std::string bytesOf(const std::string& field, const std::string& textField, const std::string& text, const json& bytes) {
    if (!bytes.is_string()) throw InputError(field, "expected a string, got " + typeName(bytes));
    const auto& hex = bytes.get_ref<const std::string&>();
    std::string out;
    out.reserve(hex.size() / 2);
    for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
        const int hi = hexDigit(hex[i]), lo = hexDigit(hex[i + 1]);
        if (hi < 0 || lo < 0) break;
        out += static_cast<char>(hi * 16 + lo);
    }
    if (out.size() * 2 != hex.size()) throw InputError(field, "expected the text's bytes as hex, two digits a byte");
    if (const std::string shown = sanitizeUtf8(out); shown != text)
        throw InputError(
            field, "these bytes are shown as " + quoteValue(shown) + ", not as the " + textField + " beside them (edit or remove one)");
    return out;
}

}  // namespace

std::string dumpJson(const json& j) {
    // Valid text, the common case, is dumped once; text that is not is repaired in a copy.
    try {
        return j.dump();
    } catch (const json::type_error& e) {
        if (e.id != 316) throw;  // 316: invalid UTF-8
    }
    return repaired(j).dump();
}

std::string jsonString(std::string_view text) { return json(sanitizeUtf8(text)).dump(); }

std::string hexBytes(std::string_view bytes) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    out.reserve(2 * bytes.size());
    for (const char c : bytes) {
        const auto u = static_cast<unsigned char>(c);
        out += kHex[u >> 4];
        out += kHex[u & 15];
    }
    return out;
}

void putText(json& object, const std::string& key, std::string_view text) {
    object[key] = sanitizeUtf8(text);
    if (!isValidUtf8(text)) object[key + "_bytes"] = hexBytes(text);
}

void putTexts(json& object, const std::string& key, const std::vector<std::string>& texts) {
    json shown = json::array();
    for (const std::string& t : texts) shown.push_back(sanitizeUtf8(t));
    object[key] = std::move(shown);
    if (std::all_of(texts.begin(), texts.end(), isValidUtf8)) return;
    json bytes = json::array();
    for (const std::string& t : texts) bytes.push_back(hexBytes(t));
    object[key + "_bytes"] = std::move(bytes);
}

std::string exactText(const std::string& key, const std::string& text, const json& bytes) {
    return bytesOf(key + "_bytes", key, text, bytes);
}

std::vector<std::string> exactTexts(const std::string& key, const std::vector<std::string>& texts, const json& bytes) {
    const std::string field = key + "_bytes";
    if (!bytes.is_array()) throw InputError(field, "expected a list of strings, got " + typeName(bytes));
    if (bytes.size() != texts.size())
        throw InputError(field, "has " + std::to_string(bytes.size()) + (bytes.size() == 1 ? " item, " : " items, ") + key + " has " +
                                    std::to_string(texts.size()) + " (one for each)");
    std::vector<std::string> out;
    out.reserve(texts.size());
    for (std::size_t i = 0; i < texts.size(); ++i) {
        const std::string at = "[" + std::to_string(i) + "]";
        out.push_back(bytesOf(field + at, key + at, texts[i], bytes[i]));
    }
    return out;
}

}  // namespace attnviz::core
