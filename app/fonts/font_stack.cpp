#include "app/fonts/font_stack.hpp"

#include "app/fonts/font_files.hpp"

#include <stb_truetype.h>

#include <iostream>
#include <mutex>
#include <set>

namespace attnviz::fonts {

const std::vector<Face>& faceTable() {
    static const std::vector<Face> table = {
        {"DejaVuSans.ttf", "DejaVu Sans", "fonts-dejavu-core", "Latin, Greek, Cyrillic, Hebrew and Arabic"},
        {"DroidSansFallbackFull.ttf", "Droid Sans Fallback", "fonts-droid-fallback", "Chinese and Japanese"},
        {"NanumGothic.ttf", "NanumGothic", "fonts-nanum", "Korean"},
        {"NotoSansArabic-Regular.ttf", "Noto Sans Arabic", "fonts-noto-core", "Arabic"},
        {"NotoSansHebrew-Regular.ttf", "Noto Sans Hebrew", "fonts-noto-core", "Hebrew"},
        {"NotoSansDevanagari-Regular.ttf", "Noto Sans Devanagari", "fonts-noto-core", "Devanagari"},
        {"NotoSansBengali-Regular.ttf", "Noto Sans Bengali", "fonts-noto-core", "Bengali"},
        {"NotoSansTamil-Regular.ttf", "Noto Sans Tamil", "fonts-noto-core", "Tamil"},
        {"NotoSansThai-Regular.ttf", "Noto Sans Thai", "fonts-noto-core", "Thai"},
        {"NotoSansArmenian-Regular.ttf", "Noto Sans Armenian", "fonts-noto-core", "Armenian"},
        {"NotoSansGeorgian-Regular.ttf", "Noto Sans Georgian", "fonts-noto-core", "Georgian"},
        {"NotoSansEthiopic-Regular.ttf", "Noto Sans Ethiopic", "fonts-noto-core", "Ethiopic"},
        {"Symbola_hint.ttf", "Symbola", "fonts-symbola", "emoji and symbols"},
    };
    return table;
}

std::string svgFontFamily() {
    std::string out;
    for (const Face& f : faceTable()) out += std::string(f.family) + ", ";
    return out + "sans-serif";
}

struct FontStack::Loaded {
    std::once_flag once;
    bool ok = false;
    stbtt_fontinfo info{};
};

FontStack::FontStack(std::vector<Face> faces) : m_faces(std::move(faces)), m_loaded(std::make_unique<Loaded[]>(m_faces.size())) {}
FontStack::~FontStack() = default;

const FontStack& FontStack::shared() {
    static const FontStack stack(faceTable());
    return stack;
}

const FontStack::Loaded& FontStack::load(std::size_t face) const {
    Loaded& entry = m_loaded[face];
    std::call_once(entry.once, [&] {
        try {
            const std::string& bytes = fontBytes(m_faces[face].file);
            const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
            const int offset = stbtt_GetFontOffsetForIndex(data, 0);
            entry.ok = offset >= 0 && stbtt_InitFont(&entry.info, data, offset) != 0;
        } catch (const std::exception&) {
            entry.ok = false;  // not installed: the faces after it are tried
        }
    });
    return entry;
}

GlyphRef FontStack::find(char32_t cp) const {
    for (std::size_t i = 0; i < m_faces.size(); ++i) {
        const Loaded& f = load(i);
        if (!f.ok) continue;
        if (const int glyph = stbtt_FindGlyphIndex(&f.info, static_cast<int>(cp)); glyph != 0) return {static_cast<int>(i), glyph};
    }
    return {};
}

const stbtt_fontinfo& FontStack::info(int face) const { return load(static_cast<std::size_t>(face)).info; }

bool FontStack::installed(int face) const { return load(static_cast<std::size_t>(face)).ok; }

namespace {

// Which package draws a script, by the blocks of the script: used only to name what to install.
struct Hint {
    char32_t first, last;
    const char* package;
    const char* scripts;
};

constexpr Hint kHints[] = {
    {0x1100, 0x11FF, "fonts-nanum", "Korean"},
    {0x3130, 0x318F, "fonts-nanum", "Korean"},
    {0xAC00, 0xD7AF, "fonts-nanum", "Korean"},
    {0x2E80, 0x2FDF, "fonts-droid-fallback", "Chinese and Japanese"},
    {0x3000, 0x9FFF, "fonts-droid-fallback", "Chinese and Japanese"},
    {0xF900, 0xFAFF, "fonts-droid-fallback", "Chinese and Japanese"},
    {0xFF00, 0xFFEF, "fonts-droid-fallback", "Chinese and Japanese"},
    {0x20000, 0x2FFFF, "fonts-droid-fallback", "Chinese and Japanese"},
    {0x0530, 0x05FF, "fonts-noto-core", "Armenian, Hebrew, Arabic, Indic scripts, Thai, Georgian and Ethiopic"},
    {0x0600, 0x08FF, "fonts-noto-core", "Armenian, Hebrew, Arabic, Indic scripts, Thai, Georgian and Ethiopic"},
    {0x0900, 0x0E7F, "fonts-noto-core", "Armenian, Hebrew, Arabic, Indic scripts, Thai, Georgian and Ethiopic"},
    {0x10A0, 0x10FF, "fonts-noto-core", "Armenian, Hebrew, Arabic, Indic scripts, Thai, Georgian and Ethiopic"},
    {0x1200, 0x139F, "fonts-noto-core", "Armenian, Hebrew, Arabic, Indic scripts, Thai, Georgian and Ethiopic"},
    {0xFB1D, 0xFDFF, "fonts-noto-core", "Armenian, Hebrew, Arabic, Indic scripts, Thai, Georgian and Ethiopic"},
    {0xFE70, 0xFEFF, "fonts-noto-core", "Armenian, Hebrew, Arabic, Indic scripts, Thai, Georgian and Ethiopic"},
    {0x2600, 0x27BF, "fonts-symbola", "emoji and symbols"},
    {0x1F000, 0x1FAFF, "fonts-symbola", "emoji and symbols"},
};

}  // namespace

std::vector<std::string> packagesFor(const std::u32string& missing) {
    std::vector<std::string> out;
    std::set<std::string> seen;
    for (char32_t cp : missing)
        for (const Hint& h : kHints)
            if (cp >= h.first && cp <= h.last && seen.insert(h.package).second)
                out.push_back(std::string(h.package) + " (" + h.scripts + ")");
    return out;
}

std::vector<std::string> reportMissing(const std::u32string& missing) {
    static std::mutex mutex;
    static std::set<std::string> said;
    std::vector<std::string> lines;
    const std::lock_guard lock(mutex);
    for (const std::string& package : packagesFor(missing)) {
        if (!said.insert(package).second) continue;
        lines.push_back("attnviz: some characters have no installed font and are drawn as boxes; install " + package);
        std::cerr << lines.back() << '\n';
    }
    return lines;
}

}  // namespace attnviz::fonts
