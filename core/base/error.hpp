// Input errors carry where the problem is (file, field, flag) and what it is.
//
// An error line never grows with the input: a value in a message is quoted clipped
// (quoteValue), a JSON value is described by its type and size (describeJson in
// core/json_text.hpp), and as a last guard every InputError clips its place and its text to a
// few hundred bytes on one line, whatever a caller put in.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace attnviz::core {

// At most `maxBytes` bytes of `text`, cut at a character boundary (never inside a UTF-8
// sequence), followed by "… (N bytes)" when anything was cut.
inline std::string clipText(std::string_view text, std::size_t maxBytes) {
    if (text.size() <= maxBytes) return std::string(text);
    std::size_t cut = maxBytes;
    // back off continuation bytes (10xxxxxx) so the cut falls before a character's first byte
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
    return std::string(text.substr(0, cut)) + "… (" + std::to_string(text.size()) + " bytes)";
}

// A place for a message: a long one keeps its start (the file) and its end (the field), with
// "…" between, each end cut at a character boundary.
inline std::string clipPlace(std::string_view place, std::size_t maxBytes) {
    if (place.size() <= maxBytes) return std::string(place);
    std::size_t head = maxBytes / 2, tail = place.size() - (maxBytes - head);
    while (head > 0 && (static_cast<unsigned char>(place[head]) & 0xC0) == 0x80) --head;
    while (tail < place.size() && (static_cast<unsigned char>(place[tail]) & 0xC0) == 0x80) ++tail;
    return std::string(place.substr(0, head)) + "…" + std::string(place.substr(tail));
}

// A value for a message: 'value', clipped to 40 bytes.
inline std::string quoteValue(std::string_view value) { return "'" + clipText(value, 40) + "'"; }

// `text` on one line: a control character (a newline in a key, a tab in a value) is written as
// an escape, \n, \r, \t or \xNN, so that an error stays one line.
inline std::string oneLine(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (const char c : text) {
        const auto u = static_cast<unsigned char>(c);
        if (u >= 0x20 && u != 0x7F) {
            out += c;
            continue;
        }
        static constexpr char kHex[] = "0123456789ABCDEF";
        if (c == '\n') out += "\\n";
        else if (c == '\r') out += "\\r";
        else if (c == '\t') out += "\\t";
        else out += std::string("\\x") + kHex[u >> 4] + kHex[u & 15];
    }
    return out;
}

class InputError : public std::runtime_error {
public:
    static constexpr std::size_t kMaxWhere = 240, kMaxWhat = 400;

    InputError(std::string_view where, std::string_view what)
        : std::runtime_error(clipText(oneLine(what), kMaxWhat)), m_where(clipPlace(oneLine(where), kMaxWhere)) {}

    const std::string& where() const { return m_where; }
    // "<where>: <what>", or just "<what>" when no place is known.
    std::string message() const { return m_where.empty() ? what() : m_where + ": " + what(); }

    // Prefix the place, e.g. a file name in front of a field name.
    InputError within(const std::string& outer) const { return InputError(m_where.empty() ? outer : outer + ": " + m_where, what()); }

private:
    std::string m_where;
};

}  // namespace attnviz::core
