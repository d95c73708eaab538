// Pieces every figure shares: text and line items laid out once and drawn by both back ends
// (raster PNG and SVG), the figure fonts, SVG escaping and numbers, and the colour bar in a
// scale's own terms.
#pragma once

#include "app/render/raster.hpp"
#include "core/attention/colormap.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace attnviz::render::figure {

inline constexpr core::Rgb kText{34, 34, 34}, kCaption{51, 51, 51}, kFrame{120, 120, 120};
inline constexpr core::Rgb kBlack{0, 0, 0}, kWhite{255, 255, 255};
inline constexpr core::Rgb kGenerated{217, 119, 6};  // tokens a model generated: the window's amber, darker on paper
inline constexpr int kMargin = 24;
inline constexpr float kTitlePx = 20, kSubtitlePx = 14, kCaptionPx = 15, kTickPx = 13;

enum class Anchor { Start, Middle, End };

// A piece of text both back ends draw: (x, y) is on the baseline; for up text the baseline
// runs upwards and the anchor refers to that direction.
struct TextItem {
    std::string text;
    float x, y, px;
    Anchor anchor;
    core::Rgb colour;
    bool up = false, bold = false;
};

struct Line {  // a 1-px-wide axis-aligned line or frame edge, as a filled rectangle
    int x, y, w, h;
    core::Rgb colour;
};

struct FigureFonts {
    Font regular{"DejaVuSans.ttf"};
    Font bold = loadBold();

    static Font loadBold();  // DejaVu Sans Bold, or the regular face where it is not installed
    const Font& of(const TextItem& t) const { return t.bold ? bold : regular; }
};

int ceilPx(float v);
// Height of one line of text at px: ascent + descent, rounded up.
int lineHeight(const Font& font, float px);
// The baseline that centres text of size px on a horizontal line at `centre`.
float centredBaseline(float centre, float px);

// Black on colours brighter than the WCAG contrast crossover, white on darker ones.
core::Rgb contrastingText(core::Rgb background);

// A label as drawn: the index when there are no labels; a white-space token as visible
// symbols (␣ ↵ ⇥); at most maxWidth wide, ending in "…" when cut.
std::string labelText(const std::vector<std::string>& labels, int i, const Font& font, float px, float maxWidth);

// A value to three significant digits ("0.025", "0.1").
std::string significant(float v);
// Fixed decimals, as many as `step` needs to print exactly: 0.25 → 2, 0.0005 → 4, 1 → 0.
int decimalsFor(double step);

// Four sides of a 1-px frame just outside the box (x, y, w, h).
void frameBox(std::vector<Line>& lines, int x, int y, int w, int h, core::Rgb colour);

// The colour bar's ticks (position 0 … 1 on the bar, label) and caption, in the terms of a
// resolved scale: weights (0 … 1, or 0 … the top when stretched, the caption saying what share is
// clipped above it: core::clipCaption), fractions of each row's largest, or decades from the log
// floor.
struct ColourBarScale {
    std::vector<std::pair<float, std::string>> ticks;
    std::string caption;
};
ColourBarScale colourBarScale(const core::ScaleChoice& choice, float logFloor);
// The bar's ticks and caption laid out right of the bar at (x, y, w, h), and its frame; returns the
// right edge of the caption, which is written upwards.
int colourBarTicks(std::vector<Line>& lines, std::vector<TextItem>& texts, const Font& font, const ColourBarScale& bar, int x, int y, int w,
                   int h);
// The figure's title at the top margin, bold, cut to `width` with "…": `y` is the top and moves
// below it (nothing when the title is empty).
void titleText(std::vector<TextItem>& texts, const FigureFonts& fonts, const std::string& title, float width, int& y);

// ---- Back ends ----------------------------------------------------------------------------

// The colour bar in (x, y, w, h), the table's top entry on the top row.
void drawColourBar(Canvas& canvas, core::ColormapKind kind, int x, int y, int w, int h);
void drawLines(Canvas& canvas, const std::vector<Line>& lines);
void drawTexts(Canvas& canvas, const std::vector<TextItem>& texts, const FigureFonts& fonts);

std::string hex(core::Rgb c);
// Two decimals at most, no trailing zeros: "12", "12.5", "12.25".
std::string num(double v);
// Text content for XML: markup characters escaped; controls (not allowed in XML 1.0) as spaces.
std::string xmlText(const std::string& utf8);

// The XML declaration, the <svg> element of width × height, then `defs` (if any) and a white
// background.
std::string svgOpen(int width, int height, const std::string& defs = {});
// <defs> with pattern "masked": the raster's hatch (stripes `stripe` px wide along x at 45°).
std::string svgMaskedPattern(int stripe);
// <g id="colour-bar">: one band per table entry, top = 1.
void appendColourBarSvg(std::string& svg, core::ColormapKind kind, int x, int y, int w, int h);
// A group <g id="…"> of the lines (as rects) or of the texts.
// One row of cells as <rect>s: `cols` cells `cell` px square from (x, y), cell j filled with
// fill(j) (a colour, or "url(#masked)"); with `merge`, a run of one fill is one rect.
void appendCellRowSvg(std::string& svg, int x, int y, int cell, int cols, bool merge, const std::function<std::string(int)>& fill);
void appendLinesSvg(std::string& svg, const std::vector<Line>& lines, const std::string& id = "axes");
void appendTextsSvg(std::string& svg, const std::vector<TextItem>& texts, const std::string& id = "text");
// The texts, then the end of the SVG: what every figure's SVG closes with.
std::string closeSvg(std::string& svg, const std::vector<TextItem>& texts);

// ---- Files ---------------------------------------------------------------------------------

enum class FileType : std::uint8_t { Png, Svg, Json };
// The type a figure's path names by its extension (any case): .png or .svg, and .json where a
// figure writes its numbers too. Any other is an InputError naming the path.
FileType fileType(const std::string& path, bool json = false);
// `draw(type)` for the type `path` names (.json allowed with `json`); errors are named by the path.
std::string encodeAs(const std::string& path, const std::function<std::string(FileType)>& draw, bool json = false);

// The one way every figure becomes its file: checked, laid out once with the fonts the SVG names
// (both back ends place text alike), and drawn by the back end its type asks for. A figure module
// fills one with its own four steps.
template <class Figure, class Layout>
struct Drawing {
    void (*validate)(const Figure&);
    Layout (*layOut)(const Figure&, const FigureFonts&);
    std::string (*png)(const Figure&, const Layout&, const FigureFonts&);
    // The SVG document opened (svgOpen) and drawn; draw closes it: the layout's lines when it has
    // them, its texts, the end tag.
    std::string (*svg)(const Figure&, const Layout&);

    std::string draw(const Figure& f, FileType type) const {
        validate(f);
        const FigureFonts fonts;
        const Layout layout = layOut(f, fonts);
        if (type == FileType::Png) return png(f, layout, fonts);
        std::string s = svg(f, layout);
        if constexpr (requires { layout.lines; }) appendLinesSvg(s, layout.lines);
        return closeSvg(s, layout.texts);
    }
    // The file for OUT.png or OUT.svg; errors are named by the path.
    std::string encode(const std::string& path, const Figure& f) const {
        return encodeAs(path, [&](FileType t) { return draw(f, t); });
    }
};

}  // namespace attnviz::render::figure
