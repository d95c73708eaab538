// One strip of a product for the register-tiled kernels (kernels.cpp): six rows of the result
// across panels of 16 columns, out[0..6)[0..16·panels) = a[0..6)[0..steps) · panels.
// Two builds exist: AVX2 (kernels.cpp) and AVX-512 (kernels_avx512.cpp, compiled for AVX-512 and
// called only on a CPU that has it). In both, every element of the result is one chain of fused
// multiply-adds over the steps, in order, so the two give the same bits.
// Plain pointers and integers only: kernels_avx512.cpp includes no Eigen and no standard-library
// template, whose inline functions, compiled there for AVX-512, the linker could otherwise pick
// for callers on any CPU.
#pragma once

#include <cstddef>

namespace attnviz::core {

using KernelIndex = std::ptrdiff_t;

// a: six rows of the left operand, `steps` long, as one of two layouts:
//   interleaved (lda = 0): a tile [steps][6], a(r, s) = a[6 s + r] (packRows' tiles, q);
//   rows (lda > 0): a(r, s) = a[r lda + s] (a block of weights).
// panels: `panelCount` panels of [steps][16], `panelStride` floats apart.
// out: rows `ldo` floats apart; accumulate: add to the sums already in out instead of starting
// from zero (A·V's later chunks of keys, a product's later blocks of depth), which continues
// each element's chain of multiply-adds.
struct StripArgs {
    const float* a;
    KernelIndex lda;
    const float* panels;
    KernelIndex panelStride, panelCount, steps;
    float* out;
    KernelIndex ldo;
    bool accumulate;
};

namespace avx512 {
// The AVX-512 build of a strip: 6 rows × 64 columns (four panels) in 24 registers at a time.
void strip(const StripArgs& args);
}  // namespace avx512

}  // namespace attnviz::core
