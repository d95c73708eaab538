// The fonts module, part 3: a label as it is drawn. Right-to-left runs in their visual order and
// Arabic letters in their joined forms (GNU FriBidi: the Unicode bidirectional algorithm and
// Arabic joining into the presentation forms DejaVu Sans draws), and every code point that no
// face of the stack has replaced by a box. The window and the PNG figures draw this; the SVG keeps
// the logical text, which its viewer orders and shapes itself. No ImGui.
#pragma once

#include "app/fonts/font_stack.hpp"

#include <string>
#include <string_view>

namespace attnviz::fonts {

inline constexpr char32_t kNoGlyphBox = U'\u25A1';  // □: a character no installed font draws

struct ShownText {
    std::u32string visual;     // left to right as drawn
    bool rightToLeft = false;  // had right-to-left characters, reordered
    bool joined = false;       // Arabic letters drawn in their joined forms
    bool unshaped = false;     // a script that needs shaping attnviz does not do (Indic, Syriac, …)
    std::u32string noGlyph;    // code points drawn as kNoGlyphBox, each once, in order
};

// utf8 (valid UTF-8; invalid bytes decode to U+FFFD) as drawn, one line of it, in a left-to-right
// line (a label in the UI and in a figure) (a line break is
// an ordinary character here: callers split lines first). Private-use code points are boxes too:
// the window keeps that area for its own glyphs.
ShownText shownText(std::string_view utf8, const FontStack& stack = FontStack::shared());

// True when shownText would change utf8 or find something to say: it has a character other than
// printable ASCII. The fast path of the callers.
bool needsShaping(std::string_view utf8);

// What a tooltip says about the text beyond itself, one remark per line, or "" when nothing:
// "shown right to left", "Arabic shown joined", "shown unshaped: …", "□ = U+1FAE8: no installed
// font has this character (install fonts-symbola …)".
std::string shownNotes(const ShownText& shown);

}  // namespace attnviz::fonts
