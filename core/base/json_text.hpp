// JSON values in messages: described by their type and size, never serialised (a value nested
// 60,000 deep would overflow the stack in dump(), and a million-element one would fill the line).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <string>

namespace attnviz::core {

// "an integer", "a number", "a string", "an object", "an array", "a boolean", "null".
std::string typeName(const nlohmann::json& v);
// What fits in a line: "1.5", "true", "null", "the text 'abc'" (clipped), "an array of 3 items",
// "an object of 2 keys".
std::string describeJson(const nlohmann::json& v);

}  // namespace attnviz::core
