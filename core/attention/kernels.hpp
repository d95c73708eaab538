// The forward pass's products as register-tiled AVX2 kernels: scores = q kᵀ, output = weights v
// and the projections x W.
//
// Eigen repacks its operands on every call, and the forward pass calls it once per block of
// query rows (so that the block's scores are still in cache for the softmax and A·V), and once
// per head for the projections (x repacked eight times). Here k, v and the weights' slices are
// packed once per head into panels of 16 columns, x once per model into tiles of 6 rows, and each
// 6 × 16 tile of the result is accumulated in AVX2 registers. A causal block of A·V reads only
// the keys its rows can see. Ratios against Eigen: BM_ScoresByBlocks and BM_ValuesByBlocks.
// On a CPU with AVX-512 the tiles are 6 × 64 in 24 of its 32 registers (kernels_avx512.cpp).
// Without AVX2 and FMA (a portable build) the same functions use Eigen's product.
#pragma once

#include "core/base/matrix.hpp"
#include "core/base/pages.hpp"

#include <vector>

namespace attnviz::core {

// The instruction set the kernels run on: AVX-512 where the CPU has it, else AVX2 (or, in a
// portable build, none: Eigen's product). One setting for the process, chosen when it starts.
// Every product gives the same bits with AVX2 and AVX-512: each element is the same chain of
// fused multiply-adds.
enum class KernelIsa { Portable, Avx2, Avx512 };
KernelIsa kernelIsa();
// Whether this CPU and build can run the kernels on `isa` (Portable: only a portable build).
bool hasKernelIsa(KernelIsa isa);
// For tests and benchmarks comparing the two: uses `isa` if hasKernelIsa(isa) (else the nearest
// below); returns the one now in use. Not while a product runs.
KernelIsa useKernelIsa(KernelIsa isa);
const char* kernelIsaName(KernelIsa isa);  // "avx512", "avx2", "portable"

// Packed operands: megabytes for a model's weights or a long sequence's keys, in huge pages.
using PackedFloats = std::vector<float, PageAllocator<float>>;

// k: [T_k, d_k] repacked as ⌊T_k/16⌋ panels of [d_k][16] (key-minor); the last T_k mod 16 keys
// are not packed (scoreRows reads them from k).
struct PackedKeys {
    PackedFloats panels;
};
void packKeys(const MatRef& k, PackedKeys& out);

// scores: [rows, T_k] = q [rows, d_k] · kᵀ, for one block of queries; `packed` is packKeys(k).
// With AVX2, every score is the same chain of fused multiply-adds, d = 0 … d_k - 1, whatever the
// block, the row's place in a tile or the key's place in a panel: permuting the tokens permutes
// the scores exactly.
void scoreRows(const MatRef& q, const MatRef& k, const PackedKeys& packed, Eigen::Ref<Mat> scores);

// b: [n, m] repacked as ⌊m/16⌋ panels of its columns, [n][16] each; the last m mod 16 columns
// are not packed (the products read them from b). For A·V, b = v; for a projection, b = the
// head's slice of a weight matrix.
struct PackedColumns {
    PackedFloats panels;
    Eigen::Index rows = 0, cols = 0;  // b's shape
};
void packColumns(const MatRef& b, PackedColumns& out);
// Whether `packed` has b's shape (packColumns(b) or of another matrix of that shape).
bool packs(const PackedColumns& packed, const MatRef& b);

// a: [rows, d] with its ⌊rows/6⌋ full tiles of six rows interleaved, [d][6] each (what
// scoreRows packs q into on every call); packed once when many products read the same rows.
struct PackedRows {
    PackedFloats tiles;
    Eigen::Index rows = 0, cols = 0;  // a's shape
};
void packRows(const MatRef& a, PackedRows& out);
// Whether `packed` has a's shape.
bool packs(const PackedRows& packed, const MatRef& a);

// out: [rows, m] = a [rows, d] · b [d, m]; pb = packColumns(b), pa = packRows(a) (or null, or
// another shape's: a's tiles are packed here). With AVX2 every element is one chain of fused
// multiply-adds over d, however a was packed.
void multiplyPacked(const MatRef& a, const PackedRows* pa, const MatRef& b, const PackedColumns& pb, Eigen::Ref<Mat> out);

// out: [rows, d_v] = weights [rows, T_k] · v [T_k, d_v], for one block of queries; `packed` is
// packColumns(v). causalFrom >= 0: the block's first row is query causalFrom of a causal mask, so
// row r's weights are zero past key causalFrom + r and those keys are not read.
// With AVX2, every output is the same chain of fused multiply-adds over the keys it reads, in
// key order, whatever the block or the row's place in a tile.
void weighValues(const MatRef& weights, const MatRef& v, const PackedColumns& packed, Eigen::Ref<Mat> out, Eigen::Index causalFrom = -1);

}  // namespace attnviz::core
