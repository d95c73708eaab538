#include "app/widgets/text.hpp"

#include "app/fonts/font_atlas.hpp"
#include "app/fonts/shown_text.hpp"

#include "core/text/tokenizer.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace attnviz::widgets {
namespace {

constexpr char32_t kReplacement = 0xFFFD;
constexpr char kEllipsis[] = "\u2026";

bool isContinuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// Marks drawn on the letter before them (ImGui draws each with no advance of its own).
bool isCombining(char32_t cp) {
    return (cp >= 0x0300 && cp <= 0x036F) || (cp >= 0x0483 && cp <= 0x0489) || (cp >= 0x0591 && cp <= 0x05BD) || cp == 0x05BF ||
           cp == 0x05C1 || cp == 0x05C2 || cp == 0x05C4 || cp == 0x05C5 || cp == 0x05C7 || (cp >= 0x0610 && cp <= 0x061A) ||
           (cp >= 0x064B && cp <= 0x065F) || cp == 0x0670 || (cp >= 0x06D6 && cp <= 0x06DC) || (cp >= 0x06DF && cp <= 0x06E4) ||
           (cp >= 0x0900 && cp <= 0x0903) || (cp >= 0x093A && cp <= 0x094F) || cp == 0x0E31 || (cp >= 0x0E34 && cp <= 0x0E3A) ||
           (cp >= 0x0E47 && cp <= 0x0E4E) || (cp >= 0x1AB0 && cp <= 0x1AFF) || (cp >= 0x1DC0 && cp <= 0x1DFF) ||
           (cp >= 0x20D0 && cp <= 0x20FF) || cp == 0x3099 || cp == 0x309A || (cp >= 0xFE20 && cp <= 0xFE2F);
}

// Joiners and variation selectors: part of the character before them, nothing alone.
bool isJoiner(char32_t cp) { return cp == 0x200C || cp == 0x200D || (cp >= 0xFE00 && cp <= 0xFE0F) || (cp >= 0xE0100 && cp <= 0xE01EF); }

// Characters that draw nothing or steer other characters: C1 controls, soft hyphen, zero-width
// spaces, bidi controls (which could make a label read as something it is not), tags.
bool isInvisible(char32_t cp) {
    return (cp >= 0x80 && cp <= 0x9F) || cp == 0x00AD || cp == 0x061C || cp == 0x115F || cp == 0x1160 || cp == 0x17B4 || cp == 0x17B5 ||
           cp == 0x180E || (cp >= 0x200B && cp <= 0x200F) || (cp >= 0x2028 && cp <= 0x202E) || (cp >= 0x2060 && cp <= 0x206F) ||
           cp == 0x3164 || cp == 0xFEFF || cp == 0xFFA0 || (cp >= 0xFFF0 && cp <= 0xFFF8) || cp == 0xFFFE || cp == 0xFFFF ||
           (cp >= 0xE0000 && cp <= 0xE007F);
}

bool isBlank(char32_t cp) {
    return cp == ' ' || cp == '\t' || cp == '\n' || cp == 0x00A0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x202F ||
           cp == 0x205F || cp == 0x3000;
}

void appendEscape(std::string& out, const char* format, unsigned value) {
    char buf[16];
    std::snprintf(buf, sizeof buf, format, value);
    out += buf;
}

// Appends how one code point (or one invalid byte) is shown; `base` says whether a letter came
// before it on this line and is updated. Returns whether the unit is a mark of that letter.
bool appendShown(std::string& out, char32_t cp, bool invalidByte, unsigned char byte, bool multiline, bool& base) {
    if (invalidByte) {
        appendEscape(out, "\\x%02X", byte);
    } else if (cp < 0x20 || cp == 0x7F) {
        if (multiline && (cp == '\n' || cp == '\t')) {
            out += static_cast<char>(cp);
            base = false;
            return false;
        }
        if (cp == '\t') out += "\\t";
        else if (cp == '\n') out += "\\n";
        else if (cp == '\r') out += "\\r";
        else appendEscape(out, "\\x%02X", static_cast<unsigned>(cp));
    } else if (isCombining(cp)) {
        const bool mark = base;
        if (!base) core::appendUtf8(out, 0x25CC);  // ◌: a mark needs something to sit on
        core::appendUtf8(out, cp);
        base = true;
        return mark;
    } else if (isJoiner(cp) && base) {
        core::appendUtf8(out, cp);
        return true;
    } else if (isInvisible(cp) || isJoiner(cp)) {
        appendEscape(out, "<U+%04X>", static_cast<unsigned>(cp));
    } else {
        core::appendUtf8(out, cp);
    }
    base = true;
    return false;
}

// Blank text (spaces only) as visible symbols: ␣, ⇥ for a tab, ↵ for a line break.
void showBlanks(std::string& text) {
    const bool dots = text.size() >= 3 && text.compare(text.size() - 3, 3, kEllipsis) == 0;
    const std::string_view body(text.data(), text.size() - (dots ? 3 : 0));
    if (body.empty()) return;
    for (std::size_t pos = 0; pos < body.size();)
        if (!isBlank(core::decodeUtf8(body, pos))) return;
    std::string shown;
    for (std::size_t pos = 0; pos < body.size();) {
        const char32_t cp = core::decodeUtf8(body, pos);
        shown += cp == '\t' ? "\u21E5" : cp == '\n' ? "\u21B5" : "\u2423";
    }
    text = shown + (dots ? kEllipsis : "");
}

std::string thousands(std::size_t n) {
    std::string digits = std::to_string(n), out;
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return out;
}

float textWidth(std::string_view text) { return ImGui::CalcTextSize(text.data(), text.data() + text.size()).x; }

void pieces(std::string_view shown) {
    for (std::string_view piece : splitPieces(shown)) ImGui::TextUnformatted(piece.data(), piece.data() + piece.size());
}

}  // namespace

