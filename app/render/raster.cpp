#include "app/render/raster.hpp"

#include "app/fonts/font_files.hpp"
#include "app/fonts/font_stack.hpp"
#include "app/fonts/shown_text.hpp"
#include "app/render/png.hpp"
#include "core/base/error.hpp"
#include "core/text/tokenizer.hpp"

#include <stb_truetype.h>

#include <algorithm>
#include <cmath>

namespace attnviz::render {

// ---- Canvas -----------------------------------------------------------------------------------

Canvas::Canvas(int width, int height, core::Rgb background) : m_width(width), m_height(height) {
    if (width < 1 || height < 1 || width > kMaxSide || height > kMaxSide)
        throw core::InputError("image", "cannot draw a " + std::to_string(width) + " x " + std::to_string(height) +
                                            " px image (each side must be 1.." + std::to_string(kMaxSide) + ")");
    m_rgba.resize(static_cast<std::size_t>(width) * static_cast<std::size_t>(height) * 4);
    for (std::size_t i = 0; i < m_rgba.size(); i += 4) {
        m_rgba[i] = background.r;
        m_rgba[i + 1] = background.g;
        m_rgba[i + 2] = background.b;
        m_rgba[i + 3] = 255;
    }
}

core::Rgb Canvas::at(int x, int y) const {
    const std::size_t i = (static_cast<std::size_t>(y) * static_cast<std::size_t>(m_width) + static_cast<std::size_t>(x)) * 4;
    return {m_rgba[i], m_rgba[i + 1], m_rgba[i + 2]};
}

void Canvas::fillRect(int x, int y, int w, int h, core::Rgb colour) {
    const int x0 = std::max(x, 0), y0 = std::max(y, 0);
    const int x1 = std::min(x + w, m_width), y1 = std::min(y + h, m_height);
    for (int py = y0; py < y1; ++py) {
        std::uint8_t* p = &m_rgba[(static_cast<std::size_t>(py) * static_cast<std::size_t>(m_width) + static_cast<std::size_t>(x0)) * 4];
        for (int px = x0; px < x1; ++px, p += 4) {
            p[0] = colour.r;
            p[1] = colour.g;
            p[2] = colour.b;
        }
    }
}

void Canvas::hatchRect(int x, int y, int w, int h, int stripe) {
    stripe = std::max(stripe, 1);
    const int x0 = std::max(x, 0), y0 = std::max(y, 0);
    const int x1 = std::min(x + w, m_width), y1 = std::min(y + h, m_height);
    for (int py = y0; py < y1; ++py)
        for (int px = x0; px < x1; ++px) {
            const core::Rgb c = ((px + py) / stripe) % 2 == 0 ? core::kMaskedInk : core::kMaskedPaper;
            std::uint8_t* p =
                &m_rgba[(static_cast<std::size_t>(py) * static_cast<std::size_t>(m_width) + static_cast<std::size_t>(px)) * 4];
            p[0] = c.r;
            p[1] = c.g;
            p[2] = c.b;
        }
}

void Canvas::blendPixel(int x, int y, core::Rgb colour, int coverage) {
    if (x < 0 || y < 0 || x >= m_width || y >= m_height || coverage <= 0) return;
    coverage = std::min(coverage, 255);
    std::uint8_t* p = &m_rgba[(static_cast<std::size_t>(y) * static_cast<std::size_t>(m_width) + static_cast<std::size_t>(x)) * 4];
    const auto mix = [coverage](int fg, int bg) { return static_cast<std::uint8_t>((fg * coverage + bg * (255 - coverage) + 127) / 255); };
    p[0] = mix(colour.r, p[0]);
    p[1] = mix(colour.g, p[1]);
    p[2] = mix(colour.b, p[2]);
}

void Canvas::blendLine(float x0, float y0, float x1, float y1, core::Rgb colour, float opacity, float width) {
    if (!(opacity > 0.0f) || !(width > 0.0f)) return;
    opacity = std::min(opacity, 1.0f);
    const float dx = x1 - x0, dy = y1 - y0;
    const float length = std::hypot(dx, dy);
    const float half = width / 2;
    // Coverage of the pixel whose centre is (cx, cy): by its distance to the segment.
    const auto cover = [&](int px, int py) {
        const float cx = static_cast<float>(px) + 0.5f, cy = static_cast<float>(py) + 0.5f;
        float d = 0;
        if (length < 1e-6f) {
            d = std::hypot(cx - x0, cy - y0);
        } else {
            const float t = std::clamp(((cx - x0) * dx + (cy - y0) * dy) / (length * length), 0.0f, 1.0f);
            d = std::hypot(cx - (x0 + t * dx), cy - (y0 + t * dy));
        }
        const float c = std::clamp(half + 0.5f - d, 0.0f, 1.0f);
        if (c > 0.0f) blendPixel(px, py, colour, static_cast<int>(std::lround(255.0f * c * opacity)));
    };
    // 1. along the longer axis, pixel by pixel; 2. across it, the pixels the stroke may touch
    const bool steep = std::abs(dy) > std::abs(dx);
    const float a0 = steep ? y0 : x0, a1 = steep ? y1 : x1;
    const float b0 = steep ? x0 : y0, slope = (steep ? dx : dy) / (std::abs(a1 - a0) < 1e-6f ? 1.0f : (a1 - a0));
    const float reach = half + 1.0f + std::abs(slope);  // beyond this across, no pixel centre is within half + 0.5
    const int first = static_cast<int>(std::floor(std::min(a0, a1) - half - 0.5f));
    const int last = static_cast<int>(std::ceil(std::max(a0, a1) + half + 0.5f));
    const int limit = steep ? m_height : m_width;
    for (int a = std::max(first, 0); a <= std::min(last, limit - 1); ++a) {
        const float along = std::clamp(static_cast<float>(a) + 0.5f, std::min(a0, a1), std::max(a0, a1));
        const float across = b0 + (along - a0) * slope;
        const int lo = static_cast<int>(std::floor(across - reach)), hi = static_cast<int>(std::ceil(across + reach));
        for (int b = lo; b <= hi; ++b) {
            if (steep) cover(b, a);
            else cover(a, b);
        }
    }
}

std::string Canvas::encodePng() const { return encodeRgbaPng(m_rgba.data(), m_width, m_height); }

// ---- Font -------------------------------------------------------------------------------------

namespace {

// One code point as it will be drawn: a glyph of the font or of the stack's face that has it, or
// the missing-glyph box (glyph 0).
struct Shaped {
    const stbtt_fontinfo* info;
    int glyph;
    float scale;      // font units to pixels in that face
    float kern;       // pixels to move before drawing (kerning with the previous glyph)
    float advance;    // pixels to move after drawing
    std::size_t end;  // logical runs only: byte offset just after this code point
};

constexpr float kBoxAdvanceEm = 0.65f;

bool isControl(char32_t cp) { return cp < 0x20 || (cp >= 0x7F && cp < 0xA0); }

// Code points left to right in the primary face, else the stack's first face that has them:
// kerning from the 'kern' table within one face, controls drawn as spaces. `ends` (may be empty)
// are the byte offsets after each code point.
std::vector<Shaped> shapeCodepoints(const stbtt_fontinfo& primary, const std::u32string& text, const std::vector<std::size_t>& ends,
                                    float px) {
    const fonts::FontStack& stack = fonts::FontStack::shared();
    std::vector<Shaped> out;
    out.reserve(text.size());
    const stbtt_fontinfo* previousInfo = nullptr;
    int previous = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char32_t cp = isControl(text[i]) ? U' ' : text[i];
        const stbtt_fontinfo* info = &primary;
        int glyph = stbtt_FindGlyphIndex(info, static_cast<int>(cp));
        if (glyph == 0)
            if (const fonts::GlyphRef ref = stack.find(cp); ref.found()) {
                info = &stack.info(ref.face);
                glyph = ref.glyph;
            }
        const float scale = stbtt_ScaleForMappingEmToPixels(info, px);
        float kern = 0.0f, advance = kBoxAdvanceEm * px;
        if (glyph != 0) {
            int advanceUnits = 0, lsb = 0;
            stbtt_GetGlyphHMetrics(info, glyph, &advanceUnits, &lsb);
            advance = static_cast<float>(advanceUnits) * scale;
            if (previous != 0 && previousInfo == info) kern = static_cast<float>(stbtt_GetGlyphKernAdvance(info, previous, glyph)) * scale;
        }
        out.push_back({info, glyph, scale, kern, advance, ends.empty() ? 0 : ends[i]});
        previous = glyph;
        previousInfo = info;
    }
    return out;
}

// utf8 as drawn: in visual order, Arabic joined, no-glyph characters as boxes (fonts::shownText).
std::vector<Shaped> shapeShown(const stbtt_fontinfo& primary, std::string_view utf8, float px) {
    return shapeCodepoints(primary, fonts::shownText(utf8).visual, {}, px);
}

// utf8 in logical order, each code point where its bytes end: for cutting a prefix.
std::vector<Shaped> shapeLogical(const stbtt_fontinfo& primary, std::string_view utf8, float px) {
    std::u32string text;
    std::vector<std::size_t> ends;
    for (std::size_t pos = 0; pos < utf8.size();) {
        text.push_back(core::decodeUtf8(utf8, pos));
        ends.push_back(pos);
    }
    return shapeCodepoints(primary, text, ends, px);
}

}  // namespace

