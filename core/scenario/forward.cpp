// The forward pass over a built model, stage by stage and whole (model.hpp declares them).
#include "core/attention/tasks.hpp"
#include "core/base/error.hpp"
#include "core/scenario/model.hpp"

#include <algorithm>
#include <cmath>
#include <exception>
#include <numeric>
#include <string>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace attnviz::core {
void rotateHalf(const MatRef& cosines, const MatRef& sines, Eigen::Ref<Mat> m) {
    const Eigen::Index half = m.cols() / 2;
    for (Eigen::Index t = 0; t < m.rows(); ++t)
        for (Eigen::Index i = 0; i < half; ++i) {
            const float c = cosines(t, i), s = sines(t, i);
            const float a = m(t, i), b = m(t, i + half);
            m(t, i) = a * c - b * s;
            m(t, i + half) = b * c + a * s;
        }
}

void rmsNormRows(Eigen::Ref<Mat> m, const RowVec& gain, float eps) {
    const Eigen::Index n = m.cols();
    for (Eigen::Index r = 0; r < m.rows(); ++r) {
        double squares = 0;
        for (Eigen::Index c = 0; c < n; ++c) squares += static_cast<double>(m(r, c)) * m(r, c);
        const auto inv = static_cast<float>(1.0 / std::sqrt(squares / static_cast<double>(n) + eps));
        m.row(r) = (m.row(r).array() * inv) * gain.array();
    }
}

void packProjections(Model& model) {
    Model::PackedProjections& packed = model.packed;
    packed = {};
    if (model.explicitQkv || model.heads <= 0) return;
    const int kv = model.kvHeadCount();
    const Eigen::Index dk = model.dk, dv = model.dv;
    if (model.wq.cols() != model.heads * dk || model.wk.cols() != kv * dk || model.wv.cols() != kv * dv) return;
    packed.q.resize(static_cast<std::size_t>(model.heads));
    packed.k.resize(static_cast<std::size_t>(kv));
    packed.v.resize(static_cast<std::size_t>(kv));
    for (int h = 0; h < model.heads; ++h) packColumns(model.wq.middleCols(h * dk, dk), packed.q[static_cast<std::size_t>(h)]);
    for (int h = 0; h < kv; ++h) {
        packColumns(model.wk.middleCols(h * dk, dk), packed.k[static_cast<std::size_t>(h)]);
        packColumns(model.wv.middleCols(h * dv, dv), packed.v[static_cast<std::size_t>(h)]);
    }
    if (model.wo.size() != 0) packColumns(model.wo, packed.o);
}

namespace {

// The model's packing `kept` of w when it has one of w's shape, else w packed into `scratch`.
const PackedColumns& packedOr(const PackedColumns* kept, const MatRef& w, PackedColumns& scratch) {
    if (kept && packs(*kept, w)) return *kept;
    packColumns(w, scratch);
    return scratch;
}

// The model's packing of W's slice `index` (n columns), or null where packProjections left it out.
const PackedColumns* keptSlice(const Mat& w, const std::vector<PackedColumns>& kept, int index, Eigen::Index n) {
    const auto i = static_cast<std::size_t>(index);
    return i < kept.size() && packs(kept[i], w.middleCols(index * n, n)) ? &kept[i] : nullptr;
}

// Rows [r0, r1) of a head's q, k and v after their products: the projections' biases (a
// checkpoint's; a scenario's have none), then q and k normalised and rotated by their positions.
void finishRows(const Model& model, int head, HeadTensors& out, Eigen::Index r0, Eigen::Index r1) {
    const Eigen::Index n = r1 - r0, dk = model.dk, dv = model.dv;
    const int kv = model.kvHeadOf(head);
    auto q = out.q.middleRows(r0, n), k = out.k.middleRows(r0, n), v = out.v.middleRows(r0, n);
    if (model.bq.size() != 0) q.rowwise() += model.bq.segment(head * dk, dk);
    if (model.bk.size() != 0) k.rowwise() += model.bk.segment(kv * dk, dk);
    if (model.bv.size() != 0) v.rowwise() += model.bv.segment(kv * dv, dv);
    if (model.qNorm.size() != 0) {
        rmsNormRows(q, model.qNorm, model.qkNormEpsilon);
        rmsNormRows(k, model.kNorm, model.qkNormEpsilon);
    }
    if (model.ropeCos.size() != 0) {
        // the leading dimensions the tables cover (all but for a partial rotary)
        const Eigen::Index turned = 2 * model.ropeCos.cols();
        rotateHalf(model.ropeCos.middleRows(r0, n), model.ropeSin.middleRows(r0, n), q.leftCols(turned));
        rotateHalf(model.ropeCos.middleRows(r0, n), model.ropeSin.middleRows(r0, n), k.leftCols(turned));
    }
}

void sizeProjections(const Model& model, HeadTensors& out) {
    out.q.resize(model.x.rows(), model.dk);
    out.k.resize(model.x.rows(), model.dk);
    out.v.resize(model.x.rows(), model.dv);
}

// What a head keeps beside its projections: its ALiBi slope and v packed for A·V.
void finishHead(const Model& model, int head, HeadTensors& out) {
    out.alibiSlope = model.alibiSlopes.empty() ? 0.0f : model.alibiSlopes[static_cast<std::size_t>(head)];
    packColumns(out.v, out.packedValues);
}

}  // namespace