std::size_t codepointCount(std::string_view text) {
    std::size_t n = 0;
    for (std::size_t pos = 0; pos < text.size(); ++n) core::decodeUtf8(text, pos);
    return n;
}

Clipped clipText(std::string_view text, std::size_t maxGlyphs, bool multiline) {
    maxGlyphs = std::max<std::size_t>(maxGlyphs, 1);
    struct Unit {
        std::size_t end, glyphs;  // in the output, after this unit
        bool mark;
    };
    // 1. show code points until one more would not fit (so at most maxGlyphs + one unit)
    Clipped r;
    std::vector<Unit> units;
    std::size_t glyphs = 0, pos = 0;
    bool base = false;
    while (pos < text.size() && glyphs <= maxGlyphs) {
        const std::size_t start = pos;
        const char32_t cp = core::decodeUtf8(text, pos);
        const std::size_t before = r.text.size();
        const bool invalid = cp == kReplacement && pos - start == 1;
        const bool mark = appendShown(r.text, cp, invalid, static_cast<unsigned char>(text[start]), multiline, base);
        for (std::size_t i = before; i < r.text.size(); ++i) glyphs += isContinuation(r.text[i]) ? 0 : 1;
        units.push_back({r.text.size(), glyphs, mark});
    }
    // 2. too long: keep what fits with the "…", and keep a letter with its marks
    if (glyphs > maxGlyphs) {
        std::size_t keep = 0;
        while (keep < units.size() && units[keep].glyphs <= maxGlyphs - 1) ++keep;
        std::size_t whole = keep;
        while (whole > 0 && whole < units.size() && units[whole].mark) --whole;
        if (whole > 0) keep = whole;  // else one letter with more marks than fit: cut among them
        r.text.resize(keep ? units[keep - 1].end : 0);
        r.text += kEllipsis;
        r.cut = true;
    }
    showBlanks(r.text);
    return r;
}

std::string clipLabel(std::string_view text, std::size_t maxGlyphs) { return app::atlasText(clipText(text, maxGlyphs, false).text); }

std::string tooltipBody(std::string_view text, std::size_t maxGlyphs) {
    Clipped c = clipText(text, maxGlyphs, true);
    c.text = app::atlasText(c.text);
    if (c.cut) c.text += " (" + thousands(codepointCount(text)) + " characters)";
    return c.text;
}

std::vector<std::string_view> splitPieces(std::string_view text, std::size_t maxBytes) {
    maxBytes = std::max<std::size_t>(maxBytes, 4);
    std::vector<std::string_view> out;
    std::size_t start = 0;
    while (start < text.size()) {
        if (text.size() - start <= maxBytes) {
            out.push_back(text.substr(start));
            break;
        }
        const std::string_view window = text.substr(start, maxBytes);
        std::size_t at = window.rfind('\n');
        if (at == std::string_view::npos || at == 0) at = window.rfind(' ');
        if (at != std::string_view::npos && at > 0) {  // a line break or space ends the piece
            out.push_back(window.substr(0, at));
            start += at + 1;
            continue;
        }
        // No space: at a UTF-8 boundary (a lead byte at most 3 back), before a letter, not a mark.
        std::size_t cut = start + maxBytes;
        for (int back = 0; back < 3 && cut > start + 1 && isContinuation(text[cut]); ++back) --cut;
        if (isContinuation(text[cut])) cut = start + maxBytes;  // not UTF-8 here anyway
        for (int steps = 0; steps < 8 && cut > start + 1; ++steps) {
            std::size_t p = cut;
            const char32_t cp = core::decodeUtf8(text, p);
            if (!isCombining(cp) && !isJoiner(cp)) break;
            std::size_t prev = cut - 1;
            while (prev > start && isContinuation(text[prev]) && cut - prev < 4) --prev;
            cut = prev;
        }
        out.push_back(text.substr(start, cut - start));
        start = cut;
    }
    return out;
}

