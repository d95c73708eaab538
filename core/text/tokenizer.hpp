// Sentence -> tokens. UTF-8 safe: invalid bytes become U+FFFD, combining marks stay
// with the character they modify.
#pragma once

#include "core/base/utf8.hpp"  // decodeUtf8, appendUtf8, sanitizeUtf8: the repair tokens are made with

#include <string>
#include <string_view>
#include <vector>

namespace attnviz::core {

enum class Tokenizer { Word, Char };

// Word level: split on white space; punctuation becomes a token of its own
// ("mat." -> "mat", "."). Char level: one token per character, spaces included
// (seed 000 §39.5 tokenises "the cat sat on the mat" into 22 characters).
std::vector<std::string> tokenize(std::string_view sentence, Tokenizer kind);

// A token as a label: valid UTF-8, and a token of only white space (character-level tokens)
// shown as visible symbols: ⇥ for a tab, ↵ for a line break (\n \r \v \f U+2028 U+2029), ␣ for
// any other space (' ', U+00A0, U+3000, …).
std::string visibleToken(std::string_view token);

const char* tokenizerName(Tokenizer kind);

// Whether a token (or its label) is Unicode punctuation alone (general category P), white space
// around it aside, and the marks labels and tokenizers write for a space (␣, ▁, Ġ): ".", " ,",
// "▁!", "...", "」"; not "a.", "␣" or "".
bool isPunctuation(std::string_view token);

}  // namespace attnviz::core
