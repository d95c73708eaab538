#include "core/colormap.hpp"

#include "core/error.hpp"

#include <algorithm>
#include <cmath>

namespace attnviz::core {
namespace {

using Anchors = std::array<std::uint32_t, 10>;

// Ten evenly spaced samples (0, 1/9, …, 1) of each map, as 0xRRGGBB.
constexpr Anchors kViridis = {0x440154, 0x482878, 0x3e4989, 0x31688e, 0x26828e,
                              0x1f9e89, 0x35b779, 0x6ece58, 0xb5de2b, 0xfde725};
constexpr Anchors kMagma = {0x000004, 0x180f3d, 0x440f76, 0x721f81, 0x9e2f7f,
                            0xcd4071, 0xf1605d, 0xfd9668, 0xfeca8d, 0xfcfdbf};
constexpr Anchors kCividis = {0x00224e, 0x123570, 0x3b496c, 0x575d6d, 0x707173,
                              0x8a8779, 0xa69d75, 0xc4b56c, 0xe4cf5b, 0xfee838};

ColormapTable interpolate(const Anchors& anchors) {
    ColormapTable table{};
    for (int i = 0; i < 256; ++i) {
        const double t = i / 255.0 * 9.0;
        const int a = std::min(static_cast<int>(t), 8);
        const double f = t - a;
        const auto channel = [&](int shift) {
            const double lo = (anchors[a] >> shift) & 0xFF, hi = (anchors[a + 1] >> shift) & 0xFF;
            return static_cast<std::uint8_t>(std::lround(lo + (hi - lo) * f));
        };
        table[i] = Rgb{channel(16), channel(8), channel(0)};
    }
    return table;
}

ColormapTable grayscale() {
    ColormapTable table{};
    for (int i = 0; i < 256; ++i) {
        const auto v = static_cast<std::uint8_t>(i);
        table[i] = Rgb{v, v, v};
    }
    return table;
}

}  // namespace

const ColormapTable& colormapTable(ColormapKind kind) {
    static const ColormapTable viridis = interpolate(kViridis), magma = interpolate(kMagma),
                               cividis = interpolate(kCividis), gray = grayscale();
    switch (kind) {
        case ColormapKind::Viridis: return viridis;
        case ColormapKind::Magma: return magma;
        case ColormapKind::Grayscale: return gray;
        case ColormapKind::Cividis: return cividis;
    }
    return viridis;
}

int colormapIndex(float v, float lo, float hi) {
    const float span = hi - lo;
    const float t = span > 0.0f ? (v - lo) / span : 0.0f;
    if (!(t > 0.0f)) return 0;  // also NaN
    if (t >= 1.0f) return 255;
    return static_cast<int>(std::lround(t * 255.0f));
}

Rgb colormapColor(ColormapKind kind, float v, float lo, float hi) {
    return colormapTable(kind)[static_cast<std::size_t>(colormapIndex(v, lo, hi))];
}

const char* colormapName(ColormapKind kind) {
    switch (kind) {
        case ColormapKind::Viridis: return "viridis";
        case ColormapKind::Magma: return "magma";
        case ColormapKind::Grayscale: return "grayscale";
        case ColormapKind::Cividis: return "cividis";
    }
    return "viridis";
}

ColormapKind parseColormap(const std::string& name, const std::string& where) {
    for (int i = 0; i < kColormapCount; ++i)
        if (name == colormapName(static_cast<ColormapKind>(i))) return static_cast<ColormapKind>(i);
    throw InputError(where, "unknown colormap '" + name + "' (known: viridis, magma, grayscale, cividis)");
}

}  // namespace attnviz::core
