// JSON text: values in messages, and the text of every JSON file attnviz writes.
//
// Messages: values are described by their type and size, never serialised (a value nested
// 60,000 deep would overflow the stack in dump(), and a million-element one would fill the line).
//
// Files: JSON is UTF-8, and nlohmann's dump() throws on anything else, while a sentence from the
// command line or a folder's name is bytes. So the JSON attnviz writes is always valid UTF-8:
// a byte that is not part of a whole character is written as U+FFFD (sanitizeUtf8, the repair
// labels are drawn with). Where a file must give the same input back (a saved scenario, the
// session), the exact bytes go beside the text as "<key>_bytes", two hex digits a byte, and the
// reader prefers them. Every writer goes through dumpJson or jsonString, and a scenario's text
// through putText and exactText.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace attnviz::core {

// Reading: every JSON file attnviz reads into a tree (config.json, the shards' index,
// tokenizer.json, a lesson, the session) is parsed here, its nesting bounded while it is parsed,
// before any deeper value is built: the deepest file attnviz reads nests under 10, and a tree
// nested a million deep costs memory and stack in every reader that walks it.
inline constexpr int kMaxJsonDepth = 64;
// `text` as a tree. Throws InputError(where, "nested deeper than 64 levels …") past
// kMaxJsonDepth; a syntax error throws nlohmann's parse_error, or with allowExceptions = false
// gives a discarded value, as json::parse does.
nlohmann::json parseJson(std::string_view text, const std::string& where, bool allowExceptions = true);

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

// Bytes as hex, two lower-case digits a byte ("\xFF\xFE" -> "fffe").
std::string hexBytes(std::string_view bytes);

// object[key] = `text` repaired, and when it is not valid UTF-8, object[key + "_bytes"] = its
// bytes as hex.
void putText(nlohmann::json& object, const std::string& key, std::string_view text);
// A list: object[key] = every text repaired, and when any is not valid UTF-8,
// object[key + "_bytes"] = every text's bytes as hex, in the same order.
void putTexts(nlohmann::json& object, const std::string& key, const std::vector<std::string>& texts);

// The reading side: `text` was read from `key`, `bytes` is the value of key + "_bytes". Returns
// the bytes; throws InputError(key + "_bytes", …) when they are not a string of hex pairs, or
// when repaired they are not `text` (a file edited in one place and not the other).
std::string exactText(const std::string& key, const std::string& text, const nlohmann::json& bytes);
std::vector<std::string> exactTexts(const std::string& key, const std::vector<std::string>& texts, const nlohmann::json& bytes);

}  // namespace attnviz::core
