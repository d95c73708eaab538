// The fonts module, part 4: the window's ImGui font atlas. Dear ImGui 1.86's atlas is static and
// Debian builds it with 16-bit characters, so it holds a base set (Latin, Greek, Cyrillic and the
// maths signs the lessons use) and, on top, only the characters of the text on screen, each from
// the face of the stack (font_stack) that has it; it is rebuilt between frames when new ones
// arrive. Characters beyond U+FFFF (emoji) are baked into private-use slots, and atlasText writes
// them that way. The files come from font_files.
#pragma once

#include "app/widgets/text.hpp"

#include <imgui.h>

#include <cstddef>
#include <deque>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace attnviz::app {

// The faces panels draw with.
struct Fonts {
    ImFont* regular = nullptr;
    ImFont* large = nullptr;  // titles, presenter labels
    ImFont* mono = nullptr;   // matrices
};

// utf8 as ImGui must be given it to draw it right: each line in visual order with Arabic joined
// (fonts::shownText), a box for what no face has, and each character beyond U+FFFF as its
// private-use slot. Text of printable ASCII is returned as it is.
std::string atlasText(std::string_view utf8);
// utf8 with each character beyond U+FFFF (and each private-use one) as its slot, nothing else
// changed: for a text field, which ImGui edits in 16-bit characters (an emoji typed or kept there
// would become U+FFFD); unslottedText gives the characters back.
// Nothing when the slots are used up (6,400 distinct characters): the field must not edit it.
std::optional<std::string> slottedText(std::string_view utf8);
// `text` with the slots that `slotted` (the field's text before the edit) holds given back.
std::string unslottedText(std::string_view text, std::string_view slotted);
// The character a slot stands for (0 when `slot` is not one given out); the slot of `cp`.
char32_t slotCodepoint(char32_t slot);
char32_t atlasSlot(char32_t cp);

class FontSet {
public:
    // The characters above the base set that the atlas holds for the text on screen, at most
    // this many (the first ones, in the order the text gives them): 2,048 CJK characters at
    // UI scale 2.5 are about 60 MB of atlas.
    static constexpr std::size_t kMaxExtraGlyphs = 2048;
    static constexpr float kBaseSize = 16.0f;
    // The largest pixel scale glyphs are rasterised at: the base set then still packs into a
    // 4096 x 16384 texture (ImGui 1.86 aborts when its glyphs do not pack).
    static constexpr float kMaxRasterScale = 5.0f;

    // The characters of `texts` (as atlasText writes them, each clipped to `maxGlyphs`, as a
    // tooltip clips it by default) that the base set lacks, at most kMaxExtraGlyphs.
    static std::set<ImWchar> neededCharacters(const std::vector<std::string_view>& texts, std::size_t maxGlyphs = widgets::kTooltipGlyphs);
    static bool inBaseSet(char32_t cp);
    // How many extra characters fit the atlas at this pixel scale: kMaxExtraGlyphs, fewer when
    // large glyphs would not fit a 4096 x 4096 texture (118 at a raster scale of 12); and the
    // first that many of `needed`.
    static std::size_t maxExtraGlyphs(float pixelScale);
    static std::set<ImWchar> capped(const std::set<ImWchar>& needed, float pixelScale);

    // True when the atlas must be rebuilt for this pixel size or these characters.
    bool needsRebuild(float pixelScale, const std::set<ImWchar>& needed) const;
    // Builds the atlas (CPU only) with the characters it held and `needed`, or `needed` alone when
    // both are more than kMaxExtraGlyphs; the caller re-creates the GPU font texture afterwards.
    void build(float pixelScale, const std::set<ImWchar>& needed);
    const Fonts& fonts() const { return m_fonts; }
    float pixelScale() const { return m_pixelScale; }
    const std::set<ImWchar>& extra() const { return m_extra; }
    // Characters of the text on screen that no installed face has (drawn as boxes): said once.
    const std::u32string& missing() const { return m_missing; }

private:
    ImFont* addFace(const char* primaryFile, float size);
    void bakeCustomGlyphs();

    Fonts m_fonts;
    float m_pixelScale = 0.0f;
    std::set<ImWchar> m_extra;
    std::u32string m_missing;
    std::deque<std::vector<ImWchar>> m_ranges;  // must outlive the atlas build (cleared after it)
    struct CustomGlyph {
        int rect;  // the atlas's custom rectangle
        int face;  // in the stack
        int glyph;
        float scale;
    };
    std::vector<CustomGlyph> m_custom;
};

}  // namespace attnviz::app