void projectHead(const Model& model, int head, HeadTensors& out) {
    if (model.explicitQkv) {
        out.q = model.q;
        out.k = model.k;
        out.v = model.v;
    } else {
        // q, k: [T, d_k] = x [T, d_model] · W[:, head*d_k : (head+1)*d_k]; v likewise with d_v.
        // x's tiles and the weights' slices are packed once per model (buildModel), else the
        // slices here.
        const auto project = [&](const Mat& w, const std::vector<PackedColumns>& kept, int index, Eigen::Index n, PackedColumns& scratch,
                                 Mat& dst) {
            const auto slice = w.middleCols(index * n, n);
            multiplyPacked(model.x, &model.xTiles, slice, packedOr(keptSlice(w, kept, index, n), slice, scratch), dst);
        };
        const int kv = model.kvHeadOf(head);
        sizeProjections(model, out);
        project(model.wq, model.packed.q, head, model.dk, out.packedProjections[0], out.q);
        project(model.wk, model.packed.k, kv, model.dk, out.packedProjections[1], out.k);
        project(model.wv, model.packed.v, kv, model.dv, out.packedProjections[2], out.v);
        finishRows(model, head, out, 0, model.x.rows());
    }
    finishHead(model, head, out);
}

namespace {

// Whether the model packed every head's slices of W_Q, W_K and W_V: then a head's projections can
// be shared among cores by blocks of rows (projectHeadRows), with no packing of their own.
bool projectsByRows(const Model& model) {
    if (model.explicitQkv || model.heads <= 0) return false;
    for (int h = 0; h < model.heads; ++h) {
        const int kv = model.kvHeadOf(h);
        if (!keptSlice(model.wq, model.packed.q, h, model.dk) || !keptSlice(model.wk, model.packed.k, kv, model.dk) ||
            !keptSlice(model.wv, model.packed.v, kv, model.dv))
            return false;
    }
    return true;
}

// Rows [r0, r1) of projectHead's q, k and v, on this core, from the model's packed slices
// (projectsByRows); q, k and v sized beforehand. The same bits as projectHead: each element is
// one chain of multiply-adds over d_model whichever rows a core takes.
void projectHeadRows(const Model& model, int head, HeadTensors& out, Eigen::Index r0, Eigen::Index r1) {
    const auto project = [&](const Mat& w, const std::vector<PackedColumns>& kept, int index, Eigen::Index n, Mat& dst) {
        multiplyPackedRows(model.x, &model.xTiles, w.middleCols(index * n, n), *keptSlice(w, kept, index, n), dst, r0, r1);
    };
    const int kv = model.kvHeadOf(head);
    project(model.wq, model.packed.q, head, model.dk, out.q);
    project(model.wk, model.packed.k, kv, model.dk, out.k);
    project(model.wv, model.packed.v, kv, model.dv, out.v);
    finishRows(model, head, out, r0, r1);
}

// Rows firstRow … of `scores` as the model's logits take them: a soft-capping model's (Gemma 2's)
// capped at τ = 1's scale; ALiBi's penalty in raw-score units, -m |i - j| / c, with c the scale at
// τ = 1, so that the softmax's scores · c/τ hold (q kᵀ c - m |i - j|) / τ.
void shapeScores(const Model& model, const Settings& settings, float slope, Eigen::Ref<Mat> scores, Eigen::Index firstRow) {
    if (model.softcap > 0.0f) {
        Settings plain = settings;
        plain.temperature = 1.0f;
        capScores(scores, logitScale(model.dk, plain), model.softcap);
    }
    if (slope == 0.0f) return;
    const double perStep = alibiStep(slope, model.dk, settings);
    for (Eigen::Index r = 0; r < scores.rows(); ++r) {
        const Eigen::Index i = firstRow + r;
        for (Eigen::Index j = 0; j < scores.cols(); ++j)
            scores(r, j) -= static_cast<float>(perStep * static_cast<double>(i > j ? i - j : j - i));
    }
}

}  // namespace

