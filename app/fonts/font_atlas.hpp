// The fonts module, part 2: the window's ImGui font atlas. DejaVu fonts for the UI: Latin, Greek
// and the maths symbols the lessons use (α, τ, √, Σ, ‖, subscripts), plus every character of the
// current tokens; rebuilt when the scale changes. The files come from font_files.
#pragma once

#include <imgui.h>

#include <set>
#include <string>
#include <vector>

namespace attnviz::app {

// The faces panels draw with.
struct Fonts {
    ImFont* regular = nullptr;
    ImFont* large = nullptr;  // titles, presenter labels
    ImFont* mono = nullptr;   // matrices
};

class FontSet {
public:
    // True when the atlas must be rebuilt for this pixel size or these token characters.
    bool needsRebuild(float pixelScale, const std::vector<std::string>& tokens) const;
    // Builds the atlas (CPU only); the caller re-creates the GPU font texture afterwards.
    void build(float pixelScale, const std::vector<std::string>& tokens);
    const Fonts& fonts() const { return m_fonts; }
    float pixelScale() const { return m_pixelScale; }

    static constexpr float kBaseSize = 16.0f;

private:
    static std::set<char32_t> tokenCodepoints(const std::vector<std::string>& tokens);
    Fonts m_fonts;
    float m_pixelScale = 0.0f;
    std::set<char32_t> m_extra;
    std::vector<ImWchar> m_ranges;  // must outlive the atlas build
};

}  // namespace attnviz::app
