// UTF-8 as attnviz reads it: a code point at a time, and a byte that is not part of a whole
// character (a Latin-1 'é', half a sequence, an overlong form, a surrogate, past U+10FFFF)
// decoded as U+FFFD, one a byte. The one repair used wherever text is drawn or written as JSON.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace attnviz::core {

// Decode one code point at text[pos]; advances pos. Invalid bytes decode to U+FFFD.
char32_t decodeUtf8(std::string_view text, std::size_t& pos);
void appendUtf8(std::string& out, char32_t cp);

// Replace invalid UTF-8 sequences with U+FFFD so every label can be drawn.
std::string sanitizeUtf8(std::string_view text);

// The offset of the first byte that is not valid UTF-8, or npos (a U+FFFD in the text is valid).
std::size_t firstInvalidUtf8(std::string_view text);

}  // namespace attnviz::core
