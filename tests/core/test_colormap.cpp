// Texels coloured for the window's textures (core::colormapTexels, eight at a time with AVX2)
// against the per-value function the exporter uses (core::colormapColor), and the index's
// rounding and clamping derived by hand.
#include "core/attention/attention.hpp"
#include "core/attention/colormap.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

using namespace attnviz::core;

namespace {

std::uint32_t packed(Rgb c, std::uint32_t alpha) {
    return static_cast<std::uint32_t>(c.r) | static_cast<std::uint32_t>(c.g) << 8 | static_cast<std::uint32_t>(c.b) << 16 | alpha << 24;
}

}  // namespace

// scale = 255 / (hi - lo) = 1 for lo = 0, hi = 255: the index is v itself, rounded.
TEST(Colormap, IndexRoundsHalvesToEvenAndClamps) {
    EXPECT_EQ(colormapIndex(126.5f, 0.0f, 255.0f), 126);
    EXPECT_EQ(colormapIndex(127.5f, 0.0f, 255.0f), 128);
    EXPECT_EQ(colormapIndex(126.49f, 0.0f, 255.0f), 126);
    EXPECT_EQ(colormapIndex(126.51f, 0.0f, 255.0f), 127);
    EXPECT_EQ(colormapIndex(0.5f, 0.0f, 255.0f), 0);
    EXPECT_EQ(colormapIndex(254.5f, 0.0f, 255.0f), 254);
    EXPECT_EQ(colormapIndex(-3.0f, 0.0f, 255.0f), 0);
    EXPECT_EQ(colormapIndex(300.0f, 0.0f, 255.0f), 255);
    EXPECT_EQ(colormapIndex(std::numeric_limits<float>::quiet_NaN(), 0.0f, 1.0f), 0);
    EXPECT_EQ(colormapIndex(std::numeric_limits<float>::infinity(), 0.0f, 1.0f), 255);
    EXPECT_EQ(colormapIndex(-std::numeric_limits<float>::infinity(), 0.0f, 1.0f), 0);
    EXPECT_EQ(colormapIndex(0.7f, 0.5f, 0.5f), 0);  // no range: the first colour
    // 0 … 1: 0.5 · 255 = 127.5 goes to 128; -1 … 1 puts 0 at 127.5 too.
    EXPECT_EQ(colormapIndex(0.5f, 0.0f, 1.0f), 128);
    EXPECT_EQ(colormapIndex(0.0f, -1.0f, 1.0f), 128);
    EXPECT_EQ(colormapIndex(1.0f, 0.0f, 1.0f), 255);
    EXPECT_EQ(colormapIndex(1.0f / 255.0f, 0.0f, 1.0f), 1);
}

// Every kind of value, at every position of an eight-wide step and in the scalar tail: the
// texel's colour is colormapColor's, alpha 255; a masked texel is the hatch's paper, alpha 0.
TEST(Colormap, TexelsHaveTheExportersColours) {
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    std::vector<float> values = {0.0f, 1.0f,         0.5f,     126.5f / 255.0f, 127.5f / 255.0f, -0.25f, 1.75f,      nan,       inf,
                                 -inf, kMaskedTexel, -1.0e37f, 1e-8f,           0.999f,          0.001f, 0.3333333f, 0.6666667f};
    for (int i = 0; i <= 1000; ++i) values.push_back(static_cast<float>(i) / 1000.0f);
    for (int i = 0; i < 512; ++i) values.push_back(static_cast<float>(i) / 510.0f);  // every half step
    for (const auto& [lo, hi] : {std::pair{0.0f, 1.0f}, std::pair{-1.0f, 1.0f}, std::pair{0.0f, 0.01f}, std::pair{0.2f, 0.2f}})
        for (int k = 0; k < kColormapCount; ++k) {
            const auto kind = static_cast<ColormapKind>(k);
            for (std::size_t n : {values.size(), std::size_t{7}, std::size_t{9}, std::size_t{0}}) {
                std::vector<std::uint32_t> rgba(n, 0xdeadbeef);
                colormapTexels(kind, values.data(), n, lo, hi, rgba.data());
                for (std::size_t i = 0; i < n; ++i) {
                    const std::uint32_t want =
                        isMaskedTexel(values[i]) ? packed(kMaskedPaper, 0) : packed(colormapColor(kind, values[i], lo, hi), 255);
                    ASSERT_EQ(rgba[i], want) << "value " << values[i] << " at " << i << " of " << n << ", range " << lo << " … " << hi
                                             << ", colormap " << colormapName(kind);
                }
            }
        }
}
