#include "core/base/json_text.hpp"

#include "core/base/error.hpp"
#include "core/base/format.hpp"

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

}  // namespace attnviz::core
