#include "core/kernels.hpp"

#include <algorithm>
#include <cmath>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define ATTNVIZ_KERNELS_AVX2 1
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

namespace attnviz::core {

#ifdef ATTNVIZ_KERNELS_AVX2
namespace {

constexpr Eigen::Index kPanel = 16;   // keys per panel: two 8-float registers
constexpr Eigen::Index kTileRows = 6;  // queries per tile: 6 × 2 accumulators + 2 panel rows + 1 broadcast
constexpr Eigen::Index kChunk = 256;   // keys per pass over a block's rows: 64 KiB of panels at d_k = 64

// out[0..6)[0..16) = q[0..6) · panelᵀ; q rows are `ldq` floats apart, out rows `ldo`.
// panel: [d_k][16].
void tile6(const float* q, Eigen::Index ldq, const float* panel, Eigen::Index dk, float* out, Eigen::Index ldo) {
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
    __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
    const float *q0 = q, *q1 = q + ldq, *q2 = q + 2 * ldq, *q3 = q + 3 * ldq, *q4 = q + 4 * ldq, *q5 = q + 5 * ldq;
    for (Eigen::Index d = 0; d < dk; ++d) {
        const __m256 b0 = _mm256_loadu_ps(panel + d * kPanel), b1 = _mm256_loadu_ps(panel + d * kPanel + 8);
        __m256 a = _mm256_broadcast_ss(q0 + d);
        c00 = _mm256_fmadd_ps(a, b0, c00), c01 = _mm256_fmadd_ps(a, b1, c01);
        a = _mm256_broadcast_ss(q1 + d);
        c10 = _mm256_fmadd_ps(a, b0, c10), c11 = _mm256_fmadd_ps(a, b1, c11);
        a = _mm256_broadcast_ss(q2 + d);
        c20 = _mm256_fmadd_ps(a, b0, c20), c21 = _mm256_fmadd_ps(a, b1, c21);
        a = _mm256_broadcast_ss(q3 + d);
        c30 = _mm256_fmadd_ps(a, b0, c30), c31 = _mm256_fmadd_ps(a, b1, c31);
        a = _mm256_broadcast_ss(q4 + d);
        c40 = _mm256_fmadd_ps(a, b0, c40), c41 = _mm256_fmadd_ps(a, b1, c41);
        a = _mm256_broadcast_ss(q5 + d);
        c50 = _mm256_fmadd_ps(a, b0, c50), c51 = _mm256_fmadd_ps(a, b1, c51);
    }
    _mm256_storeu_ps(out, c00), _mm256_storeu_ps(out + 8, c01), out += ldo;
    _mm256_storeu_ps(out, c10), _mm256_storeu_ps(out + 8, c11), out += ldo;
    _mm256_storeu_ps(out, c20), _mm256_storeu_ps(out + 8, c21), out += ldo;
    _mm256_storeu_ps(out, c30), _mm256_storeu_ps(out + 8, c31), out += ldo;
    _mm256_storeu_ps(out, c40), _mm256_storeu_ps(out + 8, c41), out += ldo;
    _mm256_storeu_ps(out, c50), _mm256_storeu_ps(out + 8, c51);
}

// One query row against one panel (the rows left over after the 6-row tiles).
void tile1(const float* q, const float* panel, Eigen::Index dk, float* out) {
    __m256 c0 = _mm256_setzero_ps(), c1 = c0;
    for (Eigen::Index d = 0; d < dk; ++d) {
        const __m256 a = _mm256_broadcast_ss(q + d);
        c0 = _mm256_fmadd_ps(a, _mm256_loadu_ps(panel + d * kPanel), c0);
        c1 = _mm256_fmadd_ps(a, _mm256_loadu_ps(panel + d * kPanel + 8), c1);
    }
    _mm256_storeu_ps(out, c0), _mm256_storeu_ps(out + 8, c1);
}

}  // namespace

void packKeys(const MatRef& k, PackedKeys& out) {
    const Eigen::Index panels = k.rows() / kPanel, dk = k.cols();
    out.panels.resize(static_cast<std::size_t>(panels * dk * kPanel));
    for (Eigen::Index p = 0; p < panels; ++p)
        for (Eigen::Index d = 0; d < dk; ++d)
            for (Eigen::Index l = 0; l < kPanel; ++l)
                out.panels[static_cast<std::size_t>((p * dk + d) * kPanel + l)] = k(p * kPanel + l, d);
}

namespace {

// Rows [r0, r1) of scores; r0 is a multiple of kTileRows, and only the last range has rows
// left over after the 6-row tiles.
void scoreRange(const MatRef& q, const MatRef& k, const PackedKeys& packed, Eigen::Ref<Mat>& scores, Eigen::Index r0,
                Eigen::Index r1) {
    const Eigen::Index tk = k.rows(), dk = k.cols();
    const Eigen::Index panels = tk / kPanel, ldq = q.outerStride(), lds = scores.outerStride();
    const Eigen::Index fullEnd = r0 + (r1 - r0) / kTileRows * kTileRows;
    // 1. Full panels, a chunk of keys at a time so that its panels stay in L1/L2 across the rows.
    for (Eigen::Index p0 = 0; p0 < panels; p0 += kChunk / kPanel) {
        const Eigen::Index p1 = std::min(panels, p0 + kChunk / kPanel);
        for (Eigen::Index i = r0; i < fullEnd; i += kTileRows)
            for (Eigen::Index p = p0; p < p1; ++p)
                tile6(q.data() + i * ldq, ldq, packed.panels.data() + p * dk * kPanel, dk,
                      scores.data() + i * lds + p * kPanel, lds);
        for (Eigen::Index i = fullEnd; i < r1; ++i)
            for (Eigen::Index p = p0; p < p1; ++p)
                tile1(q.data() + i * ldq, packed.panels.data() + p * dk * kPanel, dk, scores.data() + i * lds + p * kPanel);
    }
    // 2. The last tk mod 16 keys: the same chain of fused multiply-adds, one score at a time.
    for (Eigen::Index i = r0; i < r1; ++i)
        for (Eigen::Index j = panels * kPanel; j < tk; ++j) {
            float acc = 0.0f;
            for (Eigen::Index d = 0; d < dk; ++d) acc = std::fma(q(i, d), k(j, d), acc);
            scores(i, j) = acc;
        }
}

}  // namespace

void scoreRows(const MatRef& q, const MatRef& k, const PackedKeys& packed, Eigen::Ref<Mat> scores) {
    const Eigen::Index rows = q.rows();
    // Every core takes a contiguous share of the 6-row tiles (inside the forward pass's
    // parallel heads this is one share: nested regions run on one thread).
#pragma omp parallel if (rows * k.rows() >= (1 << 16))
    {
        Eigen::Index threads = 1, id = 0;
#ifdef _OPENMP
        threads = omp_get_num_threads();
        id = omp_get_thread_num();
#endif
        const Eigen::Index tiles = (rows + kTileRows - 1) / kTileRows, share = tiles / threads, extra = tiles % threads;
        const Eigen::Index first = id * share + std::min(id, extra), count = share + (id < extra ? 1 : 0);
        const Eigen::Index r0 = first * kTileRows, r1 = std::min(rows, (first + count) * kTileRows);
        if (r0 < r1) scoreRange(q, k, packed, scores, r0, r1);
    }
}

#else  // portable build: Eigen's product

void packKeys(const MatRef&, PackedKeys& out) { out.panels.clear(); }

void scoreRows(const MatRef& q, const MatRef& k, const PackedKeys&, Eigen::Ref<Mat> scores) {
    scores.noalias() = q * k.transpose();
}

#endif

}  // namespace attnviz::core
