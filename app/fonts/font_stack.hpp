// The fonts module, part 2: the faces every text is drawn with, tried in order, so that a label
// in any script finds a glyph. The window's atlas (font_atlas) and the figures (app/render) ask
// the same stack, so a token looks the same in both. No ImGui.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

struct stbtt_fontinfo;

namespace attnviz::fonts {

// One face of the stack: its file, the family an SVG names, the Debian package that installs it
// and the scripts it is there for (said when it is missing).
struct Face {
    const char* file;
    const char* family;
    const char* package;
    const char* scripts;
};

// The faces tried, in order: DejaVu Sans first (Latin, Greek, Cyrillic, Hebrew, Arabic and its
// joined forms, the maths signs), then Chinese and Japanese, Korean, the Noto faces of other scripts, and Symbola's
// monochrome emoji.
const std::vector<Face>& faceTable();

// The SVG font-family list of the stack: "DejaVu Sans, Droid Sans Fallback, …, sans-serif".
std::string svgFontFamily();

// Where a code point's glyph is: the face (an index into faceTable) and the glyph in it.
struct GlyphRef {
    int face = -1;  // -1: no installed face has it
    int glyph = 0;
    bool found() const { return face >= 0; }
};

class FontStack {
public:
    // The stack of faceTable(), each face read the first time a code point needs it.
    // Thread-safe; the one a process shares.
    static const FontStack& shared();

    explicit FontStack(std::vector<Face> faces);
    ~FontStack();
    FontStack(const FontStack&) = delete;
    FontStack& operator=(const FontStack&) = delete;

    // The first face, in order, that maps cp to a glyph.
    GlyphRef find(char32_t cp) const;
    // The loaded face `face` (find returned it, so it is loaded).
    const stbtt_fontinfo& info(int face) const;
    const Face& face(int face) const { return m_faces[static_cast<std::size_t>(face)]; }
    std::size_t size() const { return m_faces.size(); }
    // Whether the face's file was found and read (loads it if it was not tried yet).
    bool installed(int face) const;

private:
    struct Loaded;
    const Loaded& load(std::size_t face) const;
    std::vector<Face> m_faces;
    std::unique_ptr<Loaded[]> m_loaded;  // each read once (std::call_once): lookups take no lock
};

// The packages that would draw code points no installed face has, each with what it adds
// ("fonts-droid-fallback (Chinese, Japanese, Korean)"); empty when nothing is missing or no
// package is known for what is.
std::vector<std::string> packagesFor(const std::u32string& missing);

// Says once per package on stderr which package adds the scripts of `missing` (the app still
// draws them, as boxes). Returns the lines it printed.
std::vector<std::string> reportMissing(const std::u32string& missing);

}  // namespace attnviz::fonts
