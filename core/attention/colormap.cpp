#include "core/attention/colormap.hpp"

#include "core/attention/attention.hpp"
#include "core/base/error.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

namespace attnviz::core {
namespace {

using Anchors = std::array<std::uint32_t, 10>;

// Ten evenly spaced samples (0, 1/9, …, 1) of each map, as 0xRRGGBB.
constexpr Anchors kViridis = {0x440154, 0x482878, 0x3e4989, 0x31688e, 0x26828e, 0x1f9e89, 0x35b779, 0x6ece58, 0xb5de2b, 0xfde725};
constexpr Anchors kMagma = {0x000004, 0x180f3d, 0x440f76, 0x721f81, 0x9e2f7f, 0xcd4071, 0xf1605d, 0xfd9668, 0xfeca8d, 0xfcfdbf};
constexpr Anchors kCividis = {0x00224e, 0x123570, 0x3b496c, 0x575d6d, 0x707173, 0x8a8779, 0xa69d75, 0xc4b56c, 0xe4cf5b, 0xfee838};

// ColorBrewer's RdBu, eleven classes, blue (negative) through white (0) to red (positive):
// two-sided, and readable with red-green colour blindness.
constexpr std::array<std::uint32_t, 11> kDiverging = {0x053061, 0x2166ac, 0x4393c3, 0x92c5de, 0xd1e5f0, 0xf7f7f7,
                                                      0xfddbc7, 0xf4a582, 0xd6604d, 0xb2182b, 0x67001f};

template <std::size_t N>
ColormapTable interpolate(const std::array<std::uint32_t, N>& anchors) {
    constexpr int last = static_cast<int>(N) - 1;
    ColormapTable table{};
    for (int i = 0; i < 256; ++i) {
        const double t = i / 255.0 * last;
        const int a = std::min(static_cast<int>(t), last - 1);
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
    static const ColormapTable viridis = interpolate(kViridis), magma = interpolate(kMagma), cividis = interpolate(kCividis),
                               gray = grayscale(), diverging = interpolate(kDiverging);
    switch (kind) {
        case ColormapKind::Viridis: return viridis;
        case ColormapKind::Magma: return magma;
        case ColormapKind::Grayscale: return gray;
        case ColormapKind::Cividis: return cividis;
        case ColormapKind::Diverging: return diverging;
    }
    return viridis;
}

Rgb colormapColor(ColormapKind kind, float v, float lo, float hi) {
    return colormapTable(kind)[static_cast<std::size_t>(colormapIndex(v, lo, hi))];
}

namespace {

constexpr std::uint32_t rgba(Rgb c, std::uint32_t alpha) {
    return static_cast<std::uint32_t>(c.r) | static_cast<std::uint32_t>(c.g) << 8 | static_cast<std::uint32_t>(c.b) << 16 | alpha << 24;
}

}  // namespace

void colormapTexels(ColormapKind kind, const float* values, std::size_t n, float lo, float hi, std::uint32_t* out) {
    // Entry 256 is a masked texel's.
    std::array<std::uint32_t, 257> packed{};
    const ColormapTable& table = colormapTable(kind);
    for (std::size_t i = 0; i < table.size(); ++i) packed[i] = rgba(table[i], 255);
    packed[256] = rgba(kMaskedPaper, 0);
    const ColormapScale scale = colormapScale(lo, hi);
    std::size_t i = 0;
#if defined(__AVX2__) && defined(__FMA__)
    // colormapIndexScaled on eight values at once (the compiler keeps that loop scalar), and the
    // table read by a gather.
    const __m256 vScale = _mm256_set1_ps(scale.scale), vOffset = _mm256_set1_ps(scale.offset), v255 = _mm256_set1_ps(255.0f),
                 vZero = _mm256_setzero_ps(), vMaskedBelow = _mm256_set1_ps(kMaskedBelow);
    const __m256i vMaskedEntry = _mm256_set1_epi32(256);
    const auto* table32 = reinterpret_cast<const int*>(packed.data());
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(values + i);
        __m256 x = _mm256_fmadd_ps(v, vScale, vOffset);
        x = _mm256_and_ps(x, _mm256_cmp_ps(x, vZero, _CMP_GT_OQ));          // x > 0 ? x : 0 (NaN: 0)
        x = _mm256_blendv_ps(v255, x, _mm256_cmp_ps(x, v255, _CMP_LT_OQ));  // x < 255 ? x : 255
        const __m256i masked = _mm256_castps_si256(_mm256_cmp_ps(v, vMaskedBelow, _CMP_LT_OQ));
        const __m256i k = _mm256_blendv_epi8(_mm256_cvtps_epi32(x), vMaskedEntry, masked);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm256_i32gather_epi32(table32, k, 4));
    }
#endif
    for (; i < n; ++i) out[i] = packed[isMaskedTexel(values[i]) ? 256 : static_cast<std::size_t>(colormapIndexScaled(values[i], scale))];
}

const char* colourScaleName(ColourScale scale) {
    switch (scale) {
        case ColourScale::Auto: return "auto";
        case ColourScale::Fixed: return "fixed";
        case ColourScale::Stretch: return "stretch";
        case ColourScale::Rows: return "rows";
        case ColourScale::Log: return "log";
    }
    return "auto";
}

ColourScale parseColourScale(const std::string& name, const std::string& where) {
    for (int i = 0; i < kColourScaleCount; ++i)
        if (name == colourScaleName(static_cast<ColourScale>(i))) return static_cast<ColourScale>(i);
    throw InputError(where, "unknown colour scale " + quoteValue(name) + " (known: auto, fixed, stretch, rows, log)");
}

ColourScale resolveScale(ColourScale scale, float maxWeight) {
    if (scale != ColourScale::Auto) return scale;
    return maxWeight < kAutoStretchBelow ? ColourScale::Stretch : ColourScale::Fixed;
}

float readableQuantile(const float* values, std::size_t n, double q) {
    std::vector<float> sample;
    std::size_t readable = 0;
    for (std::size_t i = 0; i < n; ++i) readable += isMaskedTexel(values[i]) ? 0 : 1;
    if (readable == 0) return 0.0f;
    if (readable <= kQuantileSample) {
        sample.reserve(readable);
        for (std::size_t i = 0; i < n; ++i)
            if (!isMaskedTexel(values[i])) sample.push_back(values[i]);
    } else {
        // Weyl's sequence frac(k·φ) of indices, the golden ratio's: evenly spread for every count,
        // in step with no row length; a masked index is passed over
        sample.reserve(kQuantileSample);
        const double phi = 0.6180339887498949;
        double u = 0.0;
        for (std::size_t k = 0; sample.size() < kQuantileSample && k < 4 * kQuantileSample; ++k) {
            u += phi;
            u -= std::floor(u);
            const std::size_t i = std::min(n - 1, static_cast<std::size_t>(u * static_cast<double>(n)));
            if (!isMaskedTexel(values[i])) sample.push_back(values[i]);
        }
        if (sample.empty()) return 0.0f;
    }
    const double rank = std::ceil(std::clamp(q, 0.0, 1.0) * static_cast<double>(sample.size()));
    const auto k = static_cast<std::size_t>(std::clamp(rank, 1.0, static_cast<double>(sample.size()))) - 1;
    std::nth_element(sample.begin(), sample.begin() + static_cast<std::ptrdiff_t>(k), sample.end());
    return sample[k];
}

double shareAbove(const float* values, std::size_t n, float top) {
    std::size_t readable = 0, above = 0;
    for (std::size_t i = 0; i < n; ++i) {
        if (isMaskedTexel(values[i])) continue;
        ++readable;
        above += values[i] > top ? 1 : 0;
    }
    return readable == 0 ? 0.0 : static_cast<double>(above) / static_cast<double>(readable);
}

int scaleReferenceFactor(long long queries, long long keys) {
    const long long longest = std::max({1LL, queries, keys});
    return static_cast<int>((longest + kScaleReferenceTexels - 1) / kScaleReferenceTexels);
}

ScaleChoice chooseScale(ColourScale scale, const float* values, std::size_t n, long long keys, float given) {
    ScaleChoice choice;
    std::size_t readable = 0;
    for (std::size_t i = 0; i < n; ++i)
        if (!isMaskedTexel(values[i])) {
            choice.largest = std::max(choice.largest, values[i]);
            ++readable;
        }
    choice.resolved = resolveScale(scale, choice.largest);
    if (choice.resolved == ColourScale::Stretch) choice.top = choice.largest;
    if (scale != ColourScale::Auto || readable < kAutoClipFrom) return choice;
    // a long map: the bar tops at the quantile when the weights below it are far below 1, whatever
    // the few largest are (sharp rows, or a single outlier under a stretch to the largest)
    const float quantile = given > 0.0f ? given : readableQuantile(values, n, kAutoClipQuantile);
    if (!(quantile > 0.0f) || quantile >= kAutoStretchBelow || quantile >= choice.largest) return choice;
    if (keys > 0 && static_cast<double>(quantile) * static_cast<double>(keys) < 1.0) return choice;  // a sharp map
    choice.resolved = ColourScale::Stretch;
    choice.top = quantile;
    choice.clipped = shareAbove(values, n, quantile);
    return choice;
}

std::string clipCaption(const ScaleChoice& choice) {
    if (!(choice.clipped > 0.0)) return {};
    const double percent = choice.clipped * 100.0;
    char buffer[96];
    std::snprintf(buffer, sizeof buffer, "top %.*f %% of weights clipped at %.2g", percent < 0.095 ? 2 : 1, percent,
                  static_cast<double>(choice.top));
    return buffer;
}

float logFloor(long long keys) {
    const double decade = std::floor(std::log10(0.1 / static_cast<double>(std::max(1LL, keys))));
    return static_cast<float>(std::pow(10.0, std::clamp(decade, -8.0, -2.0)));
}

WeightAxis weightAxis(float largest) {
    WeightAxis axis;
    if (!(largest > 0.0f) || largest >= kAutoStretchBelow) return axis;
    const double decade = std::pow(10.0, std::floor(std::log10(largest)));
    for (const double m : {1.0, 2.0, 5.0, 10.0})
        if (m * decade >= largest * (1.0 - 1e-6)) {
            axis.top = m * decade;
            axis.step = axis.top / (m == 2.0 ? 4.0 : 5.0);
            break;
        }
    return axis;
}

void toScalePositions(ColourScale resolved, float* values, long long rows, long long cols, float maxWeight, float floor) {
    const auto n = static_cast<std::size_t>(rows * cols);
    switch (resolved) {
        case ColourScale::Auto:
        case ColourScale::Fixed: return;
        case ColourScale::Stretch: {
            const float top = std::max(maxWeight, 1e-30f);
            for (std::size_t i = 0; i < n; ++i)
                if (!isMaskedTexel(values[i])) values[i] /= top;
            return;
        }
        case ColourScale::Rows:
            for (long long r = 0; r < rows; ++r) {
                float* row = values + r * cols;
                float top = 0.0f;
                for (long long c = 0; c < cols; ++c)
                    if (!isMaskedTexel(row[c])) top = std::max(top, row[c]);
                top = std::max(top, 1e-30f);
                for (long long c = 0; c < cols; ++c)
                    if (!isMaskedTexel(row[c])) row[c] /= top;
            }
            return;
        case ColourScale::Log: {
            const float lo = std::log10(floor);
            for (std::size_t i = 0; i < n; ++i)
                if (!isMaskedTexel(values[i])) values[i] = std::clamp((std::log10(std::max(values[i], floor)) - lo) / -lo, 0.0f, 1.0f);
            return;
        }
    }
}

const char* colormapName(ColormapKind kind) {
    switch (kind) {
        case ColormapKind::Viridis: return "viridis";
        case ColormapKind::Magma: return "magma";
        case ColormapKind::Grayscale: return "grayscale";
        case ColormapKind::Cividis: return "cividis";
        case ColormapKind::Diverging: return "diverging";
    }
    return "viridis";
}

ColormapKind parseColormap(const std::string& name, const std::string& where) {
    for (int i = 0; i < kColormapCount; ++i)
        if (name == colormapName(static_cast<ColormapKind>(i))) return static_cast<ColormapKind>(i);
    throw InputError(where, "unknown colormap '" + name + "' (known: viridis, magma, grayscale, cividis)");
}

}  // namespace attnviz::core
