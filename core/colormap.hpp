// Colormaps for heatmaps. The 256-entry tables here are the reference: the GL shader samples
// the same table (uploaded as a texture) and the PNG/SVG exporter reads it directly, so the
// window, the screenshot and the exported figure show the same colour for the same weight.
#pragma once

#include <array>
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

// The table index of a value v in [lo, hi]: round((v - lo) / (hi - lo) * 255), clamped.
int colormapIndex(float v, float lo, float hi);
Rgb colormapColor(ColormapKind kind, float v, float lo = 0.0f, float hi = 1.0f);

// Cells a mask blocks are drawn as diagonal hatching in these two colours, which no
// colormap uses, so a masked cell never reads as a weight of 0.
inline constexpr Rgb kMaskedInk{150, 150, 160};
inline constexpr Rgb kMaskedPaper{60, 60, 70};

const char* colormapName(ColormapKind kind);
// Throws InputError(where, …) on an unknown name.
ColormapKind parseColormap(const std::string& name, const std::string& where);

}  // namespace attnviz::core
