// Texels coloured for the window's textures (core::colormapTexels, eight at a time with AVX2)
// against the per-value function the exporter uses (core::colormapColor), and the index's
// rounding and clamping derived by hand.
#include "core/attention/attention.hpp"
#include "core/attention/colormap.hpp"
#include "core/base/error.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>
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
        for (int k = 0; k <= static_cast<int>(ColormapKind::Diverging); ++k) {
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

// The two-sided map for signed values: ColorBrewer's RdBu ends, and white at 0 of -r … r (index
// 128 is 128/255 · 10 = 5.02 of the way through its eleven anchors: a hair from #f7f7f7 towards
// #fddbc7).
TEST(Colormap, DivergingIsBlueWhiteRedWithWhiteAtZero) {
    const ColormapTable& t = colormapTable(ColormapKind::Diverging);
    EXPECT_EQ(t[0], (Rgb{0x05, 0x30, 0x61}));
    EXPECT_EQ(t[255], (Rgb{0x67, 0x00, 0x1f}));
    EXPECT_EQ(colormapColor(ColormapKind::Diverging, 0.0f, -2.0f, 2.0f), (Rgb{0xf7, 0xf6, 0xf6}));
    EXPECT_EQ(colormapColor(ColormapKind::Diverging, -2.0f, -2.0f, 2.0f), t[0]);
    EXPECT_EQ(colormapColor(ColormapKind::Diverging, 2.0f, -2.0f, 2.0f), t[255]);
    // only the user's maps are offered and parsed
    EXPECT_THROW(parseColormap("diverging", "--colormap"), InputError);
}

// A bar chart's axis: all of 0 … 1 from a largest weight of 0.25 up, else the next 1, 2 or 5 ×
// 10^e at or above it, ticked in fifths (quarters for 2 × 10^e).
TEST(WeightAxis, RunsToOneOrToTheNextRoundValueAboveTheLargestWeight) {
    const auto axis = [](float largest) {
        const WeightAxis a = weightAxis(largest);
        return std::pair{a.top, a.step};
    };
    EXPECT_EQ(axis(0.61f), (std::pair{1.0, 0.25}));
    EXPECT_EQ(axis(0.25f), (std::pair{1.0, 0.25}));
    EXPECT_EQ(axis(0.0f), (std::pair{1.0, 0.25}));
    EXPECT_DOUBLE_EQ(axis(0.15f).first, 0.2);
    EXPECT_DOUBLE_EQ(axis(0.15f).second, 0.05);
    EXPECT_DOUBLE_EQ(axis(0.03f).first, 0.05);
    EXPECT_DOUBLE_EQ(axis(0.03f).second, 0.01);
    EXPECT_DOUBLE_EQ(axis(1.0f / 512).first, 0.002);  // a flat row at T = 512
    EXPECT_DOUBLE_EQ(axis(0.1f).first, 0.1);          // at the round value itself, not the next
}

TEST(ColourScale, AutoStretchesOnlyWhenEveryWeightIsFarBelowOne) {
    EXPECT_EQ(resolveScale(ColourScale::Auto, 0.2f), ColourScale::Stretch);  // under 0.25
    EXPECT_EQ(resolveScale(ColourScale::Auto, 0.25f), ColourScale::Fixed);
    EXPECT_EQ(resolveScale(ColourScale::Log, 0.9f), ColourScale::Log);
    // The decade at or below 0.1 / T, between 1e-8 and 1e-2.
    EXPECT_FLOAT_EQ(logFloor(6), 1e-2f);     // 0.0167 → 1e-2
    EXPECT_FLOAT_EQ(logFloor(512), 1e-4f);   // 1.95e-4 → 1e-4
    EXPECT_FLOAT_EQ(logFloor(4096), 1e-5f);  // 2.44e-5 → 1e-5
    EXPECT_FLOAT_EQ(logFloor(1LL << 40), 1e-8f);
    EXPECT_EQ(parseColourScale("rows", "--colour-scale"), ColourScale::Rows);
    EXPECT_THROW(parseColourScale("linear", "--colour-scale"), InputError);
}

TEST(ColourScale, PositionsOnTheBarByHand) {
    // Two rows of weights and a masked cell (kept as it is).
    const std::vector<float> weights = {0.1f, 0.2f, 0.4f, 0.05f, 0.01f, kMaskedTexel};
    std::vector<float> v = weights;
    toScalePositions(ColourScale::Fixed, v.data(), 2, 3, 0.4f, 0.01f);
    EXPECT_EQ(v, weights);
    toScalePositions(ColourScale::Stretch, v.data(), 2, 3, 0.4f, 0.01f);  // ÷ 0.4
    EXPECT_FLOAT_EQ(v[0], 0.25f);
    EXPECT_FLOAT_EQ(v[2], 1.0f);
    EXPECT_FLOAT_EQ(v[4], 0.025f);
    EXPECT_EQ(v[5], kMaskedTexel);
    v = weights;
    toScalePositions(ColourScale::Rows, v.data(), 2, 3, 0.4f, 0.01f);  // ÷ 0.4, then ÷ 0.05
    EXPECT_FLOAT_EQ(v[1], 0.5f);
    EXPECT_FLOAT_EQ(v[3], 1.0f);
    EXPECT_FLOAT_EQ(v[4], 0.2f);
    EXPECT_EQ(v[5], kMaskedTexel);
    v = weights;
    toScalePositions(ColourScale::Log, v.data(), 2, 3, 0.4f, 0.01f);  // (log10 w + 2) / 2
    EXPECT_NEAR(v[0], 0.5f, 1e-6f);                                   // 0.1
    EXPECT_NEAR(v[3], (std::log10(0.05f) + 2.0f) / 2.0f, 1e-6f);
    EXPECT_EQ(v[4], 0.0f);  // the floor itself
    EXPECT_EQ(v[5], kMaskedTexel);
}

namespace attnviz::core {
namespace {

// 10,000 readable weights: 9,850 of 0.01, 100 of 0.02 and 50 sharp ones of 0.9, shuffled by a
// fixed stride, with 500 masked texels among them.
std::vector<float> longMapWithSharpCells() {
    std::vector<float> v(10500);
    for (std::size_t i = 0; i < v.size(); ++i) {
        const std::size_t k = (i * 7919) % v.size();  // a permutation of 0 … 10,499
        v[i] = k < 500 ? kMaskedTexel : k < 550 ? 0.9f : k < 650 ? 0.02f : 0.01f;
    }
    return v;
}

TEST(ColourScale, AutoClipsALongMapAtItsNinetyNinthPercentileByHand) {
    const std::vector<float> v = longMapWithSharpCells();
    // Nearest rank: the ⌈0.99 · 10,000⌉ = 9,900th smallest readable weight; the 9,851st … 9,950th are 0.02.
    EXPECT_FLOAT_EQ(readableQuantile(v.data(), v.size(), 0.99), 0.02f);
    EXPECT_FLOAT_EQ(readableQuantile(v.data(), v.size(), 0.985), 0.01f);  // the 9,850th
    EXPECT_FLOAT_EQ(readableQuantile(v.data(), v.size(), 1.0), 0.9f);
    EXPECT_FLOAT_EQ(readableQuantile(v.data(), v.size(), 0.0), 0.01f);  // the first, not a masked texel
    EXPECT_DOUBLE_EQ(shareAbove(v.data(), v.size(), 0.02f), 50.0 / 10000.0);
    const ScaleChoice c = chooseScale(ColourScale::Auto, v.data(), v.size(), 100);
    EXPECT_EQ(c.resolved, ColourScale::Stretch);
    EXPECT_FLOAT_EQ(c.top, 0.02f);
    EXPECT_FLOAT_EQ(c.largest, 0.9f);
    EXPECT_DOUBLE_EQ(c.clipped, 0.005);
    EXPECT_EQ(clipCaption(c), "top 0.5 % of weights clipped at 0.02");
    // On the bar: 0.01 halfway, 0.02 and the sharp 0.9 both at the top entry.
    std::vector<float> p = {0.01f, 0.02f, 0.9f};
    toScalePositions(c.resolved, p.data(), 1, 3, c.top, 0.01f);
    EXPECT_EQ(colormapIndex(p[0], 0.0f, 1.0f), 128);
    EXPECT_EQ(colormapIndex(p[1], 0.0f, 1.0f), 255);
    EXPECT_EQ(colormapIndex(p[2], 0.0f, 1.0f), 255);
    // The other scales are the user's: nothing clipped.
    const ScaleChoice s = chooseScale(ColourScale::Stretch, v.data(), v.size(), 100);
    EXPECT_FLOAT_EQ(s.top, 0.9f);
    EXPECT_EQ(s.clipped, 0.0);
    EXPECT_EQ(clipCaption(s), "");
    EXPECT_EQ(chooseScale(ColourScale::Fixed, v.data(), v.size(), 100).resolved, ColourScale::Fixed);
    // A quantile read elsewhere (the map's reference texels) tops the bar in place of the values'
    // own; the clipped share is still the values': 0.9 × 50 and 0.02 × 100 of 10,000.
    const ScaleChoice given = chooseScale(ColourScale::Auto, v.data(), v.size(), 100, 0.015f);
    EXPECT_EQ(given.resolved, ColourScale::Stretch);
    EXPECT_FLOAT_EQ(given.top, 0.015f);
    EXPECT_DOUBLE_EQ(given.clipped, 150.0 / 10000.0);
    EXPECT_EQ(scaleReferenceFactor(77, 77), 1);
    EXPECT_EQ(scaleReferenceFactor(32768, 32768), 32);
    EXPECT_EQ(scaleReferenceFactor(1025, 3), 2);
}

TEST(ColourScale, AutoKeepsShortMapsAndBroadMapsAsBefore) {
    // A short map: 1,000 cells of the same mix keep Auto's rule by the largest weight (0.9: fixed).
    std::vector<float> shortMap(1000, 0.01f);
    for (std::size_t i = 0; i < 5; ++i) shortMap[i * 97] = 0.9f;
    ASSERT_LT(shortMap.size(), kAutoClipFrom);
    const ScaleChoice a = chooseScale(ColourScale::Auto, shortMap.data(), shortMap.size(), 32);
    EXPECT_EQ(a.resolved, ColourScale::Fixed);
    EXPECT_FLOAT_EQ(a.top, 1.0f);
    EXPECT_EQ(a.clipped, 0.0);
    // A long map whose 99th percentile is not far below 1 (4 % of its weights are 0.5): fixed.
    std::vector<float> broad(3000, 0.01f);
    for (std::size_t i = 0; i < 120; ++i) broad[i * 25] = 0.5f;
    EXPECT_EQ(chooseScale(ColourScale::Auto, broad.data(), broad.size(), 3000).resolved, ColourScale::Fixed);
    // A flat long map: stretched to its largest, nothing clipped (as before).
    std::vector<float> flat(4096, 1.0f / 4096);
    const ScaleChoice f = chooseScale(ColourScale::Auto, flat.data(), flat.size(), 4096);
    EXPECT_EQ(f.resolved, ColourScale::Stretch);
    EXPECT_FLOAT_EQ(f.top, 1.0f / 4096);
    EXPECT_EQ(f.clipped, 0.0);
    EXPECT_EQ(clipCaption(f), "");
    // One outlier of 0.05 among them, every weight under 0.25: before, the bar went to 0.05 and
    // the rest was one flat colour; now it tops at the 99th percentile, 1/4096, and the outlier
    // (1 of 4,096 weights: 0.024 %) is clipped.
    flat[7] = 0.05f;
    const ScaleChoice o = chooseScale(ColourScale::Auto, flat.data(), flat.size(), 4096);
    EXPECT_EQ(o.resolved, ColourScale::Stretch);
    EXPECT_FLOAT_EQ(o.top, 1.0f / 4096);
    EXPECT_FLOAT_EQ(o.largest, 0.05f);
    EXPECT_DOUBLE_EQ(o.clipped, 1.0 / 4096);
    EXPECT_EQ(clipCaption(o), "top 0.02 % of weights clipped at 0.00024");
    // Hard attention (more than 99 % zeros, 32 ones): no quantile above 0 to stretch to, fixed.
    std::vector<float> hard(4096, 0.0f);
    for (std::size_t i = 0; i < 32; ++i) hard[i * 128] = 1.0f;
    EXPECT_EQ(chooseScale(ColourScale::Auto, hard.data(), hard.size(), 4096).resolved, ColourScale::Fixed);
}

TEST(ColourScale, AutoNeverStretchesASharpMapBelowTheUniformWeight) {
    // A previous-token head of 4,096 keys pooled by 4 (1,024 × 1,024 block maxima of a causal
    // map): each diagonal block holds a weight near 1, every other readable block at most 1e-9.
    // Its 99th percentile is 1e-9, far below the uniform weight 1/4,096; a stretch to it would
    // draw every block that holds any weight in the top colour. Auto keeps the rule by its largest
    // weight: 0 … 1, nothing clipped.
    const int side = 1024;
    std::vector<float> sharp(static_cast<std::size_t>(side) * side, kMaskedTexel);
    for (int i = 0; i < side; ++i)
        for (int j = 0; j <= i; ++j)
            sharp[static_cast<std::size_t>(i) * side + j] = i == j ? 0.97f : 1e-9f * static_cast<float>(1 + (i + j) % 7);
    ASSERT_LT(readableQuantile(sharp.data(), sharp.size(), kAutoClipQuantile), 1e-8f);
    const ScaleChoice c = chooseScale(ColourScale::Auto, sharp.data(), sharp.size(), 4096);
    EXPECT_EQ(c.resolved, ColourScale::Fixed);
    EXPECT_FLOAT_EQ(c.top, 1.0f);
    EXPECT_EQ(c.clipped, 0.0);
    EXPECT_EQ(clipCaption(c), "");
    // The same with its sharp weights under 0.25 (a head that splits each row over a few keys):
    // stretched to its largest, nothing clipped.
    for (int i = 0; i < side; ++i) sharp[static_cast<std::size_t>(i) * side + i] = 0.2f;
    const ScaleChoice s = chooseScale(ColourScale::Auto, sharp.data(), sharp.size(), 4096);
    EXPECT_EQ(s.resolved, ColourScale::Stretch);
    EXPECT_FLOAT_EQ(s.top, 0.2f);
    EXPECT_EQ(s.clipped, 0.0);
    // Without the map's keys (values that are not one map's) the rule is the quantile's.
    EXPECT_LT(chooseScale(ColourScale::Auto, sharp.data(), sharp.size(), 0).top, 1e-8f);
    // A broad map of the same size whose 99th percentile is just above 1/T is still clipped there.
    std::vector<float> broad(static_cast<std::size_t>(side) * side, 1.5f / 4096);
    for (std::size_t i = 0; i < broad.size(); i += 1000) broad[i] = 0.6f;
    const ScaleChoice b = chooseScale(ColourScale::Auto, broad.data(), broad.size(), 4096);
    EXPECT_EQ(b.resolved, ColourScale::Stretch);
    EXPECT_FLOAT_EQ(b.top, 1.5f / 4096);
    EXPECT_NEAR(b.clipped, 0.001, 1e-5);
}

TEST(ColourScale, QuantileOfAMapLargerThanTheSampleIsNearTheExactOne) {
    // 300 × 300 readable values: a ramp 0 … 0.1 in a scrambled order, and every 900th value 0.9
    // (100 sharp cells); the exact 99th percentile is near 0.1 · 0.99, the clipped share 1 %.
    const std::size_t n = 90000;
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = i % 900 == 0 ? 0.9f : 0.1f * static_cast<float>((i * 7919) % n) / static_cast<float>(n);
    std::vector<float> sorted = v;
    std::sort(sorted.begin(), sorted.end());
    const float exact = sorted[static_cast<std::size_t>(std::ceil(0.99 * n)) - 1];
    const float q = readableQuantile(v.data(), n, 0.99);
    EXPECT_NEAR(q, exact, 0.002 * exact);  // a 65,536 sample's rank error is about ±0.04 % of n
    const ScaleChoice c = chooseScale(ColourScale::Auto, v.data(), n, 300);
    EXPECT_EQ(c.resolved, ColourScale::Stretch);
    EXPECT_NEAR(c.clipped, 0.01, 0.001);
}

}  // namespace
}  // namespace attnviz::core
