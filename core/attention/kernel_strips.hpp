// One strip of a product for the register-tiled kernels (kernels.cpp): six rows of the result
// across panels of 16 columns, out[0..6)[0..16·panels) = a[0..6)[0..steps) · panels.
// Two builds exist: AVX2 (kernels.cpp) and AVX-512 (kernels_avx512.cpp, compiled for AVX-512 and
// called only on a CPU that has it). In both, every element of the result is one chain of fused
// multiply-adds over the steps, in order, so the two give the same bits.
// The panels hold floats, or a weight matrix's halves or bfloat16s as its checkpoint stores them,
// widened to float in registers as they are loaded (F16C's vcvtph2ps; a bfloat16 is a float's
// upper 16 bits): the same chain of multiply-adds as over the widened floats.
// Plain pointers and integers only: kernels_avx512.cpp includes no Eigen and no standard-library
// template, whose inline functions, compiled there for AVX-512, the linker could otherwise pick
// for callers on any CPU.
#pragma once

#include <cstddef>

namespace attnviz::core {

using KernelIndex = std::ptrdiff_t;

// The element type of a strip's panels (kernels.hpp's WeightType, as the strips see it).
enum class PanelElement : unsigned char { F32, F16, BF16 };

// a: six rows of the left operand, `steps` long, as one of two layouts:
//   interleaved (lda = 0): a tile [steps][6], a(r, s) = a[6 s + r] (packRows' tiles, q);
//   rows (lda > 0): a(r, s) = a[r lda + s] (a block of weights).
// panels: `panelCount` panels of [steps][16] elements of `element`, `panelStride` elements apart
// (BF16: rows in interleaved pairs, as PackedWeights holds them; `panels` at an even row);
// halves and bfloat16s only with the interleaved layout (a product's weights).
// out: rows `ldo` floats apart; accumulate: add to the sums already in out instead of starting
// from zero (A·V's later chunks of keys, a product's later blocks of depth), which continues
// each element's chain of multiply-adds.
struct StripArgs {
    const float* a;
    KernelIndex lda;
    const void* panels;
    KernelIndex panelStride, panelCount, steps;
    float* out;
    KernelIndex ldo;
    bool accumulate;
    PanelElement element = PanelElement::F32;
    // A second tile of six rows, in a's layout, and its out (ldo apart): one strip of twelve rows.
    const float* a2 = nullptr;
    float* out2 = nullptr;
    // The tile's rows that count, 1 to 6: a short tile (the rows before a core's first tile of six
    // or after its last) reads and writes only its first `rows`. Interleaved layout, no a2.
    int rows = 6;
};

namespace avx512 {
// The AVX-512 build of a strip: 6 rows × 64 columns (four panels) in 24 registers at a time.
void strip(const StripArgs& args);
// out[i] = row i of src [rows, cols] (rows `cols` elements apart) · x [cols], for i in [0, rows):
// kernels.cpp's rowsByVector, each sum the same chain of fused multiply-adds in 16 lanes.
void rowsByVector(const void* src, PanelElement element, KernelIndex rows, KernelIndex cols, const float* x, float* out);
}  // namespace avx512

}  // namespace attnviz::core