Font::Font(const std::string& fileName) : m_info(std::make_unique<stbtt_fontinfo>()) {
    const std::string& bytes = fonts::fontBytes(fileName);
    const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
    const int offset = stbtt_GetFontOffsetForIndex(data, 0);
    if (offset < 0 || !stbtt_InitFont(m_info.get(), data, offset)) throw core::InputError(fonts::findFont(fileName), "not a TrueType font");
}

Font::~Font() = default;
Font::Font(Font&&) noexcept = default;
Font& Font::operator=(Font&&) noexcept = default;

float Font::ascent(float px) const {
    int ascent = 0, descent = 0, lineGap = 0;
    stbtt_GetFontVMetrics(m_info.get(), &ascent, &descent, &lineGap);
    return static_cast<float>(ascent) * stbtt_ScaleForMappingEmToPixels(m_info.get(), px);
}

float Font::descent(float px) const {
    int ascent = 0, descent = 0, lineGap = 0;
    stbtt_GetFontVMetrics(m_info.get(), &ascent, &descent, &lineGap);
    return -static_cast<float>(descent) * stbtt_ScaleForMappingEmToPixels(m_info.get(), px);
}

float Font::textWidth(std::string_view utf8, float px) const {
    float width = 0.0f;
    for (const Shaped& s : shapeShown(*m_info, utf8, px)) width += s.kern + s.advance;
    return width;
}

