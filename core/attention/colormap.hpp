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

// The first kColormapCount are the user's choice for weights (0 … 1); Diverging is for signed
// values, -r … r with white at 0 (the linear lab's fast-weight matrix).
enum class ColormapKind : std::uint8_t { Viridis, Magma, Grayscale, Cividis, Diverging };
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

// How weights become positions on the colour bar. Fixed: 0 … 1, comparable across heads and
// sentences (seed 000's maps). Stretch: 0 … the largest weight shown. Rows: each row over its
// own largest weight (where every row's pattern shows, at any T). Log: log10 from a floor to 1.
// Auto: Stretch when the largest weight is far below 1 (under kAutoStretchBelow: a long
// sentence, where every weight is near 1/T), Fixed otherwise; but a long map (at least
// kAutoClipFrom readable weights) is stretched to the kAutoClipQuantile quantile of its weights
// when that is under kAutoStretchBelow and below the largest, the few weights above it (sharp
// rows, outliers) drawn in the top colour (chooseScale). Never below the uniform weight 1/T of
// the map's T keys: a sharp head (each row's weight on one or a few keys, 99 % of its cells near
// 0) keeps the rule by its largest weight, where a stretch to its 99th percentile (2e-10 on a
// previous-token head of 16,384 keys) would clip every cell that holds any weight.
enum class ColourScale : std::uint8_t { Auto, Fixed, Stretch, Rows, Log };
inline constexpr int kColourScaleCount = 5;
inline constexpr float kAutoStretchBelow = 0.25f;
// The 99th percentile: at most one weight in a hundred is clipped, so the top colour stays rare,
// while the sharp rows that decide a long map's largest weight (one or a few cells each: under
// 2/T of a causal map's cells, 0.1 % at T = 2,048) are far fewer than 1 % and no longer decide
// the scale. Measured on random-heads at 2,048 tokens: each head's largest weight is 0.28 … 0.55,
// its 99th percentile 0.006 … 0.008 (12 … 16 × the mean 1/T), the 99.5th about 1.55 × and the
// 99.9th about 4 × the 99th; each step up dims the bulk of the map by that factor for a few
// more unclipped cells.
inline constexpr double kAutoClipQuantile = 0.99;
// A map shorter than this (46 × 46, or a causal 64) keeps Auto's rule by its largest weight: every
// cell is on screen, most with their number, and none is clipped (a 99th percentile of fewer
// cells is the largest or one of the few next to it).
inline constexpr std::size_t kAutoClipFrom = 2048;
// The quantile is read from at most this many readable values, spread over the map by a
// low-discrepancy sequence (no stride that could fall in step with the rows).
inline constexpr std::size_t kQuantileSample = std::size_t{1} << 16;
const char* colourScaleName(ColourScale scale);  // "auto", "fixed", "stretch", "rows", "log"
// Throws InputError(where, …) on an unknown name.
ColourScale parseColourScale(const std::string& name, const std::string& where);
// Auto made definite by the largest weight shown; the others as they are.
ColourScale resolveScale(ColourScale scale, float maxWeight);

// The q-quantile (nearest rank: the ⌈q·n⌉-th smallest, at least the first) of the n readable
// values (masked texels left out), from all of them when there are at most kQuantileSample, else
// from that many spread over them; 0 when none is readable.
float readableQuantile(const float* values, std::size_t n, double q);
// The share of the readable values that are above `top` (0 when none is readable).
double shareAbove(const float* values, std::size_t n, float top);

// A scale made definite for one map's values (masked texels left out): the scale, the weight at
// the top of its bar (Stretch: the largest weight, or Auto's quantile; else 1), the largest
// readable value, and the share of readable values above the top (drawn in the top colour).
struct ScaleChoice {
    ColourScale resolved = ColourScale::Fixed;
    float top = 1.0f;
    float largest = 0.0f;
    double clipped = 0.0;
};
// keys: the map's keys T (the texels may be blocks of them); 0 when the values are not one map's.
// quantile > 0: Auto's quantile as read elsewhere (the map's block maxima at its reference factor,
// scaleReferenceFactor), in place of the values' own: texels pooled for a screen then top the bar
// at the same weight whatever the window's size; the clipped share is still the values'.
ScaleChoice chooseScale(ColourScale scale, const float* values, std::size_t n, long long keys, float quantile = 0.0f);
// The block size Auto's quantile of a long map is read at: the least that pools its longer side to
// at most kScaleReferenceTexels (1024) texels.
inline constexpr long long kScaleReferenceTexels = 1024;
int scaleReferenceFactor(long long queries, long long keys);
// "top 0.8 % of weights clipped at 0.043" for a clipping choice; "" otherwise.
std::string clipCaption(const ScaleChoice& choice);
// The log scale's floor for a map of `keys` columns: the decade at or below 0.1 / keys, at most
// 0.01 and at least 1e-8.
float logFloor(long long keys);
// The top of a bar chart's weight axis, as the auto scale decides: 1 when the largest weight is at
// least kAutoStretchBelow (or nothing is positive), else the smallest 1, 2 or 5 × 10^e at or
// above it, so that a flat row of 1/512 is not a row of slivers.
struct WeightAxis {
    double top = 1.0;
    double step = 0.25;  // between ticks: top / 5, or top / 4 for a top of 2 × 10^e
};
WeightAxis weightAxis(float largest);

// Rewrites rows × cols weights (row-major; masked texels kept) as their positions 0 … 1 on the
// colour bar under a resolved scale: w / maxWeight (Stretch; above 1 for a clipped weight, which
// the colormap's index clamps to the top colour), w / the row's largest (Rows), or
// (log10 w − log10 floor) / −log10 floor clamped to 0 … 1 (Log). Fixed leaves them.
void toScalePositions(ColourScale resolved, float* values, long long rows, long long cols, float maxWeight, float floor);

const char* colormapName(ColormapKind kind);
// Throws InputError(where, …) on an unknown name.
ColormapKind parseColormap(const std::string& name, const std::string& where);

}  // namespace attnviz::core
