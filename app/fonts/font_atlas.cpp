#include "app/fonts/font_atlas.hpp"

#include "app/fonts/font_files.hpp"
#include "app/fonts/font_stack.hpp"
#include "app/fonts/shown_text.hpp"
#include "app/widgets/text.hpp"
#include "core/text/tokenizer.hpp"

#include <imgui.h>
#include <stb_truetype.h>

#include <cmath>
#include <iterator>
#include <mutex>
#include <unordered_map>

namespace attnviz::app {

namespace {

// The base set, always baked: what the UI's own text and the lessons use.
constexpr ImWchar kBaseRanges[] = {
    0x0020, 0x00FF,  // Basic Latin, Latin-1
    0x0100, 0x017F,  // Latin Extended-A
    0x0370, 0x03FF,  // Greek: α β τ Σ
    0x0400, 0x045F,  // Cyrillic
    0x1D00, 0x1DBF,  // phonetic extensions incl. ᵀ
    0x2000, 0x206F,  // punctuation: – — ‖ … ′
    0x2070, 0x209F,  // super- and subscripts: t₁ ᵀ
    0x2190, 0x21FF,  // arrows ← → ↑ ↓
    0x2200, 0x22FF,  // maths operators √ Σ ∞ ≤ · ∈
    0x2300, 0x23FF,  // technical
    0x2420, 0x2424,  // ␣ (a visible space)
    0x25A0, 0x25FF,  // geometric shapes ■ ▲ and □, the box of a character no face has
    0x27E8, 0x27E9,  // ⟨ ⟩ around the bytes of a token that is not whole characters
    0x2C7C, 0x2C7C,  // ⱼ (subscript j)
};

// Private-use slots for characters beyond U+FFFF, given out in the order they are first drawn.
constexpr char32_t kFirstSlot = 0xE000, kLastSlot = 0xF8FF;
constexpr ImWchar kFallback = 0xFFFD;  // what ImGui draws for a character not in the atlas: baked as □

struct Slots {
    std::mutex mutex;
    std::unordered_map<char32_t, char32_t> slotOf;
    std::vector<char32_t> codepointOf;  // [slot - kFirstSlot]
};

bool isSlot(char32_t cp) { return cp >= kFirstSlot && cp <= kLastSlot; }

Slots& slots() {
    static Slots s;
    return s;
}

// ImGui 1.86's ascent for a face at `px` pixels (ImFontAtlasBuildSetupFont): where glyph tops
// are measured from.
float imguiAscent(const stbtt_fontinfo& info, float px) {
    int ascent = 0, descent = 0, gap = 0;
    stbtt_GetFontVMetrics(&info, &ascent, &descent, &gap);
    return std::floor(static_cast<float>(ascent) * stbtt_ScaleForPixelHeight(&info, px) + (ascent > 0 ? 1.0f : -1.0f));
}

// Every joined form of each Arabic letter in `text` (isolated, initial, medial, final, and lam's
// ligatures with alef), one word per form, for shaping: a label cut by fitLabel ends in a form
// its whole text does not have. "" when it has no joining letter.
std::string joinedForms(std::string_view text) {
    constexpr const char* kTatweel = "\u0640";  // joins on both sides and is drawn as a line
    std::u32string letters;
    for (std::size_t pos = 0; pos < text.size();) {
        const char32_t cp = core::decodeUtf8(text, pos);
        if (cp >= 0x0620 && cp <= 0x08FF && letters.find(cp) == std::u32string::npos) letters.push_back(cp);
    }
    std::string out;
    for (char32_t cp : letters) {
        std::string letter;
        core::appendUtf8(letter, cp);
        out += letter + " " + kTatweel + letter + " " + letter + kTatweel + " " + kTatweel + letter + kTatweel + " ";
        if (cp == 0x0644)  // lam: its ligatures with each alef, alone and after a letter
            for (const char* alef : {"\u0622", "\u0623", "\u0625", "\u0627"}) out += letter + alef + " " + kTatweel + letter + alef + " ";
    }
    return out;
}

}  // namespace

char32_t atlasSlot(char32_t cp) {
    Slots& s = slots();
    const std::lock_guard lock(s.mutex);
    if (const auto it = s.slotOf.find(cp); it != s.slotOf.end()) return it->second;
    if (s.codepointOf.size() > kLastSlot - kFirstSlot) return fonts::kNoGlyphBox;  // 6,400 emoji drawn: the rest are boxes
    const char32_t slot = kFirstSlot + static_cast<char32_t>(s.codepointOf.size());
    s.codepointOf.push_back(cp);
    s.slotOf.emplace(cp, slot);
    return slot;
}

char32_t slotCodepoint(char32_t slot) {
    Slots& s = slots();
    const std::lock_guard lock(s.mutex);
    if (slot < kFirstSlot || slot - kFirstSlot >= s.codepointOf.size()) return 0;
    return s.codepointOf[slot - kFirstSlot];
}

std::optional<std::string> slottedText(std::string_view utf8) {
    if (!fonts::needsShaping(utf8)) return std::string(utf8);
    std::string out;
    for (std::size_t pos = 0; pos < utf8.size();) {
        const std::size_t start = pos;
        const char32_t cp = core::decodeUtf8(utf8, pos);
        // A private-use character the user typed takes a slot too, so that it comes back as itself.
        if (cp > 0xFFFF || isSlot(cp)) {
            const char32_t slot = atlasSlot(cp);
            if (slot == fonts::kNoGlyphBox) return std::nullopt;  // no slot left: the text would be lost
            core::appendUtf8(out, slot);
        } else {
            out.append(utf8.substr(start, pos - start));  // as it was, invalid bytes included
        }
    }
    return out;
}

std::string unslottedText(std::string_view text, std::string_view slotted) {
    if (!fonts::needsShaping(text)) return std::string(text);
    // Only the slots `slotted` holds stand for characters: a private-use character pasted into the
    // field is kept as itself even when it equals a slot given out elsewhere.
    std::u32string known;
    for (std::size_t pos = 0; pos < slotted.size();)
        if (const char32_t cp = core::decodeUtf8(slotted, pos); isSlot(cp)) known.push_back(cp);
    std::string out;
    for (std::size_t pos = 0; pos < text.size();) {
        const std::size_t start = pos;
        const char32_t cp = core::decodeUtf8(text, pos);
        const bool slot = isSlot(cp) && known.find(cp) != std::u32string::npos;
        if (const char32_t astral = slot ? slotCodepoint(cp) : 0; astral != 0) core::appendUtf8(out, astral);
        else out.append(text.substr(start, pos - start));
    }
    return out;
}

std::string atlasText(std::string_view text) {
    if (!fonts::needsShaping(text)) return std::string(text);
    // A long text (a lesson's paragraph) is drawn every frame: its shaped form is kept for the
    // next frames, the last few of them, so a frame costs a comparison, not the bidi algorithm.
    constexpr std::size_t kCachedFrom = 2048, kCached = 8;
    thread_local std::vector<std::pair<std::string, std::string>> cache;
    thread_local std::size_t next = 0;
    if (text.size() >= kCachedFrom)
        for (const auto& [in, out] : cache)
            if (in == text) return out;
    std::string out;
    out.reserve(text.size());
    for (std::size_t start = 0;;) {  // line by line: each line is one paragraph for the bidi algorithm
        const std::size_t end = text.find('\n', start);
        const fonts::ShownText shown =
            fonts::shownText(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
        if (!shown.noGlyph.empty()) fonts::reportMissing(shown.noGlyph);
        for (char32_t cp : shown.visual) core::appendUtf8(out, cp > 0xFFFF ? atlasSlot(cp) : cp);
        if (end == std::string_view::npos) break;
        out += '\n';
        start = end + 1;
    }
    if (text.size() >= kCachedFrom) {
        if (cache.size() < kCached) cache.emplace_back(text, out);
        else cache[next] = {std::string(text), out};
        next = (next + 1) % kCached;
    }
    return out;
}

bool FontSet::inBaseSet(char32_t cp) {
    for (std::size_t i = 0; i < std::size(kBaseRanges); i += 2)
        if (cp >= kBaseRanges[i] && cp <= kBaseRanges[i + 1]) return true;
    return false;
}

std::set<ImWchar> FontSet::neededCharacters(const std::vector<std::string_view>& texts, std::size_t maxGlyphs) {
    std::set<ImWchar> out;
    for (std::string_view text : texts) {
        if (!fonts::needsShaping(text)) continue;
        // As the most of it is drawn (a tooltip), and as a text field shows it while it is edited:
        // in logical order, Arabic letters unjoined.
        const std::string logical = widgets::clipText(text, maxGlyphs, true).text;
        std::vector<std::string> forms = {atlasText(logical), slottedText(logical).value_or("")};
        forms.push_back(atlasText(joinedForms(logical)));  // a label cut short ends in another form
        for (const std::string& shown : forms)
            for (std::size_t pos = 0; pos < shown.size();) {
                const char32_t cp = core::decodeUtf8(shown, pos);
                if (cp < 0x80 || cp > 0xFFFF || inBaseSet(cp)) continue;
                out.insert(static_cast<ImWchar>(cp));
                if (out.size() == kMaxExtraGlyphs) return out;
            }
    }
    return out;
}

std::size_t FontSet::maxExtraGlyphs(float pixelScale) {
    // A glyph of the three faces takes about the square of each size; the extra glyphs get at
    // most a 4096 x 4096 texture's worth (ImGui 1.86 aborts when its glyphs do not pack, and GL
    // textures stop at 16384 a side).
    double area = 0.0;
    for (float size : {kBaseSize, kBaseSize * 1.4f, kBaseSize * 0.95f}) area += std::pow((size * pixelScale) + 2.0, 2.0);
    return std::min(kMaxExtraGlyphs, static_cast<std::size_t>(4096.0 * 4096.0 / area));
}

std::set<ImWchar> FontSet::capped(const std::set<ImWchar>& needed, float pixelScale) {
    const std::size_t most = maxExtraGlyphs(pixelScale);
    if (needed.size() <= most) return needed;
    return {needed.begin(), std::next(needed.begin(), static_cast<std::ptrdiff_t>(most))};
}

bool FontSet::needsRebuild(float pixelScale, const std::set<ImWchar>& needed) const {
    if (pixelScale != m_pixelScale) return true;
    // The characters capped(needed) keeps, read in place: this runs every frame.
    std::size_t left = maxExtraGlyphs(pixelScale);
    for (auto it = needed.begin(); it != needed.end() && left > 0; ++it, --left)
        if (!m_extra.count(*it)) return true;
    return false;
}

ImFont* FontSet::addFace(const char* primaryFile, float size) {
    ImGuiIO& io = ImGui::GetIO();
    const float px = size * m_pixelScale;
    const std::string* bytes = nullptr;
    stbtt_fontinfo primary{};
    try {
        bytes = &fonts::fontBytes(primaryFile);
    } catch (const std::exception&) {
        return nullptr;
    }
    const auto* data = reinterpret_cast<const unsigned char*>(bytes->data());
    if (!stbtt_InitFont(&primary, data, stbtt_GetFontOffsetForIndex(data, 0))) return nullptr;

    // 1. which face draws each character: the primary face, else the first face of the stack that
    // has it (a character beyond U+FFFF through its slot)
    const fonts::FontStack& stack = fonts::FontStack::shared();
    std::vector<ImWchar> own(std::begin(kBaseRanges), std::end(kBaseRanges));
    std::vector<std::pair<ImWchar, fonts::GlyphRef>> others;
    // ImGui's fallback, for a character the atlas lacks: the same box as one no face has.
    if (const fonts::GlyphRef box = stack.find(fonts::kNoGlyphBox); box.found()) others.emplace_back(kFallback, box);
    for (ImWchar c : m_extra) {
        const char32_t astral = slotCodepoint(c);
        if (astral == 0 && stbtt_FindGlyphIndex(&primary, c) != 0) own.insert(own.end(), {c, c});
        else if (const fonts::GlyphRef ref = stack.find(astral != 0 ? astral : c); ref.found()) others.emplace_back(c, ref);
    }
    own.push_back(0);
    m_ranges.push_back(std::move(own));

    // 2. the primary face
    ImFontConfig config;
    config.FontDataOwnedByAtlas = false;  // ImGui copies the bytes anyway
    config.OversampleH = 2;
    ImFont* font = io.Fonts->AddFontFromMemoryTTF(const_cast<char*>(bytes->data()), static_cast<int>(bytes->size()), px, &config,
                                                  m_ranges.back().data());

    // 3. the other faces' characters as custom glyphs, drawn by stb_truetype from the faces the
    // stack holds (merging a face into ImGui's build would copy its whole file at each size: 4 MB
    // for CJK), at the primary's em size as the figures draw them (ImGui would size each face by
    // its line height, and Noto Thai's tall lines would make its letters small)
    const float emPx = px * stbtt_ScaleForPixelHeight(&primary, 1.0f) / stbtt_ScaleForMappingEmToPixels(&primary, 1.0f);
    const float ascent = imguiAscent(primary, px);
    for (const auto& [c, ref] : others) {
        const stbtt_fontinfo& info = stack.info(ref.face);
        const float scale = stbtt_ScaleForMappingEmToPixels(&info, emPx);
        int x0 = 0, y0 = 0, x1 = 0, y1 = 0, advance = 0, lsb = 0;
        stbtt_GetGlyphBitmapBox(&info, ref.glyph, scale, scale, &x0, &y0, &x1, &y1);
        stbtt_GetGlyphHMetrics(&info, ref.glyph, &advance, &lsb);
        const int rect =
            io.Fonts->AddCustomRectFontGlyph(font, c, std::max(x1 - x0, 1), std::max(y1 - y0, 1), static_cast<float>(advance) * scale,
                                             ImVec2(static_cast<float>(x0), ascent + static_cast<float>(y0)));
        m_custom.push_back({rect, ref.face, ref.glyph, scale});
    }
    return font;
}

void FontSet::bakeCustomGlyphs() {
    ImGuiIO& io = ImGui::GetIO();
    unsigned char* pixels = nullptr;
    int width = 0, height = 0;
    io.Fonts->GetTexDataAsAlpha8(&pixels, &width, &height);
    if (!pixels) return;
    const fonts::FontStack& stack = fonts::FontStack::shared();
    for (const CustomGlyph& g : m_custom) {
        const ImFontAtlasCustomRect* r = io.Fonts->GetCustomRectByIndex(g.rect);
        unsigned char* at = pixels + static_cast<std::ptrdiff_t>(r->Y) * width + r->X;
        stbtt_MakeGlyphBitmap(&stack.info(g.face), at, r->Width, r->Height, width, g.scale, g.scale, g.glyph);
    }
}

void FontSet::build(float pixelScale, const std::set<ImWchar>& wanted) {
    const std::set<ImWchar> needed = capped(wanted, pixelScale);
    std::set<ImWchar> all = pixelScale == m_pixelScale ? m_extra : std::set<ImWchar>{};
    all.insert(needed.begin(), needed.end());
    m_extra = all.size() > maxExtraGlyphs(pixelScale) ? needed : std::move(all);
    m_pixelScale = pixelScale;
    ImGuiIO& io = ImGui::GetIO();
    io.Fonts->Clear();
    m_ranges.clear();
    m_custom.clear();
    m_fonts.regular = addFace("DejaVuSans.ttf", kBaseSize);
    if (!m_fonts.regular) m_fonts.regular = io.Fonts->AddFontDefault();  // no DejaVu: ImGui's built-in font
    m_fonts.large = addFace("DejaVuSans.ttf", kBaseSize * 1.4f);
    m_fonts.mono = addFace("DejaVuSansMono.ttf", kBaseSize * 0.95f);
    io.Fonts->Build();
    bakeCustomGlyphs();
    // ImGui copied each face's file for each size it was added at (a CJK face is 4 MB): the
    // glyphs are baked, so the copies and ranges go.
    io.Fonts->ClearInputData();
    m_ranges.clear();
    io.FontDefault = m_fonts.regular;
}

}  // namespace attnviz::app
