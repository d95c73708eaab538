// Reading the fields of a Hugging Face tokenizer.json, shared by its BPE reader
// (tokenizer_json.cpp) and WordPiece's (wordpiece.cpp): a member present and not null, a flag, a
// bounded string, a step's type, an id, and the one line that names a value attnviz does not read.
// Nothing outside the text room includes it.
#pragma once

#include "core/base/error.hpp"
#include "core/base/json_text.hpp"
#include "core/text/byte_bpe_builder.hpp"
#include "core/text/byte_bpe_impl.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace attnviz::core::bpe {

using nlohmann::json;

// A tokenizer.json's text as its top-level object: a syntax error in one line naming the line and
// the column, anything but an object refused.
inline json tokenizerObject(std::string_view text, const std::string& name) {
    json j;
    try {
        j = parseJson(text, name);
    } catch (const json::exception& e) {
        malformedJson(text, name, e);
    }
    if (!j.is_object()) throw InputError(name, "expected a tokenizer object with \"model\", got " + describeJson(j));
    return j;
}

inline const json* member(const json& object, const char* key) {
    const auto it = object.find(key);
    return it == object.end() || it->is_null() ? nullptr : &*it;
}

// `where: <value> is not read (<what is>)`.
[[noreturn]] inline void notRead(const std::string& where, const json& value, const std::string& read) {
    const std::string v = value.is_string() ? "\"" + clipText(value.get<std::string>(), 40) + "\"" : describeJson(value);
    throw InputError(where, v + " is not read (" + read + ")");
}

// A field that would change the ids must be absent, null, or hold the value read.
inline void requireField(const json& object, const char* key, const json& read, const std::string& where) {
    const json* v = member(object, key);
    if (v && *v != read) notRead(where + "." + key, *v, "only " + read.dump() + " is");
}

inline bool flag(const json& object, const char* key, bool otherwise, const std::string& where) {
    const json* v = member(object, key);
    if (!v) return otherwise;
    if (!v->is_boolean()) throw InputError(where + "." + key, "expected true or false, got " + describeJson(*v));
    return v->get<bool>();
}

inline const std::string& string(const json& object, const char* key, const std::string& where) {
    const json* v = member(object, key);
    if (!v || !v->is_string()) throw InputError(where + "." + key, "expected a string, got " + (v ? describeJson(*v) : "nothing"));
    if (v->get_ref<const std::string&>().size() > kMaxTokenBytes)
        throw InputError(where + "." + key, "longer than " + std::to_string(kMaxTokenBytes) + " bytes");
    return v->get_ref<const std::string&>();
}

inline const std::string& typeOf(const json& step, const std::string& where) {
    if (!step.is_object()) throw InputError(where, "expected an object with \"type\", got " + describeJson(step));
    return string(step, "type", where);
}

inline long long integerId(const json& v, const std::string& where) {
    if (v.is_number_unsigned() && v.get<std::uint64_t>() >= bpe::kMaxTokens) throw InputError(where, idRange(describeJson(v)));
    if (v.is_number_integer()) return v.get<long long>();
    throw InputError(where, "expected an integer id, got " + describeJson(v));
}

// Each entry of a tokenizer.json's "added_tokens" list, if it has one: f(entry, its content, its
// id, where it is for messages), after the entry is checked to be an object with a string
// "content" and an integer "id".
template <class F>
void eachAddedToken(const json& tokenizer, const std::string& name, F&& f) {
    const json* list = member(tokenizer, "added_tokens");
    if (!list) return;
    if (!list->is_array()) throw InputError(name + ": added_tokens", "expected a list, got " + describeJson(*list));
    for (std::size_t i = 0; i < list->size(); ++i) {
        const std::string where = name + ": added_tokens[" + std::to_string(i) + "]";
        const json& t = (*list)[i];
        const json* content = t.is_object() ? member(t, "content") : nullptr;
        if (!content || !content->is_string() || !t.contains("id"))
            throw InputError(where, "expected an object with \"id\" and \"content\", got " + describeJson(t));
        f(t, content->get_ref<const std::string&>(), integerId(t.at("id"), where + ".id"), where);
    }
}

}  // namespace attnviz::core::bpe