void scoreHead(const Model& model, const Settings& settings, HeadTensors& head) {
    head.scores.resize(head.q.rows(), head.k.rows());
    packKeys(head.k, head.packedKeys);
    scoreRows(head.q, head.k, head.packedKeys, head.scores);
    shapeScores(model, settings, head.alibiSlope, head.scores, 0);
    head.scoreMax.resize(head.scores.rows());
    scoreMaxima(head.scores, 0, head.scoreMax);
}

namespace {

// Products near the float range's edge overflow: say where rather than show inf or NaN.
[[noreturn]] void overflowed(const char* where, const char* what) {
    throw InputError(where, std::string(what) + " overflows the float range; the inputs or weights are too large");
}

// A·V and concat·W_O are averages and sums of finite numbers, but can still overflow.
// x·0 is 0 for a finite x and NaN for ±inf and NaN: the sum is 0 exactly when every coefficient
// is finite, and Eigen vectorises it (allFinite() tests coefficient by coefficient: about 30
// times slower for a 2048 × 512 matrix, BM_FiniteCheck).
void requireFinite(const Mat& m, const char* where, const char* what) {
    if (!((m.array() * 0.0f).sum() == 0.0f)) overflowed(where, what);
}

}  // namespace

void weighHead(const Model& model, const Settings& settings, HeadTensors& head) {
    if (!softmaxRows(head.scores, logitScale(model.dk, settings), settings, head.weights, &head.scoreMax)) overflowed("scores", "Q Kᵀ");
}

void weighHead(const Model& model, const Settings& settings, HeadTensors& head, int factor, std::vector<float>& texels) {
    if (!softmaxPooled(head.scores, logitScale(model.dk, settings), settings, head.weights, factor, texels, &head.scoreMax))
        overflowed("scores", "Q Kᵀ");
}

// v packed for weighValues: by projectHead, or here when v was set otherwise.
const PackedColumns& packedValues(HeadTensors& head) {
    if (!packs(head.packedValues, head.v)) packColumns(head.v, head.packedValues);
    return head.packedValues;
}

void outputHead(const Settings& settings, HeadTensors& head) {
    head.output.resize(head.weights.rows(), head.v.cols());
    weighValues(head.weights, head.v, packedValues(head), head.output, settings.causal ? 0 : -1);
    requireFinite(head.output, "V", "A·V");
}

