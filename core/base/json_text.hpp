// JSON text: values in messages, and the text of every JSON file attnviz writes.
//
// Messages: values are described by their type and size, never serialised (a value nested
// 60,000 deep would overflow the stack in dump(), and a million-element one would fill the line).
//
// Files: JSON is UTF-8, and nlohmann's dump() throws on anything else, while a sentence from the
// command line or a folder's name is bytes. So the JSON attnviz writes is always valid UTF-8:
// a byte that is not part of a whole character is written as U+FFFD (sanitizeUtf8, the repair
// labels are drawn with). Every writer goes through dumpJson or jsonString.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <string_view>

namespace attnviz::core {

// "an integer", "a number", "a string", "an object", "an array", "a boolean", "null".
std::string typeName(const nlohmann::json& v);
// What fits in a line: "1.5", "true", "null", "the text 'abc'" (clipped), "an array of 3 items",
// "an object of 2 keys".
std::string describeJson(const nlohmann::json& v);

// `j` as compact JSON text; a string or key in it that is not valid UTF-8 is written repaired.
// Never throws on text.
std::string dumpJson(const nlohmann::json& j);
// `text` as a JSON string, quotes included, repaired: "\"caf\uFFFD\"" for "caf\xC3".
std::string jsonString(std::string_view text);

}  // namespace attnviz::core
