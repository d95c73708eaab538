// How the kernels' products are blocked for the caches of the CPU they run on, derived from its
// cache sizes and associativity and the kernels' register tile, never tuned for one machine.
//
// A product out [rows, n] = a [rows, d] · b [d, n] runs (kernels.cpp's productRange), on each
// core's share of the rows:
//   for each block of `depth` steps of d              (kc)
//     for each block of `columns` columns of b         (nc)
//       for each tile of 6 rows of a                   (m_r)
//         for each n_r columns of the block: depth fused multiply-adds per element, 6 × n_r sums
//         held in registers (n_r = 16 with AVX2, 64 with AVX-512)
// The tile of a (6 × depth) is read once per n_r columns, the block of b (depth × columns) once
// per tile, the sums in out once per block of depth. So, after Low, Igual, Smith and
// Quintana-Ortí ("Analytical modeling is enough for high-performance BLIS", 2016), with the roles
// of the operands swapped (here the tile of a stays and b streams, as a row-major result wants):
//   depth: the tile of a must outlive one sweep of n_r columns in L1. An LRU set holds the
//     tile's lines and, between two reads of one of them, the sweep's lines of b; so the two
//     together, 6 · depth + n_r · depth floats, may take all of L1's ways but one (which the
//     sums and the prefetches use). depth = (W₁ − 1)/W₁ · L1 / ((6 + n_r) · 4 bytes), down to a
//     multiple of 16.
//   columns: the block of b must stay in L2 across the share's tiles, beside the tile of a and
//     the sums streaming through: it may take all of L2's ways but two.
//     columns = (W₂ − 2)/W₂ · L2 / (depth · 4 bytes), down to a multiple of n_r.
//   keys: A·V (weighValues) is the same loop with the weights' rows as a and v as b, its keys as
//     the depth: keys = depth.
//   narrowDepth: a result at most one register tile wide (n ≤ n_r: one head's q, k or v from x,
//     or its A·V at d_v = 64 with AVX-512) reads each tile of a once, so there is no tile to keep
//     in L1; blocking its depth would only reload the sums. Only the block of b, depth × n_r,
//     must stay in L2: narrowDepth = (W₂ − 2)/W₂ · L2 / (n_r · 4 bytes), for the depth and the
//     keys of such products.
// Blocking changes no result: a later block of depth continues each element's chain of fused
// multiply-adds where the earlier one left it, so every blocking gives the same bits.
#pragma once

#include <Eigen/Core>

#include <string>

namespace attnviz::core {

// One level of the data cache, as one core sees it.
struct CacheLevel {
    long bytes = 0;  // 0: unknown
    int ways = 0;    // 0: unknown (or fully associative)
};

struct CpuCaches {
    CacheLevel l1, l2, l3;
    std::string source;  // where they were read: "sysfs", "sysconf" or "assumed"
};

// The caches of the CPU this runs on: /sys/devices/system/cpu/cpu0/cache (Linux), else
// sysconf, else an assumption (32 KiB 8-way L1, 512 KiB 8-way L2) named as such.
CpuCaches detectCaches();
// The caches described in a folder laid out as Linux's /sys/devices/system/cpu/cpu0/cache:
// index*/level, type, size ("48K"), ways_of_associativity. Levels it lacks stay unknown.
CpuCaches readCaches(const std::string& folder);

// The blocks of a product (see above); all positive.
// rowTiles: the tiles of six rows one strip sums at a time with AVX-512: 1 (6 × 64, derived
// everywhere) or 2 (12 × 32: half the bytes of b per multiply-add, what a CPU with full-width
// 512-bit units may need from L2; slower on Zen 4's 256-bit units, docs/performance.md). The
// same bits either way; AVX2's 6 × 16 strips take the tiles one at a time.
struct KernelBlocking {
    Eigen::Index depth = 0, columns = 0, keys = 0, narrowDepth = 0;
    int rowTiles = 1;
};
bool operator==(const KernelBlocking& a, const KernelBlocking& b);

// The blocking for `caches` and a register tile of tileRows × tileColumns floats. Unknown sizes
// or ways fall back to the assumption detectCaches names; results are clamped to [16, 1024]
// steps (narrowDepth: [16, 4096]) and [tileColumns, 4096] columns.
KernelBlocking deriveBlocking(const CpuCaches& caches, int tileRows, int tileColumns);

}  // namespace attnviz::core