std::string fitLabel(std::string_view text, float maxWidth, std::size_t maxGlyphs) {
    return app::atlasText(fitLogical(text, maxWidth, maxGlyphs));
}

std::string fitLogical(std::string_view text, float maxWidth, std::size_t maxGlyphs) {
    // Cut in logical order (a right-to-left word loses its end, drawn at its left), measured shaped.
    const std::string shown = clipText(text, maxGlyphs, false).text;
    if (textWidth(app::atlasText(shown)) <= maxWidth) return shown;
    // Where a prefix may end: before every letter (never between a letter and its marks).
    std::vector<std::size_t> ends;
    for (std::size_t pos = 0; pos < shown.size();) {
        const std::size_t start = pos;
        const char32_t cp = core::decodeUtf8(shown, pos);
        if (!isCombining(cp) && !isJoiner(cp)) ends.push_back(start);
    }
    // The longest prefix that fits with its "…" (widths grow with the prefix: no kerning here).
    std::size_t lo = 0, hi = ends.size();  // ends[lo] fits (the empty prefix: "…" alone)
    while (hi - lo > 1) {
        const std::size_t mid = (lo + hi) / 2;
        if (textWidth(app::atlasText(shown.substr(0, ends[mid]) + kEllipsis)) <= maxWidth) lo = mid;
        else hi = mid;
    }
    return shown.substr(0, ends.empty() ? 0 : ends[lo]) + kEllipsis;
}

namespace {

// `text` with a line break for the space before each word that would pass `width`: Dear ImGui
// also breaks after "." and ",", which splits a number such as 0.125 or 32,768 across two lines.
// A word wider than the whole width is left to Dear ImGui's wrapping.
std::string breakAtSpaces(std::string_view text, float width) {
    std::string out;
    out.reserve(text.size());
    float line = 0.0f;
    const float space = ImGui::CalcTextSize(" ").x;
    for (std::size_t pos = 0; pos <= text.size();) {
        const std::size_t end = std::min(text.find_first_of(" \n", pos), text.size());
        const std::string_view word = text.substr(pos, end - pos);
        const float w = ImGui::CalcTextSize(word.data(), word.data() + word.size()).x;
        if (pos > 0 && out.back() == ' ' && line + w > width && line > 0.0f) {
            out.back() = '\n';
            line = 0.0f;
        }
        out += word;
        line += w + space;
        if (end == text.size()) break;
        out += text[end];
        if (text[end] == '\n') line = 0.0f;
        pos = end + 1;
    }
    return out;
}

}  // namespace

void shownWrapped(std::string_view shown, const ImVec4* colour, float wrapWidth) {
    if (colour) ImGui::PushStyleColor(ImGuiCol_Text, *colour);
    ImGui::PushTextWrapPos(wrapWidth > 0.0f ? ImGui::GetCursorPosX() + wrapWidth : 0.0f);
    // only in a column of a set width, where a number would be split: elsewhere Dear ImGui's
    // breaks pack the lines tighter, as the layouts that fit were made for
    const auto number = [](std::string_view t) {
        for (std::size_t i = 1; i + 1 < t.size(); ++i)
            if ((t[i] == '.' || t[i] == ',') && std::isdigit(static_cast<unsigned char>(t[i - 1])) != 0 &&
                std::isdigit(static_cast<unsigned char>(t[i + 1])) != 0)
                return true;
        return false;
    };
    if (wrapWidth > 0.0f && number(shown) && textWidth(shown) > wrapWidth) {
        pieces(breakAtSpaces(shown, wrapWidth));
    } else {
        pieces(shown);
    }
    ImGui::PopTextWrapPos();
    if (colour) ImGui::PopStyleColor();
}

void sameLineIfFits(float width) {
    const float right = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
    if (ImGui::GetItemRectMax().x + ImGui::GetStyle().ItemSpacing.x + width <= right) ImGui::SameLine();
}

namespace {

void flow(std::string_view text, bool first, bool disabled) {
    const std::string shown = clipLabel(text);
    const float width = textWidth(shown);
    if (!first) sameLineIfFits(width);
    const float room = ImGui::GetContentRegionAvail().x;
    const std::string fitted = width <= room ? shown : fitLabel(text, room);
    if (disabled) ImGui::TextDisabled("%s", fitted.c_str());
    else ImGui::TextUnformatted(fitted.c_str());
    if (fitted != shown) hoverTooltip(text);
}

}  // namespace

