// libFuzzer target: bytes as a sentence, tokenized at word and at character level.
// Properties (core/text/tokenizer.hpp): every token and every label is non-empty valid UTF-8;
// character tokens concatenate back to the sanitized text; word tokens are the sanitized text
// with its white space taken out, and re-tokenize to themselves; a token of only white space is
// shown with visible symbols.
#include "core/text/tokenizer.hpp"
#include "fuzz/check.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace attnviz::core;
using attnviz::fuzz::check;
using attnviz::fuzz::isValidUtf8;

std::string concat(const std::vector<std::string>& tokens, std::string_view separator = {}) {
    std::string out;
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        if (i) out += separator;
        out += tokens[i];
    }
    return out;
}

// The sanitized text without its white space, white space being what the word tokenizer
// drops: a code point that gives no word token on its own.
std::string withoutSpace(std::string_view text) {
    std::string out;
    for (std::size_t pos = 0; pos < text.size();) {
        std::string cp;
        appendUtf8(cp, decodeUtf8(text, pos));
        if (!tokenize(cp, Tokenizer::Word).empty()) out += cp;
    }
    return out;
}

void checkTokens(const std::vector<std::string>& tokens, const char* mode) {
    for (const std::string& t : tokens) {
        check(!t.empty(), "empty token", mode);
        check(isValidUtf8(t), "token is not valid UTF-8", mode);
        const std::string label = visibleToken(t);
        check(!label.empty() && isValidUtf8(label), "label is empty or not valid UTF-8", mode);
        // A label never looks blank: it has something the word tokenizer keeps.
        check(!tokenize(label, Tokenizer::Word).empty(), "label of a token is blank", label);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const std::string clean = sanitizeUtf8(text);
    check(isValidUtf8(clean), "sanitizeUtf8 gave invalid UTF-8");
    check(sanitizeUtf8(clean) == clean, "sanitizeUtf8 is not idempotent");
    check(isValidUtf8(text) == (clean == text), "sanitizeUtf8 changed valid text or kept invalid text");

    // 1. characters: nothing lost, nothing added; tokenizing the sanitized text is the same
    const auto chars = tokenize(text, Tokenizer::Char);
    checkTokens(chars, "char");
    check(concat(chars) == clean, "character tokens do not concatenate to the sanitized text");
    check(tokenize(clean, Tokenizer::Char) == chars, "character tokens of the sanitized text differ");

    // 2. words: only white space is dropped, and the tokens separated by spaces re-tokenize
    // to themselves
    const auto words = tokenize(text, Tokenizer::Word);
    checkTokens(words, "word");
    check(concat(words) == withoutSpace(text), "word tokens are not the text without its white space");
    check(tokenize(concat(words, " "), Tokenizer::Word) == words, "word tokens do not re-tokenize to themselves");
    return 0;
}
