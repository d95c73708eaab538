#include "core/base/json_text.hpp"

#include "core/base/error.hpp"
#include "core/base/format.hpp"
#include "core/base/utf8.hpp"

#include <nlohmann/json.hpp>

namespace attnviz::core {

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

}  // namespace attnviz::core
