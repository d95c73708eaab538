// A tiny software rasterizer for figures: an opaque RGBA8 canvas, axis-aligned rectangles,
// hatching and antialiased UTF-8 text (stb_truetype). Coordinates: x right, y down, in whole
// pixels; fillRect(x, y, w, h) covers exactly the w*h pixels [x, x+w) x [y, y+h), with no
// antialiasing, so heatmap cells are pure colour.
#pragma once

#include "core/attention/colormap.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

struct stbtt_fontinfo;

namespace attnviz::render {

class Canvas {
public:
    // Throws core::InputError("image", …) for sizes below 1 or above kMaxSide.
    Canvas(int width, int height, core::Rgb background = {255, 255, 255});

    static constexpr int kMaxSide = 16384;

    int width() const { return m_width; }
    int height() const { return m_height; }
    // [height, width, 4] row-major; alpha is always 255.
    const std::vector<std::uint8_t>& rgba() const { return m_rgba; }
    core::Rgb at(int x, int y) const;

    // Both clip to the canvas.
    void fillRect(int x, int y, int w, int h, core::Rgb colour);
    // Diagonal stripes "/" (constant x + y), stripe pixels wide along x, alternating
    // core::kMaskedInk and core::kMaskedPaper. The phase follows canvas coordinates, so adjacent
    // hatched cells join into continuous stripes; every pixel is exactly one of the two colours.
    void hatchRect(int x, int y, int w, int h, int stripe);
    // colour over the pixel at opacity coverage/255 (0..255); outside the canvas is ignored.
    void blendPixel(int x, int y, core::Rgb colour, int coverage);
    // An anti-aliased segment from (x0, y0) to (x1, y1) (pixel centres at +0.5), `width` px wide,
    // blended at `opacity` (0 … 1) times each pixel's coverage: the coverage is 1 − the distance
    // from the pixel centre to the stroke's edge, clamped to 0 … 1, so a pixel centre on a 1-px
    // line gets the colour at exactly `opacity`. Walks the longer axis: cost is the length, not the
    // bounding box.
    void blendLine(float x0, float y0, float x1, float y1, core::Rgb colour, float opacity, float width = 1.0f);

    // An RGB PNG of the canvas.
    std::string encodePng() const;

private:
    int m_width, m_height;
    std::vector<std::uint8_t> m_rgba;
};

enum class TextDirection {
    Horizontal,
    Up,  // rotated 90° counter-clockwise: reads bottom to top, glyph tops point left
};

// One TrueType face at any pixel size. Sizes are em sizes (CSS/SVG font-size), so a label
// measured here has the same width in the PNG and in an SVG viewer using the same font.
class Font {
public:
    // Loads fileName via fontBytes(findFont(…)); throws core::InputError when missing or invalid.
    explicit Font(const std::string& fileName);
    ~Font();
    Font(Font&&) noexcept;
    Font& operator=(Font&&) noexcept;
    Font(const Font&) = delete;
    Font& operator=(const Font&) = delete;

    // Distance above (ascent, > 0) and below (descent, > 0) the baseline, in pixels.
    float ascent(float px) const;
    float descent(float px) const;
    // Advance width of UTF-8 text; code points the font lacks count as a missing-glyph box.
    float textWidth(std::string_view utf8, float px) const;
    // text itself when it fits in maxWidth, else its longest prefix that fits followed by "…".
    std::string ellipsize(std::string_view utf8, float px, float maxWidth) const;

    // Alpha-blended text. Horizontal: the baseline starts at (x, y) and runs right.
    // Up: the baseline starts at (x, y) and runs up (towards smaller y).
    // Invalid UTF-8 decodes to U+FFFD; code points without a glyph (emoji) draw a hollow box.
    void draw(Canvas& canvas, std::string_view utf8, float x, float y, float px, core::Rgb colour,
              TextDirection direction = TextDirection::Horizontal) const;

private:
    std::unique_ptr<stbtt_fontinfo> m_info;
};

}  // namespace attnviz::render