namespace {

// attendHead's rows per block (scoreBlockRows): at most 252.
Eigen::Index attendRows(Eigen::Index keys) { return scoreBlockRows(keys, 252); }

// What attendHead's blocks share: the head's matrices sized, k packed (when newScores), v packed.
void prepareAttend(HeadTensors& head, bool newScores) {
    const Eigen::Index tq = head.q.rows(), tk = head.k.rows();
    head.scores.resize(tq, tk);
    head.weights.resize(tq, tk);
    head.output.resize(tq, head.v.cols());
    if (newScores) {
        packKeys(head.k, head.packedKeys);
        head.scoreMax.resize(tq);
    }
    packedValues(head);
}

// Rows [r0, r0 + rows) of attendHead, after prepareAttend.
void attendBlock(const Model& model, const Settings& settings, HeadTensors& head, bool newScores, Eigen::Index r0, Eigen::Index rows) {
    auto scores = head.scores.middleRows(r0, rows);
    auto weights = head.weights.middleRows(r0, rows);
    if (newScores) {
        scoreRows(head.q.middleRows(r0, rows), head.k, head.packedKeys, scores);
        shapeScores(model, settings, head.alibiSlope, scores, r0);
        scoreMaxima(scores, r0, head.scoreMax);
    }
    if (!softmaxRows(scores, logitScale(model.dk, settings), settings, weights, r0, &head.scoreMax)) overflowed("scores", "Q Kᵀ");
    weighValues(weights, head.v, head.packedValues, head.output.middleRows(r0, rows), settings.causal ? r0 : -1);
}

}  // namespace

void attendHead(const Model& model, const Settings& settings, HeadTensors& head, bool newScores) {
    prepareAttend(head, newScores);
    const Eigen::Index tq = head.q.rows(), block = attendRows(head.k.rows());
    for (Eigen::Index r0 = 0; r0 < tq; r0 += block) attendBlock(model, settings, head, newScores, r0, std::min(block, tq - r0));
    requireFinite(head.output, "V", "A·V");
}

namespace {

// concat · W_O (+ b_O), or concat itself without W_O, from a concat already filled.
void projectConcat(const Model& model, Forward& forward) {
    if (model.wo.size() != 0) {
        // The register-tiled kernel on every core: faster than Eigen's product here
        // (BM_OutputProjection), and each output is one chain of multiply-adds whatever the threads.
        const PackedColumns& wo = packedOr(&model.packed.o, model.wo, forward.packedWo);
        forward.output.resize(model.tq(), model.wo.cols());
        multiplyPacked(forward.concat, nullptr, model.wo, wo, forward.output);
        if (model.bo.size() != 0) forward.output.rowwise() += model.bo;
    } else {
        forward.output = forward.concat;
    }
    requireFinite(forward.output, "W_O", "concat·W_O");
}

// Head h's output into its columns of concat (sized [T_q, h d_v]).
void concatenate(const Model& model, Forward& forward, std::size_t h) {
    forward.concat.middleCols(static_cast<Eigen::Index>(h) * model.dv, model.dv) = forward.heads[h].output;
}

// A new pass (newPass: every head's q, k and v, then new scores) or a new softmax of the kept
// scores: what each head's blocks of rows share (prepareAttend), then attendHead's blocks of rows
// of every head, shared by the cores (more cores than heads then all have work: 8 heads on 16
// cores), a head's blocks one after another (its k and v stay in cache); then concat · W_O.
void everyHead(const Model& model, const Settings& settings, Forward& forward, bool newPass) {
    forward.concat.resize(model.tq(), static_cast<Eigen::Index>(model.heads) * model.dv);
    std::exception_ptr failure;
    const auto guarded = [&](const auto& work) {
        try {
            work();
        } catch (...) {
#pragma omp critical(attnviz_forward_failure)
            failure = std::current_exception();
        }
    };
    const auto heads = static_cast<Eigen::Index>(forward.heads.size());
    if (heads == 0) return projectConcat(model, forward);
    const auto headAt = [&](Eigen::Index h) -> HeadTensors& { return forward.heads[static_cast<std::size_t>(h)]; };
    const Eigen::Index split = newPass ? projectionBlocks(model, heads) : 1;
    if (split == 1) {
        // 1. q, k and v one head per core (the products inside run on that core alone; a single
        // head's on every core).
        forEachTask(heads, [&](Eigen::Index h) {
            guarded([&] {
                if (newPass) projectHead(model, static_cast<int>(h), headAt(h));
                prepareAttend(headAt(h), newPass);
            });
        });
    } else {
        // 1. q, k and v by blocks of rows of each head (whole tiles of six), every core a share.
        const Eigen::Index tq = model.x.rows();
        const Eigen::Index step = ((tq + split - 1) / split + kKernelTileRows - 1) / kKernelTileRows * kKernelTileRows,
                           blocks = (tq + step - 1) / step;
        for (HeadTensors& head : forward.heads) sizeProjections(model, head);
        forEachTask(heads * blocks, [&](Eigen::Index task) {
            guarded([&] {
                const Eigen::Index r0 = task % blocks * step;
                projectHeadRows(model, static_cast<int>(task / blocks), headAt(task / blocks), r0, std::min(tq, r0 + step));
            });
        });
        if (failure) std::rethrow_exception(failure);
        forEachTask(heads, [&](Eigen::Index h) {
            guarded([&] {
                finishHead(model, static_cast<int>(h), headAt(h));
                prepareAttend(headAt(h), newPass);
            });
        });
    }
    if (failure) std::rethrow_exception(failure);
    // 2. Scores, softmax and A·V: every head's blocks of rows, the last block first.
    const HeadTensors& first = forward.heads.front();  // every head has the first's rows and keys
    const Eigen::Index tq = first.q.rows(), block = attendRows(first.k.rows()), blocks = (tq + block - 1) / block;
    forEachTask(heads * blocks, [&](Eigen::Index task) {
        guarded([&] {
            const Eigen::Index r0 = (blocks - 1 - task % blocks) * block;
            attendBlock(model, settings, headAt(task / blocks), newPass, r0, std::min(block, tq - r0));
        });
    });
    if (failure) std::rethrow_exception(failure);
#pragma omp parallel for schedule(static) if (heads > 1)
    for (Eigen::Index h = 0; h < heads; ++h)
        guarded([&] {
            requireFinite(headAt(h).output, "V", "A·V");
            concatenate(model, forward, static_cast<std::size_t>(h));
        });
    if (failure) std::rethrow_exception(failure);
    // concat · W_O as one product (all cores); the sum order never depends on the threads, so
    // the same input gives the same bits on every run.
    projectConcat(model, forward);
}

}  // namespace

