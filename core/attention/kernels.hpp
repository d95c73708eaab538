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
// A checkpoint's weights stay in their file's element type (F32, F16 or BF16): packWeights packs
// them as they are, and multiplyWeights widens each panel row to float in registers (F16C's
// vcvtph2ps; a bfloat16 by a 16-bit shift) inside the same strips, so a BF16 model is never held
// widened; multiplyRowsByVector reads a vocabulary's matrix where it lies for the logits.
// Ratio against the F32 product: BM_MultiplyWeights.
// Without AVX2 and FMA (a portable build) the same functions use Eigen's product.
#pragma once

#include "core/attention/blocking.hpp"
#include "core/base/matrix.hpp"
#include "core/base/pages.hpp"

#include <cstddef>
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

// The blocking the products use (blocking.hpp): derived once from this CPU's caches for the
// register tile of the instruction set in use (6 × 16 with AVX2, 6 × 64 with AVX-512).
KernelBlocking kernelBlocking();
// The CPU's caches the blocking was derived from.
const CpuCaches& kernelCaches();
// For tests and benchmarks: products use `blocking` (each field > 0) instead of the derived one,
// or the derived one again for a default KernelBlocking; returns the one in use before. Not
// while a product runs. Every blocking gives the same bits.
KernelBlocking useKernelBlocking(const KernelBlocking& blocking);

// Packed operands: megabytes for a model's weights or a long sequence's keys, in huge pages.
using PackedFloats = std::vector<float, PageAllocator<float>>;
using PackedBytes = std::vector<std::byte, PageAllocator<std::byte>>;

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
// The queries of one such block when its scores [rows, keys], then its weights, should stay in
// cache for the softmax and A·V that read them back: 2^17 floats' worth, a multiple of the tiles
// of six rows, from 6 up to `most`.
Eigen::Index scoreBlockRows(Eigen::Index keys, Eigen::Index most);

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

// The rows of a register tile: a block of rows that starts at a multiple of it reads whole
// packed tiles.
inline constexpr Eigen::Index kKernelTileRows = 6;

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
// Rows [r0, r1) of that product alone, on the calling core (the caller shares the rows among
// its cores, as the scenario's projections do when the heads do not fall evenly to the cores):
// the same bits as those rows of multiplyPacked.
void multiplyPackedRows(const MatRef& a, const PackedRows* pa, const MatRef& b, const PackedColumns& pb, Eigen::Ref<Mat> out,
                        Eigen::Index r0, Eigen::Index r1);

// out: [rows, d_v] = weights [rows, T_k] · v [T_k, d_v], for one block of queries; `packed` is
// packColumns(v). causalFrom >= 0: the block's first row is query causalFrom of a causal mask, so
// row r's weights are zero past key causalFrom + r and those keys are not read.
// With AVX2, every output is the same chain of fused multiply-adds over the keys it reads, in
// key order, whatever the block or the row's place in a tile.
void weighValues(const MatRef& weights, const MatRef& v, const PackedColumns& packed, Eigen::Ref<Mat> out, Eigen::Index causalFrom = -1);

// The same two products over a tile of keys [j0, j0 + n), j0 a multiple of 16 (FlashAttention's
// tiles: no row of scores or weights is ever whole), on the calling core:
// scores [rows, n] = q · k[j0, j0 + n)ᵀ, each score the same chain of fused multiply-adds as
// scoreRows' (pq = packRows(q) once for many tiles, or null; `packed` = packKeys(k));
// out [rows, d_v] = weights [rows, n] · v[j0, j0 + n) (+ out when accumulating; `packed` =
// packColumns(v)).
void scoreTile(const MatRef& q, const PackedRows* pq, const MatRef& k, const PackedKeys& packed, Eigen::Index j0, Eigen::Ref<Mat> scores);
void weighValueTile(const MatRef& weights, const MatRef& v, const PackedColumns& packed, Eigen::Index j0, Eigen::Ref<Mat> out,
                    bool accumulate);

// The element type a weight matrix is stored in (as its checkpoint holds it).
enum class WeightType { F32, F16, BF16 };
std::size_t weightTypeBytes(WeightType type);  // 4, 2, 2

// A weight matrix b [k, n] (k = the product's depth, n = its output columns) packed for
// multiplyWeights in its own element type: ⌈n/16⌉ panels of [k][16] elements, the last one padded
// with zero columns, so that the product never reads the source again (its mapped pages can be
// given back). A BF16 panel holds its rows in pairs: rows 2m and 2m + 1 as 32 elements, b(2m, l)
// at 2l and b(2m + 1, l) at 2l + 1 (a last odd row as it is), so that one 64-byte load widens to
// both rows' 16 floats with one instruction each (a shift and a mask), where 16 elements of one
// row need two (packedWeightIndex).
struct PackedWeights {
    PackedBytes panels;
    Eigen::Index rows = 0, cols = 0;  // b's shape [k, n]
    WeightType type = WeightType::F32;
};
// The element of pw.panels that holds b(c, j).
Eigen::Index packedWeightIndex(const PackedWeights& pw, Eigen::Index c, Eigen::Index j);
// src: `type` elements, row-major, at any alignment. transposed = false: src is b itself, [k, n]
// (GPT-2's Conv1D layout, [in, out]); transposed = true: src is [n, k] and b = srcᵀ (nn.Linear's
// [out, in]), each panel's 16 rows of src read in order and transposed 8 × 8 (4 × 4 for F32) in
// registers, so that neither side is read across the cache. Panels are packed on every core.
// BM_PackWeights.
void packWeights(const void* src, WeightType type, Eigen::Index k, Eigen::Index n, bool transposed, PackedWeights& out);

// out: [rows, n] = a [rows, k] · b [k, n], b = pb's matrix with its elements widened to float in
// registers. pa: packRows(a) or null (or another shape's), as for multiplyPacked; out may be a
// block of a larger matrix. Every element is the same chain of fused multiply-adds as
// multiplyPacked(a, pa, B, packColumns(B), out) with B = b widened to F32 (halfToFloat,
// bfloat16ToFloat): the same bits, with AVX2 and with AVX-512 (a half NaN's payload aside:
// vcvtph2ps makes a signalling NaN quiet).
void multiplyWeights(const MatRef& a, const PackedRows* pa, const PackedWeights& pb, Eigen::Ref<Mat> out);

// out: [rows] = src [rows, cols] · x [cols], src row-major in `type` at any alignment (a
// vocabulary's logits against the embedding or lm_head matrix where it lies in the mapped file),
// rows split over the cores. Each output is one fixed sum: 16 lanes, lane l the chain of fused
// multiply-adds over columns l, l + 16, …, then the lanes added pairwise (l + 8, l + 4, l + 2,
// l + 1): the same bits whatever the thread count, with AVX2 and with AVX-512.
void multiplyRowsByVector(const void* src, WeightType type, Eigen::Index rows, Eigen::Index cols, const float* x, float* out);

// out: [n] = row r of src [*, n] (row-major in `type`) widened to float exactly, as halfToFloat
// and bfloat16ToFloat do (an embedding row).
void widenRow(const void* src, WeightType type, Eigen::Index n, Eigen::Index r, float* out);

}  // namespace attnviz::core
