#include "core/text/tokenizer.hpp"

#include <unicode/uchar.h>

namespace attnviz::core {
namespace {

bool isSpace(char32_t cp) {
    return cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r' || cp == '\v' || cp == '\f' || cp == 0x00A0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

bool isPunct(char32_t cp) {
    if (cp < 0x80) {
        return (cp >= 0x21 && cp <= 0x2F) || (cp >= 0x3A && cp <= 0x40) || (cp >= 0x5B && cp <= 0x60) || (cp >= 0x7B && cp <= 0x7E);
    }
    return cp == 0x00A1 || cp == 0x00AB || cp == 0x00BB || cp == 0x00BF ||  // ¡ « » ¿
           (cp >= 0x2010 && cp <= 0x2027) ||                                // dashes, quotes, …
           (cp >= 0x2030 && cp <= 0x205E) || (cp >= 0x3001 && cp <= 0x3003) || (cp >= 0xFF01 && cp <= 0xFF0F);
}

// Marks that belong to the previous character: combining diacritics, variation
// selectors, zero-width joiner (emoji sequences), skin-tone modifiers.
bool isExtender(char32_t cp) {
    return (cp >= 0x0300 && cp <= 0x036F) || (cp >= 0x1AB0 && cp <= 0x1AFF) || (cp >= 0x1DC0 && cp <= 0x1DFF) ||
           (cp >= 0x20D0 && cp <= 0x20FF) || (cp >= 0xFE00 && cp <= 0xFE0F) || (cp >= 0xFE20 && cp <= 0xFE2F) || cp == 0x200D ||
           (cp >= 0x1F3FB && cp <= 0x1F3FF) || (cp >= 0xE0100 && cp <= 0xE01EF);
}

}  // namespace

std::vector<std::string> tokenize(std::string_view sentence, Tokenizer kind) {
    std::vector<std::string> tokens;
    std::string word;
    const auto flushWord = [&] {
        if (!word.empty()) tokens.push_back(std::move(word));
        word.clear();
    };
    for (std::size_t pos = 0; pos < sentence.size();) {
        const char32_t cp = decodeUtf8(sentence, pos);
        if (kind == Tokenizer::Char) {
            if (isExtender(cp) && !tokens.empty()) {
                appendUtf8(tokens.back(), cp);
            } else {
                tokens.emplace_back();
                appendUtf8(tokens.back(), cp);
            }
            continue;
        }
        // An apostrophe between letters belongs to the word: "didn't", "O'Brien", "rock’n’roll";
        // a quote at a word's edge ('so') is a token of its own.
        bool inWord = false;
        if ((cp == U'\'' || cp == U'\u2019') && !word.empty() && pos < sentence.size()) {
            std::size_t next = pos;
            const char32_t after = decodeUtf8(sentence, next);
            inWord = !isSpace(after) && !isPunct(after);
        }
        if (!inWord && isSpace(cp)) {
            flushWord();
        } else if (!inWord && isPunct(cp)) {
            flushWord();
            tokens.emplace_back();
            appendUtf8(tokens.back(), cp);
        } else {
            appendUtf8(word, cp);
        }
    }
    flushWord();
    return tokens;
}

std::string visibleToken(std::string_view token) {
    std::string text = sanitizeUtf8(token);
    // Every white space character isSpace knows, not just ASCII: a token of only U+00A0 or
    // '\v' would otherwise be a blank label.
    std::string shown;
    for (std::size_t pos = 0; pos < text.size();) {
        const char32_t cp = decodeUtf8(text, pos);
        if (!isSpace(cp)) return text;
        const bool lineBreak = cp == '\n' || cp == '\r' || cp == '\v' || cp == '\f' || cp == 0x2028 || cp == 0x2029;
        shown += cp == '\t' ? "\u21E5" : lineBreak ? "\u21B5" : "\u2423";
    }
    return shown;
}

const char* tokenizerName(Tokenizer kind) { return kind == Tokenizer::Word ? "word" : "char"; }

bool isPunctuation(std::string_view token) {
    bool any = false;
    for (std::size_t pos = 0; pos < token.size();) {
        const char32_t cp = decodeUtf8(token, pos);
        // a space as labels (␣), SentencePiece (▁) and GPT-2's byte table (Ġ) write it
        if (u_isUWhiteSpace(static_cast<UChar32>(cp)) != 0 || cp == 0x2423 || cp == 0x2581 || cp == 0x0120) continue;
        if (u_ispunct(static_cast<UChar32>(cp)) == 0) return false;
        any = true;
    }
    return any;
}

}  // namespace attnviz::core
