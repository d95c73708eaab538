#include "app/fonts/shown_text.hpp"

#include "core/text/tokenizer.hpp"

#include <fribidi.h>

#include <cstdio>
#include <vector>

namespace attnviz::fonts {

namespace {

bool isPrivateUse(char32_t cp) { return (cp >= 0xE000 && cp <= 0xF8FF) || cp >= 0xF0000; }

// Scripts whose letters change shape or order in ways only a shaping engine does (conjuncts,
// reordered vowel signs, joining without presentation forms): drawn glyph by glyph, and said so.
bool needsShapingEngine(char32_t cp) {
    return (cp >= 0x0700 && cp <= 0x074F) ||  // Syriac
           (cp >= 0x07C0 && cp <= 0x07FF) ||  // N'Ko
           (cp >= 0x0900 && cp <= 0x0DFF) ||  // Devanagari … Sinhala
           (cp >= 0x0F00 && cp <= 0x0FFF) ||  // Tibetan
           (cp >= 0x1000 && cp <= 0x109F) ||  // Myanmar
           (cp >= 0x1780 && cp <= 0x18AF);    // Khmer, Mongolian
}

// An Arabic letter that joins its neighbours but is left in its nominal form: FriBidi had no
// presentation form for it, so the word is not joined.
bool unjoinedArabic(char32_t cp) {
    if (cp < 0x0620 || cp > 0x08FF) return false;
    const FriBidiJoiningType type = fribidi_get_joining_type(cp);
    return type == FRIBIDI_JOINING_TYPE_D || type == FRIBIDI_JOINING_TYPE_R;
}

bool isPresentationForm(char32_t cp) { return (cp >= 0xFB50 && cp <= 0xFDFF) || (cp >= 0xFE70 && cp <= 0xFEFC); }

std::string codepointName(char32_t cp) {
    char buffer[16];
    std::snprintf(buffer, sizeof buffer, "U+%04X", static_cast<unsigned>(cp));
    return buffer;
}

}  // namespace

bool needsShaping(std::string_view utf8) {
    for (char c : utf8)
        if (static_cast<unsigned char>(c) >= 0x80) return true;
    return false;
}

ShownText shownText(std::string_view utf8, const FontStack& stack) {
    ShownText out;
    std::u32string logical;
    for (std::size_t pos = 0; pos < utf8.size();) logical.push_back(core::decodeUtf8(utf8, pos));
    if (!needsShaping(utf8)) {
        out.visual = std::move(logical);
        return out;
    }

    // 1. the bidirectional algorithm and Arabic joining, as one line
    bool anyRtl = false, joinedLetters = false;
    for (char32_t cp : logical) {
        anyRtl = anyRtl || FRIBIDI_IS_RTL(fribidi_get_bidi_type(cp));
        joinedLetters = joinedLetters || fribidi_get_joining_type(cp) == FRIBIDI_JOINING_TYPE_D;
    }
    std::u32string visual = logical;
    if (anyRtl || joinedLetters) {
        std::vector<FriBidiChar> in(logical.begin(), logical.end()), result(logical.size() + 1);
        // Left to right as a whole, as the UI around it reads and as an SVG viewer lays out a label
        // (a position put before a Hebrew token stays at its left); right-to-left runs turn round.
        FriBidiParType base = FRIBIDI_PAR_LTR;
        const auto length = static_cast<FriBidiStrIndex>(in.size());
        if (fribidi_log2vis(in.data(), length, &base, result.data(), nullptr, nullptr, nullptr) != 0) {
            visual.clear();
            for (FriBidiStrIndex i = 0; i < length; ++i)
                if (result[static_cast<std::size_t>(i)] != FRIBIDI_CHAR_FILL) visual.push_back(result[static_cast<std::size_t>(i)]);
        }
    }
    out.rightToLeft = anyRtl;

    // 2. what the faces cannot draw, and what is drawn without the shaping it needs
    for (char32_t& cp : visual) {
        if (isPresentationForm(cp)) out.joined = true;
        if (needsShapingEngine(cp) || unjoinedArabic(cp)) out.unshaped = true;
        if (cp < 0x20 || cp == 0x7F) continue;  // the callers escaped control characters before
        if (isPrivateUse(cp) || !stack.find(cp).found()) {
            if (out.noGlyph.find(cp) == std::u32string::npos) out.noGlyph.push_back(cp);
            cp = kNoGlyphBox;
        }
    }
    out.visual = std::move(visual);
    return out;
}

std::string shownNotes(const ShownText& shown) {
    std::string notes;
    const auto line = [&notes](const std::string& text) { notes += (notes.empty() ? "" : "\n") + text; };
    if (shown.rightToLeft) line("right to left: shown in visual order");
    if (shown.joined) line("Arabic letters shown joined");
    if (shown.unshaped) line("shown unshaped: this script's letters need shaping that attnviz does not do");
    if (!shown.noGlyph.empty()) {
        std::string codes;
        const std::size_t shownCount = std::min<std::size_t>(shown.noGlyph.size(), 8);
        for (std::size_t i = 0; i < shownCount; ++i) codes += (i ? ", " : "") + codepointName(shown.noGlyph[i]);
        if (shown.noGlyph.size() > shownCount) codes += ", …";
        std::string what =
            "\u25A1 = " + codes + ": no installed font has " + (shown.noGlyph.size() == 1 ? "this character" : "these characters");
        const std::vector<std::string> packages = packagesFor(shown.noGlyph);
        if (!packages.empty()) what += " (install " + packages.front() + ")";
        line(what);
    }
    return notes;
}

}  // namespace attnviz::fonts
