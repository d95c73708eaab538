// Colormaps for heatmaps. The 256-entry tables here are the reference: the window's textures are
// coloured through them (colormapTexels) and the PNG/SVG exporter reads them directly, so the
// window, the screenshot and the exported figure show the same colour for the same weight.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

namespace attnviz::core {

enum class ColormapKind : std::uint8_t { Viridis, Magma, Grayscale, Cividis };
inline constexpr int kColormapCount = 4;

struct Rgb {
    std::uint8_t r, g, b;
    bool operator==(const Rgb&) const = default;
};

using ColormapTable = std::array<Rgb, 256>;

// Piecewise-linear in sRGB through ten evenly spaced anchors of each published map
// (viridis, magma and cividis are perceptually uniform; cividis is also safe for
// red-green colour blindness).
const ColormapTable& colormapTable(ColormapKind kind);

// The table index of a value v in [lo, hi]: v · s - lo · s with s = 255 / (hi - lo), as one fused
// multiply-add, clamped to 0 … 255 (NaN gives 0) and rounded to the nearest integer, halves to
// even. Inline, and written as the AVX2 loop of colormapTexels computes it (the same multiply-add,
// the same comparisons, the conversion in the default rounding mode), so that both give the same
// index for every value.
struct ColormapScale {
    float scale = 0.0f, offset = 0.0f;  // index = v · scale + offset, before clamping and rounding
};
inline ColormapScale colormapScale(float lo, float hi) {
    const float scale = hi > lo ? 255.0f / (hi - lo) : 0.0f;
    return {scale, -lo * scale};
}
inline int colormapIndexScaled(float v, ColormapScale s) {
    float x = std::fma(v, s.scale, s.offset);
    x = x > 0.0f ? x : 0.0f;
    x = x < 255.0f ? x : 255.0f;
    return static_cast<int>(std::nearbyint(x));
}
inline int colormapIndex(float v, float lo, float hi) { return colormapIndexScaled(v, colormapScale(lo, hi)); }
Rgb colormapColor(ColormapKind kind, float v, float lo = 0.0f, float hi = 1.0f);

// Cells a mask blocks are drawn as diagonal hatching in these two colours, which no
// colormap uses, so a masked cell never reads as a weight of 0.
inline constexpr Rgb kMaskedInk{150, 150, 160};
inline constexpr Rgb kMaskedPaper{60, 60, 70};

// Texels as RGBA8 for a texture (bytes r, g, b, a in memory order): rgba[i] is the colour of
// values[i] in lo … hi, alpha 255; a masked cell's value (core::isMaskedTexel) gets kMaskedPaper
// with alpha 0, which the shader hatches.
void colormapTexels(ColormapKind kind, const float* values, std::size_t n, float lo, float hi, std::uint32_t* rgba);

const char* colormapName(ColormapKind kind);
// Throws InputError(where, …) on an unknown name.
ColormapKind parseColormap(const std::string& name, const std::string& where);

}  // namespace attnviz::core