// How many blocks of rows each head's projections are shared out in: one (a head per core) when
// the heads fall evenly to the cores, else enough that heads × blocks do (3 heads on 2 cores: 2
// blocks each; 8 heads on 16 cores: 2; 12 on 16: 4), each block at least 48 rows. Only where the
// model packed its slices (projectsByRows); a portable build keeps one block, as Eigen's product
// of some rows need not give the bits of all of them.
Eigen::Index projectionBlocks(const Model& model, Eigen::Index heads) {
    Eigen::Index threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif
    const Eigen::Index blocks = threads / std::gcd(heads, threads);
    if (blocks == 1 || kernelIsa() == KernelIsa::Portable || !projectsByRows(model)) return 1;
    return std::clamp<Eigen::Index>(model.x.rows() / 48, 1, blocks);
}

void combineHeads(const Model& model, Forward& forward) {
    forward.concat.resize(model.tq(), static_cast<Eigen::Index>(model.heads) * model.dv);
    for (std::size_t h = 0; h < static_cast<std::size_t>(model.heads); ++h) concatenate(model, forward, h);
    projectConcat(model, forward);
}

Forward runForward(const Model& model, const Settings& settings) {
    Forward forward;
    runForward(model, settings, forward);
    return forward;
}

void runForward(const Model& model, const Settings& settings, Forward& forward) {
    forward.heads.resize(static_cast<std::size_t>(model.heads));
    // 1-4. q, k and v (one head per core, or blocks of each head's rows when the heads do not
    // fall evenly to the cores), then scores, softmax and A·V by blocks of rows.
    everyHead(model, settings, forward, true);
}

void reattendForward(const Model& model, const Settings& settings, Forward& forward) { everyHead(model, settings, forward, false); }

}  // namespace attnviz::core
