#include "app/fonts/font_atlas.hpp"

#include "app/fonts/font_files.hpp"
#include "core/text/tokenizer.hpp"

#include <imgui.h>

namespace attnviz::app {

std::set<char32_t> FontSet::tokenCodepoints(const std::vector<std::string>& tokens) {
    std::set<char32_t> out;
    for (const std::string& t : tokens)
        for (std::size_t pos = 0; pos < t.size();) {
            const char32_t cp = core::decodeUtf8(t, pos);
            if (cp >= 0x80 && cp <= 0xFFFF) out.insert(cp);  // ImGui 1.86 glyphs are 16-bit
        }
    return out;
}

bool FontSet::needsRebuild(float pixelScale, const std::vector<std::string>& tokens) const {
    if (pixelScale != m_pixelScale) return true;
    for (char32_t cp : tokenCodepoints(tokens))
        if (!m_extra.count(cp)) return true;
    return false;
}

void FontSet::build(float pixelScale, const std::vector<std::string>& tokens) {
    for (char32_t cp : tokenCodepoints(tokens)) m_extra.insert(cp);
    m_pixelScale = pixelScale;
    ImGuiIO& io = ImGui::GetIO();
    io.Fonts->Clear();
    ImFontGlyphRangesBuilder builder;
    static const ImWchar kRanges[] = {
        0x0020, 0x00FF,  // Basic Latin, Latin-1
        0x0100, 0x017F,  // Latin Extended-A
        0x0370, 0x03FF,  // Greek: α β τ Σ
        0x2000, 0x206F,  // punctuation: – — ‖ … ′
        0x2070, 0x209F,  // super- and subscripts: t₁ ᵀ
        0x2C7C, 0x2C7C,  // ⱼ (subscript j)
        0x2190, 0x21FF,  // arrows ← → ↑ ↓
        0x2200, 0x22FF,  // maths operators √ Σ ∞ ≤ · ∈
        0x2300, 0x23FF,  // technical
        0x2420, 0x2424,  // ␣ (a visible space)
        0x25A0, 0x25FF,  // geometric shapes ■ ▲
        0x1D00, 0x1DBF,  // phonetic extensions incl. ᵀ
        0xFFFD, 0xFFFD,  // �: ImGui draws every glyph it lacks (emoji beyond U+FFFF too) as this, not '?'
        0,
    };
    builder.AddRanges(kRanges);
    for (char32_t cp : m_extra) builder.AddChar(static_cast<ImWchar>(cp));
    ImVector<ImWchar> ranges;
    builder.BuildRanges(&ranges);
    m_ranges.assign(ranges.begin(), ranges.end());

    ImFontConfig config;
    config.FontDataOwnedByAtlas = false;  // the bytes live in fonts::fontBytes
    config.OversampleH = 2;
    const auto load = [&](const char* file, float size) -> ImFont* {
        try {
            const std::string& bytes = fonts::fontBytes(file);
            return io.Fonts->AddFontFromMemoryTTF(const_cast<char*>(bytes.data()), static_cast<int>(bytes.size()), size * pixelScale,
                                                  &config, m_ranges.data());
        } catch (const std::exception&) {
            return nullptr;
        }
    };
    m_fonts.regular = load("DejaVuSans.ttf", kBaseSize);
    if (!m_fonts.regular) m_fonts.regular = io.Fonts->AddFontDefault();  // no DejaVu: ImGui's built-in font
    m_fonts.large = load("DejaVuSans.ttf", kBaseSize * 1.4f);
    m_fonts.mono = load("DejaVuSansMono.ttf", kBaseSize * 0.95f);
    io.Fonts->Build();
    io.FontDefault = m_fonts.regular;
}

}  // namespace attnviz::app
