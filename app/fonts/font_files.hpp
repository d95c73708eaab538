// The fonts module, part 1: finding and loading the TrueType files that the window (font_atlas)
// and the figures (app/render) draw text with. No ImGui: the figure library links it alone.
// DejaVu Sans covers Latin, Greek and the maths symbols labels use (α τ √ Σ t₁).
#pragma once

#include <string>

namespace attnviz::fonts {

// The path of a font file such as "DejaVuSans.ttf". Looks in $ATTNVIZ_FONT_DIR (if set), then
// /usr/share/fonts/truetype/dejavu, /usr/share/fonts/TTF, then anywhere below /usr/share/fonts.
// Throws core::InputError("fonts", "<name> not found; install fonts-dejavu-core").
std::string findFont(const std::string& fileName);

// The bytes of that file, read once per process and kept (stb_truetype reads glyphs straight
// from them, so they must outlive every font object). Thread-safe.
const std::string& fontBytes(const std::string& fileName);

}  // namespace attnviz::fonts