std::string fitWrapped(std::string_view text, float width, float height) {
    const auto tall = [&](std::string_view t) { return ImGui::CalcTextSize(t.data(), t.data() + t.size(), false, width).y; };
    if (tall(text) <= height) return std::string(text);
    // Character starts, and the longest prefix whose wrapped text with "…" fits.
    std::vector<std::size_t> ends;
    for (std::size_t pos = 0; pos < text.size();) {
        ends.push_back(pos);
        core::decodeUtf8(text, pos);
    }
    std::size_t lo = 0, hi = ends.size();
    while (hi - lo > 1) {
        const std::size_t mid = (lo + hi) / 2;
        if (tall(std::string(text.substr(0, ends[mid])) + kEllipsis) <= height) lo = mid;
        else hi = mid;
    }
    return std::string(text.substr(0, ends.empty() ? 0 : ends[lo])) + kEllipsis;
}

void flowText(std::string_view text, bool first) { flow(text, first, false); }
void remarkIfFits(std::string_view text) {
    const std::string shown = clipLabel(text);
    const float right = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
    if (ImGui::GetItemRectMax().x + ImGui::GetStyle().ItemSpacing.x + textWidth(shown) > right) return;
    ImGui::SameLine();
    ImGui::TextDisabled("%s", shown.c_str());
}
void flowTextDisabled(std::string_view text, bool first) { flow(text, first, true); }

std::string labelWithLength(std::string_view text, std::size_t maxGlyphs) {
    Clipped c = clipText(text, maxGlyphs, false);
    if (c.cut) c.text += " (" + thousands(codepointCount(text)) + " characters)";
    return c.text;
}

std::string escapeIdMarks(std::string shown) {
    for (std::size_t at = shown.find("##"); at != std::string::npos; at = shown.find("##", at + 4)) shown.insert(at + 1, "\u2060");
    return shown;
}

void label(std::string_view text, std::size_t maxGlyphs) {
    const std::string shown = clipLabel(text, maxGlyphs);
    ImGui::TextUnformatted(shown.c_str(), shown.c_str() + shown.size());
}

void labelColored(const ImVec4& colour, std::string_view text, std::size_t maxGlyphs) {
    ImGui::PushStyleColor(ImGuiCol_Text, colour);
    label(text, maxGlyphs);
    ImGui::PopStyleColor();
}

bool wrappedText(std::string_view text, std::size_t maxGlyphs, float wrapWidth) {
    Clipped shown = clipText(text, maxGlyphs, true);
    shown.text = app::atlasText(shown.text);
    if (shown.cut) shown.text += " (" + thousands(codepointCount(text)) + " characters)";
    shownWrapped(shown.text, nullptr, wrapWidth);
    return shown.cut;
}

bool wrappedTextColored(const ImVec4& colour, std::string_view text, std::size_t maxGlyphs, float wrapWidth) {
    ImGui::PushStyleColor(ImGuiCol_Text, colour);
    const bool cut = wrappedText(text, maxGlyphs, wrapWidth);
    ImGui::PopStyleColor();
    return cut;
}

bool button(std::string_view shown, const std::string& id) {
    const ImVec2 pad = ImGui::GetStyle().FramePadding;
    const ImVec2 size = ImGui::CalcTextSize(shown.data(), shown.data() + shown.size());
    const bool pressed = ImGui::Button(("##" + id).c_str(), ImVec2(size.x + pad.x * 2.0f, size.y + pad.y * 2.0f));
    const ImVec2 at = ImGui::GetItemRectMin();
    ImGui::GetWindowDrawList()->AddText(ImVec2(at.x + pad.x, at.y + pad.y), ImGui::GetColorU32(ImGuiCol_Text), shown.data(),
                                        shown.data() + shown.size());
    return pressed;
}

void showTooltip(std::string_view text, std::size_t maxGlyphs) {
    ImGui::BeginTooltip();
    ImGui::PushTextWrapPos(ImGui::GetFontSize() * 28.0f);
    pieces(tooltipBody(text, maxGlyphs));
    // How the text was drawn, when it was not as stored: reordered, joined, unshaped, boxes.
    if (fonts::needsShaping(text)) {
        const std::string notes = fonts::shownNotes(fonts::shownText(clipText(text, maxGlyphs, false).text));
        if (!notes.empty()) {
            ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
            pieces(notes);
            ImGui::PopStyleColor();
        }
    }
    ImGui::PopTextWrapPos();
    ImGui::EndTooltip();
}

void hoverTooltip(std::string_view text, std::size_t maxGlyphs) {
    if (ImGui::IsItemHovered()) showTooltip(text, maxGlyphs);
}

}  // namespace attnviz::widgets
