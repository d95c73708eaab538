// The forward pass over a built model, stage by stage and whole (model.hpp declares them).
#include "core/base/error.hpp"
#include "core/scenario/model.hpp"

#include <cmath>
#include <exception>
#include <string>

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

}  // namespace

void projectHead(const Model& model, int head, HeadTensors& out) {
    if (model.explicitQkv) {
        out.q = model.q;
        out.k = model.k;
        out.v = model.v;
    } else {
        // q, k: [T, d_k] = x [T, d_model] · W[:, head*d_k : (head+1)*d_k]; v likewise with d_v.
        // x's tiles and the weights' slices are packed once per model (buildModel), else the
        // slices here. A model read from a checkpoint adds its projections' biases (a scenario's
        // have none).
        const auto project = [&](const Mat& w, const RowVec& bias, const std::vector<PackedColumns>& kept, int index, Eigen::Index n,
                                 PackedColumns& scratch, Mat& dst) {
            const Eigen::Index first = index * n;
            const auto i = static_cast<std::size_t>(index);
            const PackedColumns& packed = packedOr(i < kept.size() ? &kept[i] : nullptr, w.middleCols(first, n), scratch);
            dst.resize(model.x.rows(), n);
            multiplyPacked(model.x, &model.xTiles, w.middleCols(first, n), packed, dst);
            if (bias.size() != 0) dst.rowwise() += bias.segment(first, n);
        };
        const Eigen::Index dk = model.dk, dv = model.dv;
        const int kv = model.kvHeadOf(head);
        project(model.wq, model.bq, model.packed.q, head, dk, out.packedProjections[0], out.q);
        project(model.wk, model.bk, model.packed.k, kv, dk, out.packedProjections[1], out.k);
        project(model.wv, model.bv, model.packed.v, kv, dv, out.packedProjections[2], out.v);
        if (model.qNorm.size() != 0) {
            rmsNormRows(out.q, model.qNorm, model.qkNormEpsilon);
            rmsNormRows(out.k, model.kNorm, model.qkNormEpsilon);
        }
        if (model.ropeCos.size() != 0) {
            rotateHalf(model.ropeCos, model.ropeSin, out.q);
            rotateHalf(model.ropeCos, model.ropeSin, out.k);
        }
    }
    out.alibiSlope = model.alibiSlopes.empty() ? 0.0f : model.alibiSlopes[static_cast<std::size_t>(head)];
    packColumns(out.v, out.packedValues);
}

namespace {

// ALiBi's penalty in raw-score units for rows firstRow … of `scores`: -m |i - j| / c, with c the
// scale at τ = 1, so that the softmax's scores · c/τ hold (q kᵀ c - m |i - j|) / τ.
void addAlibi(const Model& model, const Settings& settings, float slope, Eigen::Ref<Mat> scores, Eigen::Index firstRow) {
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
    addAlibi(model, settings, head.alibiSlope, head.scores, 0);
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
        addAlibi(model, settings, head.alibiSlope, scores, r0);
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

// Runs `each` for every head, one head per core, then attendHead's blocks of rows of every head
// (new scores or not), shared by the cores (more cores than heads then all have work: 8 heads on
// 16 cores), a head's blocks one after another (its k and v stay in cache), then concat · W_O.
template <class EachHead>
void everyHead(const Model& model, const Settings& settings, Forward& forward, bool newScores, const EachHead& each) {
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
#pragma omp parallel for schedule(dynamic, 1) if (heads > 1)
    for (Eigen::Index h = 0; h < heads; ++h)
        guarded([&] {
            HeadTensors& head = forward.heads[static_cast<std::size_t>(h)];
            each(head, static_cast<std::size_t>(h));
            prepareAttend(head, newScores);
        });
    if (failure) std::rethrow_exception(failure);
    const HeadTensors& first = forward.heads.front();  // every head has the first's rows and keys
    const Eigen::Index tq = first.q.rows(), block = attendRows(first.k.rows()), blocks = (tq + block - 1) / block;
#pragma omp parallel for schedule(dynamic, 1) if (heads * blocks > 1)
    for (Eigen::Index task = 0; task < heads * blocks; ++task)
        guarded([&] {
            const Eigen::Index r0 = (blocks - 1 - task % blocks) * block;
            attendBlock(model, settings, forward.heads[static_cast<std::size_t>(task / blocks)], newScores, r0, std::min(block, tq - r0));
        });
    if (failure) std::rethrow_exception(failure);
#pragma omp parallel for schedule(static) if (heads > 1)
    for (Eigen::Index h = 0; h < heads; ++h)
        guarded([&] {
            requireFinite(forward.heads[static_cast<std::size_t>(h)].output, "V", "A·V");
            concatenate(model, forward, static_cast<std::size_t>(h));
        });
    if (failure) std::rethrow_exception(failure);
    // concat · W_O as one product (all cores); the sum order never depends on the threads, so
    // the same input gives the same bits on every run.
    projectConcat(model, forward);
}

}  // namespace

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
    // 1-4. q, k and v one head per core (the products inside run single-threaded), then scores,
    // softmax and A·V by blocks of rows.
    everyHead(model, settings, forward, true, [&](HeadTensors& head, std::size_t h) { projectHead(model, static_cast<int>(h), head); });
}

void reattendForward(const Model& model, const Settings& settings, Forward& forward) {
    everyHead(model, settings, forward, false, [](HeadTensors&, std::size_t) {});
}

}  // namespace attnviz::core
