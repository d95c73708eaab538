// Sentence -> tokens. UTF-8 safe: invalid bytes become U+FFFD, combining marks stay
// with the character they modify.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace attnviz::core {

enum class Tokenizer { Word, Char };

// Word level: split on white space; punctuation becomes a token of its own
// ("mat." -> "mat", "."). Char level: one token per character, spaces included
// (seed 000 §39.5 tokenises "the cat sat on the mat" into 22 characters).
std::vector<std::string> tokenize(std::string_view sentence, Tokenizer kind);

// Replace invalid UTF-8 sequences with U+FFFD so every label can be drawn.
std::string sanitizeUtf8(std::string_view text);

// Decode one code point at text[pos]; advances pos. Invalid bytes decode to U+FFFD.
char32_t decodeUtf8(std::string_view text, std::size_t& pos);
void appendUtf8(std::string& out, char32_t cp);

// A token as a label: valid UTF-8, and a token of only white space (character-level tokens)
// shown as visible symbols: ⇥ for a tab, ↵ for a line break (\n \r \v \f U+2028 U+2029), ␣ for
// any other space (' ', U+00A0, U+3000, …).
std::string visibleToken(std::string_view token);

const char* tokenizerName(Tokenizer kind);

}  // namespace attnviz::core