std::string Font::ellipsize(std::string_view utf8, float px, float maxWidth) const {
    if (textWidth(utf8, px) <= maxWidth) return std::string(utf8);
    const std::vector<Shaped> shaped = shapeLogical(*m_info, utf8, px);
    const std::string ellipsis = "\u2026";
    const float budget = maxWidth - textWidth(ellipsis, px);
    std::size_t keep = 0;
    float width = 0.0f;
    for (const Shaped& s : shaped) {
        if (width + s.kern + s.advance > budget) break;
        width += s.kern + s.advance;
        keep = s.end;
    }
    std::string prefix(utf8.substr(0, keep));
    while (!prefix.empty() && prefix.back() == ' ') prefix.pop_back();
    return prefix + ellipsis;
}

void Font::draw(Canvas& canvas, std::string_view utf8, float x, float y, float px, core::Rgb colour, TextDirection direction) const {
    const bool up = direction == TextDirection::Up;
    // Text space: t runs along the baseline, d runs down from it (d < 0 above the baseline).
    const float along0 = up ? -y : x;
    const int baseline = static_cast<int>(std::lround(up ? x : y));
    const auto plot = [&](int t, int d, int coverage) {
        if (up) canvas.blendPixel(baseline + d, -t - 1, colour, coverage);
        else canvas.blendPixel(t, baseline + d, colour, coverage);
    };

    std::vector<unsigned char> bitmap;
    float pen = along0;
    for (const Shaped& s : shapeShown(*m_info, utf8, px)) {
        pen += s.kern;
        const int whole = static_cast<int>(std::floor(pen));
        const float frac = pen - static_cast<float>(whole);
        if (s.glyph == 0) {
            // Missing glyph: a hollow box from the baseline to about cap height.
            const int t0 = whole + static_cast<int>(std::lround(0.1f * px));
            const int t1 = whole + static_cast<int>(std::lround(0.55f * px));
            const int d0 = -static_cast<int>(std::lround(0.7f * px));
            const int stroke = std::max(1, static_cast<int>(std::lround(px / 16.0f)));
            for (int t = t0; t < t1; ++t)
                for (int d = d0; d < 0; ++d)
                    if (t < t0 + stroke || t >= t1 - stroke || d < d0 + stroke || d >= -stroke) plot(t, d, 255);
        } else {
            int x0 = 0, y0 = 0, x1 = 0, y1 = 0;
            stbtt_GetGlyphBitmapBoxSubpixel(s.info, s.glyph, s.scale, s.scale, frac, 0.0f, &x0, &y0, &x1, &y1);
            const int w = x1 - x0, h = y1 - y0;
            if (w > 0 && h > 0) {
                bitmap.assign(static_cast<std::size_t>(w) * static_cast<std::size_t>(h), 0);
                stbtt_MakeGlyphBitmapSubpixel(s.info, bitmap.data(), w, h, w, s.scale, s.scale, frac, 0.0f, s.glyph);
                for (int v = 0; v < h; ++v)
                    for (int u = 0; u < w; ++u) plot(whole + x0 + u, y0 + v, bitmap[static_cast<std::size_t>(v * w + u)]);
            }
        }
        pen += s.advance;
    }
}

}  // namespace attnviz::render
