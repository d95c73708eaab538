// The decoder's forward pass (decoder.hpp gives the equations), computed for positions
// prefix … T-1 over the kept layers of earlier positions: prefix 0 is the whole pass.
#include "core/attention/attention_maps.hpp"
#include "core/attention/qk_tiles.hpp"
#include "core/attention/tasks.hpp"
#include "core/base/error.hpp"
#include "core/base/pages.hpp"
#include "core/models/decoder/decoder.hpp"
#include "core/models/decoder/decoder_store.hpp"

#include <unsupported/Eigen/SpecialFunctions>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <limits>
#include <numeric>
#include <stdexcept>

namespace attnviz::core::decoder {

// out: [rows, d] = the norm of x's rows, with the sums in double (a row of 1600 floats loses
// digits in float). Rows on every core.
//   LayerNorm: (x - mean) / √(var + ε) · gain + bias
//   RMSNorm:   x / √(mean(x²) + ε) · gain
// A norm without a gain (ModernBERT's first layer's attn_norm, an identity) copies the rows; a
// LayerNorm without a bias (norm_bias false) adds none.
void normRows(Norm kind, const MatRef& x, const Weight& gain, const Weight& bias, float eps, Eigen::Ref<Mat> out) {
    if (!gain) {
        if (out.data() != x.data()) out = x;
        return;
    }
    const auto g = gain.row();
    const Eigen::Index n = x.cols();
#pragma omp parallel for schedule(static) if (x.rows() * n >= (1 << 15))
    for (Eigen::Index r = 0; r < x.rows(); ++r) {
        const auto row = x.row(r);
        if (kind == Norm::RmsNorm) {
            double squares = 0;
            for (Eigen::Index c = 0; c < n; ++c) squares += static_cast<double>(row[c]) * row[c];
            const auto inv = static_cast<float>(1.0 / std::sqrt(squares / static_cast<double>(n) + eps));
            out.row(r) = (row.array() * inv) * g.array();
            continue;
        }
        double sum = 0, squares = 0;
        for (Eigen::Index c = 0; c < n; ++c) sum += row[c];
        const double mean = sum / static_cast<double>(n);
        for (Eigen::Index c = 0; c < n; ++c) squares += (row[c] - mean) * (row[c] - mean);
        const auto inv = static_cast<float>(1.0 / std::sqrt(squares / static_cast<double>(n) + eps));
        const auto m = static_cast<float>(mean);
        if (bias) out.row(r) = ((row.array() - m) * inv) * g.array() + bias.row().array();
        else out.row(r) = ((row.array() - m) * inv) * g.array();
    }
}

// out: [rows, n] = a [rows, k] · W [k, n] (+ bias [n]), with W's packed panels (widened in registers).
void linear(const MatRef& a, const Weight& w, const Weight& bias, Eigen::Ref<Mat> out) {
    multiplyWeights(a, nullptr, w.packed, out);
    if (bias) out.rowwise() += bias.row();
}

namespace {

// The activation of 16 values at once. Eigen computes tanh and exp with its own vectorised
// formulas, whose last bit differs from the scalar ones it uses for elements before an aligned
// address: an element's value would depend on where its buffer happens to lie. A fixed block of
// 16, in a local array, always takes the vectorised path.
using Sixteen = Eigen::Array<float, 16, 1>;
void activate16(Activation act, Sixteen& a) {
    switch (act) {
        case Activation::GeluTanh: {
            constexpr float kRoot2OverPi = 0.7978845608028654f;
            a = 0.5f * a * (1.0f + (kRoot2OverPi * (a + 0.044715f * a.cube())).tanh());
            break;
        }
        // Eigen's vectorised erf (a rational interpolant within a couple of ulp of the true value),
        // not a call to erf per value: BERT's GELU was 7 % of its pass.
        case Activation::GeluErf: a = 0.5f * a * (1.0f + Eigen::erf(a * 0.7071067811865476f)); break;
        case Activation::Relu: a = a.max(0.0f); break;
        case Activation::Silu: a = a / (1.0f + (-a).exp()); break;
    }
}

}  // namespace

// The activation of every element of m, rows on every core; each element's value depends on it
// alone (not on its place in the row or the buffer's address).
void activate(Activation act, Eigen::Ref<Mat> m) {
    const Eigen::Index n = m.cols();
#pragma omp parallel for schedule(static) if (m.size() >= (1 << 15))
    for (Eigen::Index r = 0; r < m.rows(); ++r) {
        float* row = m.row(r).data();
        Sixteen a;
        for (Eigen::Index c = 0; c < n; c += 16) {
            const Eigen::Index k = std::min<Eigen::Index>(16, n - c);
            a.setZero();
            std::copy_n(row + c, k, a.data());
            activate16(act, a);
            std::copy_n(a.data(), k, row + c);
        }
    }
}

namespace {

bool allFinite(const MatRef& m) { return (m.array() * 0.0f).sum() == 0.0f; }

// Each kv head's keys and values of one layer, packed once for the query heads that read them.
struct PackedKv {
    std::vector<PackedKeys> keys;
    std::vector<PackedColumns> values;
};

// What one thread's tasks reuse from task to task and pass to pass.
struct TaskScratch {
    PackedKeys keys;
    PackedColumns values;
    ScoreMaxima maxima;
    std::vector<float> scores;
};

// One head's attention for the queries at positions first … first + rows - 1 (q's rows) over keys
// [0, first + rows) (within a sliding window of that many keys when window > 0; the keys after the
// last query are masked for every row, so neither their scores nor their products are computed),
// or, not causal (an encoder's), over every key:
// block [rows, T] = those rows of the weights, top and sum [rows] their scoreMax and logSum (what
// makes any weight again from q and k: mapWeightRows), and out [rows, d_h] = A v of those rows. kv: k and v
// packed, or null (they are packed here). False when the scores are not finite.
// hidden: keys blocked for every query (a what-if's hidden tokens), ascending; a query left with no
// key gets zero weights and a zero output.
bool attendRows(const MatRef& q, const MatRef& k, const MatRef& v, const PackedKv* kv, std::size_t g, float scale, float softcap,
                bool causal, int window, const std::vector<int>& hidden, Eigen::Index first, const Eigen::Ref<Mat>& block, float* top,
                float* sum, const Eigen::Ref<Mat>& out) {
    thread_local TaskScratch s;
    if (!kv) {
        packKeys(k, s.keys);
        packColumns(v, s.values);
    }
    const PackedKeys& keys = kv ? kv->keys[g] : s.keys;
    const PackedColumns& values = kv ? kv->values[g] : s.values;
    const Eigen::Index t = k.rows(), rows = q.rows(), width = causal ? std::min(t, first + rows) : t;
    Settings mask;
    mask.causal = causal;
    mask.window = window;
    mask.paddedKeys = hidden;
    s.maxima.resize(t);  // rows first … of it are this task's
    s.scores.resize(static_cast<std::size_t>(rows * width));
    Eigen::Map<Mat> scores(s.scores.data(), rows, width);
    scoreRows(q, k.topRows(width), keys, scores);  // keys' first panels are k.topRows(width)'s
    capScores(scores, scale, softcap);
    scoreMaxima(scores, first, s.maxima);
    auto weights = block;
    weights.rightCols(t - width).setZero();
    if (!softmaxRows(scores, scale, mask, weights.leftCols(width), first, &s.maxima)) return false;
    // At the row's largest weight, A = 1 / Σ_j exp(scale · (s_ij − s_max)): logSum = −log A (A is
    // at least 1/T, so its logarithm keeps the float's precision); −∞ for a row with no key.
    for (Eigen::Index r = 0; r < rows; ++r) {
        Eigen::Index j = 0;
        const float largest = weights.row(r).head(width).maxCoeff(&j);
        top[r] = largest > 0.0f ? scores(r, j) : 0.0f;
        sum[r] = largest > 0.0f ? -std::log(largest) : -std::numeric_limits<float>::infinity();
    }
    weighValues(block, v, values, out, causal ? first : -1);
    return true;
}

// The rows a pass's projections and MLP take at a time: a long input's temporaries stay at a few
// hundred MiB (2,048 × Qwen2.5-0.5B's gate and up, 4,864 each: 76 MiB), while each product still
// reads its weights once for thousands of rows.
constexpr Eigen::Index kChunkRows = 2048;

// The query rows one task of a layer's tiled attention takes: 16 tiles of six (its scores and
// weights, 96 × 256 floats each, stay in L2 while each tile of keys and values is read once for
// all of them).
constexpr Eigen::Index kTiledRows = 96;

std::atomic<Eigen::Index>& tiledFrom() {
    static std::atomic<Eigen::Index> tokens{2048};
    return tokens;
}

// The query rows one task of a layer's attention takes (scoreBlockRows): at most 48, so that the
// cores share a layer's heads × blocks evenly even when there are more cores than heads.
Eigen::Index taskRows(Eigen::Index keys) { return scoreBlockRows(keys, 48); }

// A claim on positions 0 … T-1 of a store whose first p hold previous's: previous's own store
// when it has room and no live pass reads past p, else a new one with them copied.
std::shared_ptr<const Run::Extent> claim(const Config& cfg, Eigen::Index t, const Run* previous, Eigen::Index p, PassMaps maps) {
    const auto registered = [](const std::shared_ptr<Store>& store, Eigen::Index tokens) {
        const auto it = store->live.insert(tokens);
        try {
            return std::make_shared<const Run::Extent>(store, tokens);
        } catch (...) {
            store->live.erase(it);
            throw;
        }
    };
    if (!previous || p == 0) {
        auto store = std::make_shared<Store>(cfg, t, 0, maps);
        const std::lock_guard<std::mutex> lock(store->mutex);
        return registered(store, t);
    }
    const std::shared_ptr<Store>& old = RunAccess::extent(*previous)->store;
    if (t <= old->capacity) {
        const std::lock_guard<std::mutex> lock(old->mutex);
        if (*old->live.rbegin() <= p) return registered(old, t);
    }
    auto store = std::make_shared<Store>(cfg, grownCapacity(cfg, t), 0, maps);
    const Eigen::Index c = store->capacity, d = store->d;
    for (int l = 0; l < cfg.nLayer; ++l) {
        if (store->activations()) {
            keptBlock(store->input(l), p, d, d) = previous->input(l).topRows(p);
            keptBlock(store->normed(l), p, d, d) = previous->normed(l).topRows(p);
        }
        keptBlock(store->qkv(l), p, store->qkvWidth, store->qkvWidth) = previous->qkv(l).topRows(p);
        keptBlock(store->scoreMax(l, 0), cfg.nHead, p, c) = previous->scoreMax(l).leftCols(p);
        keptBlock(store->logSum(l, 0), cfg.nHead, p, c) = previous->logSum(l).leftCols(p);
        if (store->maps == PassMaps::Kept)
            for (int h = 0; h < cfg.nHead; ++h) keptBlock(store->weights(l, h), p, p, c) = previous->weights(l, h).topLeftCorner(p, p);
    }
    keptBlock(store->final(), p, d, d) = previous->final().topRows(p);
    const std::lock_guard<std::mutex> lock(store->mutex);
    return registered(store, t);
}

// The logits of one position: lm_head [vocab, d] · row, read where it lies in its file's type,
// rows on every core (a product of one row reads all of it: 154 MB for GPT-2 small, 272 MB for
// Qwen2.5-0.5B in BF16).
void lastLogits(const Weight& head, const Eigen::Ref<const RowVec>& row, Vec& logits) {
    logits.resize(head.storedRows());
    const RowVec x = row;  // contiguous
    multiplyRowsByVector(head.source, head.type, head.storedRows(), head.storedCols(), x.data(), logits.data());
}

}  // namespace

std::size_t commonPrefix(const std::vector<int>& a, const std::vector<int>& b) {
    return static_cast<std::size_t>(
        std::mismatch(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(std::min(a.size(), b.size())), b.begin()).first - a.begin());
}

void checkIds(const Config& cfg, const std::vector<int>& ids, const std::string& field, const std::vector<int>& types) {
    if (ids.empty()) throw InputError(field, "no tokens: type some text for the model to read");
    // RoBERTa's positions start past padding_idx: its table holds that many fewer.
    const long long positions = cfg.longestInput();
    if (static_cast<long long>(ids.size()) > positions)
        throw InputError(field,
                         std::to_string(ids.size()) + " tokens are more than this model's " + std::to_string(positions) + " positions");
    for (const int id : ids)
        if (id < 0 || id >= cfg.vocabSize) throw InputError(field, "token id " + std::to_string(id) + " is outside the vocabulary");
    if (types.empty()) return;
    if (types.size() != ids.size())
        throw InputError(field, std::to_string(types.size()) + " token types for " + std::to_string(ids.size()) + " tokens");
    for (const int type : types)
        if (type < 0 || type >= std::max(cfg.typeVocab, 1))
            throw InputError(field, "token type " + std::to_string(type) + " is outside this model's " +
                                        std::to_string(std::max(cfg.typeVocab, 1)) + " token types");
}

Eigen::Index grownCapacity(const Config& cfg, Eigen::Index tokens) { return std::min<Eigen::Index>(cfg.nPositions, tokens + 32); }

namespace {

// q and k of the new rows [p, T) of a layer's kept qkv [T, (h + 2g)·d_h] of a pass over `tokens`:
// Qwen3's and Gemma 3's per-head RMSNorm, then RoPE at positions p … T-1 (of a head's leading
// rotaryWidth() dimensions). Heads on every core.
void normAndRotate(const Config& cfg, const Layer& layer, int l, Eigen::Index p, Eigen::Index tokens, Eigen::Ref<Mat> rows) {
    if (!cfg.qkNorm && !cfg.rotary) return;
    const Eigen::Index dh = cfg.headDim, headsToTurn = cfg.nHead + cfg.nKvHead, turned = cfg.rotaryWidth();
    Mat cosines, sines;
    if (cfg.rotary) ropeTables(cfg, p, rows.rows(), cosines, sines, l, tokens);
    RowVec qGain, kGain;
    if (cfg.qkNorm) qGain = layer.qNorm.row(), kGain = layer.kNorm.row();
#pragma omp parallel for schedule(static) if (rows.rows() * headsToTurn * dh >= (1 << 15))
    for (Eigen::Index h = 0; h < headsToTurn; ++h) {
        auto head = rows.middleCols(h * dh, dh);
        if (cfg.qkNorm) rmsNormRows(head, h < cfg.nHead ? qGain : kGain, cfg.normEpsilon);
        if (cfg.rotary) rotateHalf(cosines, sines, head.leftCols(turned));
    }
}

}  // namespace

// The MLP of the new rows: out [rows, d] = down(act(a · W_up + b) (⊙ SiLU-gated)) (+ b).
// up, gate: [rows, inner] scratch.
void mlp(const Config& cfg, const Layer& layer, const MatRef& a, Eigen::Ref<Mat> up, Eigen::Ref<Mat> gate, const Eigen::Ref<Mat>& out) {
    linear(a, layer.upW, layer.upBias, up);
    if (cfg.gatedMlp) {
        linear(a, layer.gateW, layer.gateBias, gate);
        activate(cfg.activation, gate);
        up.array() *= gate.array();
    } else {
        activate(cfg.activation, up);
    }
    linear(up, layer.downW, layer.downBias, out);
}

namespace {

// What an edited pass does differently (forwardEdited): it starts at firstLayer from source's
// residual stream entering it, views the layers below in `below`, hides keys in every layer, and
// ablates heads' outputs before W_O.
struct PassPlan {
    int firstLayer = 0;
    const Run* source = nullptr;
    std::shared_ptr<const Run::Extent> below;
    std::vector<int> hidden;
    std::vector<std::vector<Intervention>> heads;  // per layer: its ZeroHead and MeanHead edits
};

// A new store for an edited pass's layers [firstLayer, n), viewing those below in plan.below.
std::shared_ptr<const Run::Extent> claimEdited(const Config& cfg, Eigen::Index t, const PassPlan& plan, PassMaps maps) {
    auto store = std::make_shared<Store>(cfg, t, plan.firstLayer, maps);
    const std::lock_guard<std::mutex> lock(store->mutex);
    const auto it = store->live.insert(t);
    try {
        return std::make_shared<const Run::Extent>(store, t, plan.firstLayer > 0 ? plan.below : nullptr, plan.firstLayer);
    } catch (...) {
        store->live.erase(it);
        throw;
    }
}

// o [T, d_h], a head's output: zeroed, or every row its mean over the rows.
void ablateHead(Intervention::Kind kind, Eigen::Ref<Mat> o) {
    if (kind == Intervention::Kind::ZeroHead) {
        o.setZero();
        return;
    }
    Eigen::RowVectorXd mean = Eigen::RowVectorXd::Zero(o.cols());
    for (Eigen::Index r = 0; r < o.rows(); ++r) mean += o.row(r).cast<double>();
    mean /= static_cast<double>(o.rows());
    o.rowwise() = mean.cast<float>();
}

// The logits of one row of the final rows: lm_head's (or the tied embeddings') product (soft-capped
// where the config says), or, after an encoder's masked-LM transform, Norm(act(row · W_t + b_t)),
// with its vocabulary bias.
void predictionLogits(const Checkpoint& model, const Eigen::Ref<const RowVec>& row, Vec& logits) {
    if (!model.headDense()) {
        lastLogits(model.lmHead(), row, logits);
        // Gemma 2's final soft-capping
        if (const float cap = model.config().logitSoftcap; cap > 0.0f) logits = (logits.array() / cap).tanh() * cap;
        return;
    }
    const Config& cfg = model.config();
    const Mat x = row;
    Mat h(1, model.headDense().cols);
    linear(x, model.headDense(), model.headDenseBias(), h);
    activate(cfg.headActivation, h);
    normRows(cfg.norm, h, model.headNormGain(), model.headNormBias(), cfg.normEpsilon, h);
    lastLogits(model.lmHead(), h.row(0), logits);
    if (model.lmBias()) logits += model.lmBias().row().transpose();
}

// The position whose logits a pass over `ids` gives: a decoder's last; an encoder's first [MASK]
// when it has a masked-LM head; −1 for none.
Eigen::Index predictedPosition(const Checkpoint& model, const std::vector<int>& ids) {
    if (model.config().causal) return static_cast<Eigen::Index>(ids.size()) - 1;
    const std::optional<int> mask = model.tokenizer().maskId();
    if (!model.predicts() || !mask) return -1;
    const auto it = std::find(ids.begin(), ids.end(), *mask);
    return it == ids.end() ? -1 : static_cast<Eigen::Index>(it - ids.begin());
}

Run forwardFrom(const Checkpoint& model, const std::vector<int>& ids, const std::vector<int>& types, const Run* previous, Eigen::Index p,
                const Progress* progress, PassMaps maps, const PassPlan* plan = nullptr) {
    const Config& cfg = model.config();
    checkIds(cfg, ids, "token ids", types);
    model.checkUnchanged();
    const auto t = static_cast<Eigen::Index>(ids.size());
    const Eigen::Index d = cfg.nEmbd, heads = cfg.nHead, dh = cfg.headDim, qw = cfg.qWidth(), kvw = cfg.kvWidth(), w = cfg.qkvWidth(),
                       inner = cfg.nInner, rows = t - p;
    const float scale = cfg.scoreScale();

    Run run;
    run.ids = ids;
    run.types = types;
    RunAccess::attach(run, plan ? claimEdited(cfg, t, *plan, maps) : claim(cfg, t, previous, p, maps));
    const int firstLayer = plan ? plan->firstLayer : 0;
    static const std::vector<int> kNoKeys;
    const std::vector<int>& hidden = plan ? plan->hidden : kNoKeys;
    const Store& store = *RunAccess::extent(run)->store;
    const Eigen::Index c = store.capacity;
    // An edited pass over a pass that keeps no residual stream (Lean) replays the layers below its
    // first edit: their attention from the source's kept q, k and v, then W_O and the MLP.
    const bool replay = firstLayer > 0 && !plan->source->keepsActivations();
    // The pass's temporaries, in this thread's buffers kept from pass to pass (fresh pages cost
    // their faults: core/base/pages.hpp): the residual stream and the heads' outputs of every new
    // row; the rest a chunk of rows at a time, so that a long input's MLP needs no [T, inner].
    thread_local std::vector<float, PageAllocator<float>> buffer;
    const Eigen::Index gateWidth = cfg.gatedMlp ? inner : 0, chunk = std::min(rows, kChunkRows);
    buffer.resize(static_cast<std::size_t>(rows * (d + qw) + chunk * (2 * d + inner + gateWidth)));
    Eigen::Map<Mat> x(buffer.data(), rows, d), concat(x.data() + rows * d, rows, qw), attn(concat.data() + rows * qw, chunk, d),
        normed(attn.data() + chunk * d, chunk, d), up(normed.data() + chunk * d, chunk, inner),
        gate(up.data() + chunk * inner, chunk, gateWidth);
    // The scoreMax and logSum of a replayed layer's heads, read by nothing after it: [h, T].
    std::vector<float> replayedSums(replay ? static_cast<std::size_t>(2 * heads * t) : 0);
    // 1. x = embed[ids] (+ positions, + an encoder's token types, each widened into attn's first
    //    row, free until step 4; then an encoder's embedding norm), for the new positions; or,
    //    from a later layer, the residual stream entering it.
    const Weight &embed = model.embed(), &positions = model.positions(), &typeRows = model.tokenTypes();
    const bool embeds = firstLayer == 0 || replay;
    if (!embeds) x = plan->source->input(firstLayer);
    for (Eigen::Index i = 0; i < rows && embeds; ++i) {
        const auto at = static_cast<std::size_t>(p + i);
        widenRow(embed.source, embed.type, d, ids[at], x.row(i).data());
        if (cfg.embedScale != 1.0f) x.row(i) *= cfg.embedScale;
        if (typeRows) {
            widenRow(typeRows.source, typeRows.type, d, types.empty() ? 0 : types[at], attn.row(0).data());
            x.row(i) += attn.row(0);
        }
        if (cfg.rotary) continue;
        widenRow(positions.source, positions.type, d, cfg.positionOffset + p + i, attn.row(0).data());
        x.row(i) += attn.row(0);
    }
    if (embeds && model.embedNormGain()) normRows(cfg.norm, x, model.embedNormGain(), model.embedNormBias(), cfg.normEpsilon, x);

    PackedKv kv;
    for (int l = replay ? 0 : firstLayer; l < cfg.nLayer; ++l) {
        check(progress);
        const Layer& b = model.layers()[static_cast<std::size_t>(l)];
        const bool replayed = l < firstLayer;  // read from the source, nothing written
        const bool keepWeights = store.maps == PassMaps::Kept && !replayed;
        // Earlier rows read no new key: the causal zeros of their new columns.
        if (keepWeights)
            for (int h = 0; h < heads; ++h) keptBlock(store.weights(l, h) + p, p, rows, c).setZero();
        // 2. the new positions' rows of the kept matrices (earlier ones are previous's): the
        //    input and the normed input (unless Lean), and q | k | v, each part written into its
        //    columns; a chunk of rows at a time.
        for (Eigen::Index c0 = 0; c0 < rows && !replayed; c0 += chunk) {
            const Eigen::Index n = std::min(chunk, rows - c0);
            const auto xs = x.middleRows(c0, n);
            if (store.activations()) keptBlock(store.input(l) + (p + c0) * d, n, d, d) = xs;
            KeptBlock normed1 =
                store.activations() ? keptBlock(store.normed(l) + (p + c0) * d, n, d, d) : keptBlock(normed.data(), n, d, d);
            // A post-norm block's attention reads the residual stream as it is.
            if (cfg.postNorm) normed1 = xs;
            else normRows(cfg.norm, xs, b.norm1Gain, b.norm1Bias, cfg.normEpsilon, normed1);
            KeptBlock newQkv = keptBlock(store.qkv(l) + (p + c0) * w, n, w, w);
            Eigen::Index column = 0;
            for (std::size_t part = 0; part < b.qkv.size(); ++part) {
                linear(normed1, b.qkv[part], b.qkvBias[part], newQkv.middleCols(column, b.qkv[part].cols));
                column += b.qkv[part].cols;
            }
            normAndRotate(cfg, b, l, p + c0, t, newQkv);
        }
        const KeptView qkv = replayed ? plan->source->qkv(l) : KeptView(store.qkv(l), t, w, Eigen::OuterStride<>(w));
        const auto topOf = [&](Eigen::Index h) { return replayed ? replayedSums.data() + h * t : store.scoreMax(l, static_cast<int>(h)); };
        const auto sumOf = [&](Eigen::Index h) {
            return replayed ? replayedSums.data() + (heads + h) * t : store.logSum(l, static_cast<int>(h));
        };
        // 3. each query head: A = softmax_causal(q kᵀ · scale) for the new queries over every key
        //    (of the window), reading its kv head's k and v. The cores share the heads × blocks of
        //    query rows, a head's blocks one after another (its keys and values stay in cache), the
        //    blocks that read most keys first; each kv head's k and v packed once before them, or,
        //    with one block a head (an appended token), by the head itself, in its core's cache.
        std::exception_ptr failure;
        std::atomic<bool> finite = true;
        const int window = cfg.window(l);
        // Past tiledAttentionFrom() tokens, a pass that keeps no map computes each block's
        // attention a tile of keys at a time (attendTiled), in blocks of kTiledRows queries, each
        // row as it would be alone (so that typing at the end gives the whole pass's bits); else
        // a block's rows whole, as few as keep its scores and weights in cache (taskRows).
        const bool tiled = !keepWeights && t > tiledAttentionFrom() && cfg.causal && cfg.attnSoftcap == 0.0f;
        const Eigen::Index block = tiled ? kTiledRows : taskRows(t), blocks = (rows + block - 1) / block, kvHeads = cfg.nKvHead;
        if (blocks > 1 || tiled) {
            kv.keys.resize(static_cast<std::size_t>(kvHeads));
            kv.values.resize(static_cast<std::size_t>(kvHeads));
            forEachTask(kvHeads, [&](Eigen::Index g) {
                packKeys(qkv.middleCols(qw + g * dh, dh), kv.keys[static_cast<std::size_t>(g)]);
                packColumns(qkv.middleCols(qw + kvw + g * dh, dh), kv.values[static_cast<std::size_t>(g)]);
            });
        }
        forEachTask(heads * blocks, [&](Eigen::Index task) {
            const Eigen::Index h = task / blocks, r0 = (blocks - 1 - task % blocks) * block, n = std::min(block, rows - r0);
            const Eigen::Index g = cfg.kvHeadOf(static_cast<int>(h));
            const auto gi = static_cast<std::size_t>(g);
            const MatRef q = qkv.block(p + r0, h * dh, n, dh), k = qkv.middleCols(qw + g * dh, dh),
                         v = qkv.middleCols(qw + kvw + g * dh, dh);
            try {
                bool ok = false;
                if (tiled) {
                    ok = attendTiled(q, nullptr, k, kv.keys[gi], v, kv.values[gi], scale, window, hidden, p + r0, topOf(h) + p + r0,
                                     sumOf(h) + p + r0, concat.block(r0, h * dh, n, dh));
                } else {
                    // The block's weights: kept in the store, or in this thread's scratch until A·V has read them.
                    thread_local std::vector<float, PageAllocator<float>> scratch;
                    if (!keepWeights) scratch.resize(static_cast<std::size_t>(n * t));
                    const KeptBlock weights = keepWeights ? keptBlock(store.weights(l, static_cast<int>(h)) + (p + r0) * c, n, t, c)
                                                          : keptBlock(scratch.data(), n, t, t);
                    ok = attendRows(q, k, v, blocks > 1 ? &kv : nullptr, gi, scale, cfg.attnSoftcap, cfg.causal, window, hidden, p + r0,
                                    weights, topOf(h) + p + r0, sumOf(h) + p + r0, concat.block(r0, h * dh, n, dh));
                }
                if (!ok) finite = false;
            } catch (...) {
#pragma omp critical(attnviz_decoder_failure)
                failure = std::current_exception();
            }
        });
        if (failure) std::rethrow_exception(failure);
        if (!finite) model.explainNonFinite("layer " + std::to_string(l) + ": attention", "Q Kᵀ overflows the float range");
        // A what-if's ablated heads: their outputs zeroed or replaced by their means, before W_o
        // (whose bias is still added); their kept weights stay as computed.
        if (plan)
            for (const Intervention& e : plan->heads[static_cast<std::size_t>(l)]) ablateHead(e.kind, concat.middleCols(e.head * dh, dh));
        // 4. x += concat · W_o (+ b); x += MLP(Norm(x)), a chunk of rows at a time (post-norm:
        //    x = Norm(x + concat · W_o + b; norm1), then x = Norm(x + MLP(x); norm2); Gemma's
        //    sandwich norms: each output normed before its add).
        for (Eigen::Index c0 = 0; c0 < rows; c0 += chunk) {
            const Eigen::Index n = std::min(chunk, rows - c0);
            auto xs = x.middleRows(c0, n);
            auto out = attn.topRows(n), normed2 = normed.topRows(n);
            linear(concat.middleRows(c0, n), b.outW, b.outBias, out);
            if (b.attnOutNormGain) normRows(cfg.norm, out, b.attnOutNormGain, {}, cfg.normEpsilon, out);
            xs += out;
            if (cfg.postNorm) {
                normRows(cfg.norm, xs, b.norm1Gain, b.norm1Bias, cfg.normEpsilon, xs);
                mlp(cfg, b, xs, up.topRows(n), gate.topRows(n), out);
                xs += out;
                normRows(cfg.norm, xs, b.norm2Gain, b.norm2Bias, cfg.normEpsilon, xs);
                continue;
            }
            normRows(cfg.norm, xs, b.norm2Gain, b.norm2Bias, cfg.normEpsilon, normed2);
            mlp(cfg, b, normed2, up.topRows(n), gate.topRows(n), out);
            if (b.mlpOutNormGain) normRows(cfg.norm, out, b.mlpOutNormGain, {}, cfg.normEpsilon, out);
            xs += out;
        }
        if (!allFinite(x)) model.explainNonFinite("layer " + std::to_string(l), "the activations overflow the float range");
    }
    // 5. the final norm (a post-norm model's rows are already normed), and the logits of the
    //    position predicted: a decoder's last against lm_head (or the tied embeddings), an
    //    encoder's first [MASK] through its masked-LM head.
    KeptBlock final = keptBlock(store.final() + p * d, rows, d, d);
    if (model.finalGain()) normRows(cfg.norm, x, model.finalGain(), model.finalBias(), cfg.normEpsilon, final);
    else final = x;
    run.predicted = predictedPosition(model, ids);
    if (run.predicted >= p) predictionLogits(model, final.row(run.predicted - p), run.logits);
    if (!allFinite(final) || !run.logits.allFinite())
        model.explainNonFinite("logits", "the predicted token's logits overflow the float range");
    // What was read from the file is what it held: a file changed during the pass is refused.
    model.checkUnchanged();
    return run;
}

}  // namespace

Eigen::Index tiledAttentionFrom() { return tiledFrom().load(std::memory_order_relaxed); }
Eigen::Index useTiledAttentionFrom(Eigen::Index tokens) { return tiledFrom().exchange(std::max<Eigen::Index>(tokens, 0)); }
const char* attentionStrategyName(const Config& cfg, PassMaps maps, Eigen::Index tokens) {
    const bool tiles = cfg.causal && cfg.attnSoftcap == 0.0f && maps != PassMaps::Kept && tokens > tiledAttentionFrom();
    return tiles ? "tiles, online softmax" : "row blocks";
}

void mapWeightRows(const Run& run, const Config& cfg, int layer, int head, Eigen::Index r0, Eigen::Ref<Mat> out) {
    const Eigen::Index t = run.tokens(), n = out.rows(), dh = cfg.headDim;
    if (layer < 0 || layer >= run.layerCount() || head < 0 || head >= run.headCount() || r0 < 0 || r0 + n > t || out.cols() != t)
        throw std::invalid_argument("mapWeightRows: rows, layer or head outside the pass");
    out.setZero();
    if (n == 0) return;
    // The keys the rows may read: up to the last row (causal), or all, their scores as the pass made them.
    const Eigen::Index width = cfg.causal ? r0 + n : t;
    const KeptView qkv = run.qkv(layer);
    const MatRef q = qkv.block(r0, head * dh, n, dh), k = qkv.block(0, cfg.qWidth() + cfg.kvHeadOf(head) * dh, width, dh);
    thread_local TaskScratch s;
    packKeys(k, s.keys);
    const float scale = cfg.scoreScale();
    const QkMask band{.causal = cfg.causal, .window = cfg.window(layer)};
    const auto top = run.scoreMax(layer).row(head), sum = run.logSum(layer).row(head);
    const std::vector<int> hidden = run.hiddenTokens();
    // A few rows at a time, each over the keys up to its last row (the causal triangle's scores
    // are not computed), their scores staying in cache for the exponentials.
    const Eigen::Index step = scoreBlockRows(width, 48);
    s.scores.resize(static_cast<std::size_t>(std::min(step, n) * width));
    for (Eigen::Index b0 = 0; b0 < n; b0 += step) {
        const Eigen::Index rows = std::min(step, n - b0), keys = cfg.causal ? r0 + b0 + rows : t;
        Eigen::Map<Mat> scores(s.scores.data(), rows, keys);
        scoreRows(q.middleRows(b0, rows), k.topRows(keys), s.keys, scores);  // keys' first panels are k.topRows(keys)'s
        capScores(scores, scale, cfg.attnSoftcap);
        for (Eigen::Index r = 0; r < rows; ++r) {
            const Eigen::Index i = r0 + b0 + r;
            if (!std::isfinite(sum(i))) continue;  // no key to read: a zero row, as the pass gave
            // the keys of the row's band (causal or not, within the window), exp on whole packets
            const KeyBand keysRead = readableKeys(band, i, t);
            out.row(b0 + r).segment(keysRead.lo, keysRead.hi - keysRead.lo).array() =
                ((scores.row(r).segment(keysRead.lo, keysRead.hi - keysRead.lo).array() - top(i)) * scale - sum(i)).exp();
            for (const int j : hidden)
                if (j >= keysRead.lo && j < keysRead.hi) out(b0 + r, j) = 0.0f;
        }
    }
}

static_assert(kTileSinkRows == kWeightTileRows, "mapWeightTiles hands over weightTiles' blocks");

void mapWeightTiles(const Run& run, const Config& cfg, int layer, int head, Eigen::Index r0, Eigen::Index n, TileSink& sink,
                    Eigen::Index k0, Eigen::Index k1) {
    const Eigen::Index t = run.tokens(), dh = cfg.headDim;
    if (layer < 0 || layer >= run.layerCount() || head < 0 || head >= run.headCount() || r0 < 0 || n < 0 || r0 + n > t)
        throw std::invalid_argument("mapWeightTiles: rows, layer or head outside the pass");
    if (n == 0) return;
    const std::vector<int> hidden = run.hiddenTokens();
    const QkMask mask{
        .scale = cfg.scoreScale(), .causal = cfg.causal, .window = cfg.window(layer), .hidden = &hidden, .softcap = cfg.attnSoftcap};
    // Every key the rows may read (and is asked for), from a tile's edge, and the rows' queries.
    const KeyRange range = tileKeyRange(mask, t, r0, n, k0, k1);
    const KeptView qkv = run.qkv(layer);
    const MatRef k = qkv.block(range.first, cfg.qWidth() + cfg.kvHeadOf(head) * dh, range.end - range.first, dh);
    const auto top = run.scoreMax(layer).row(head), sum = run.logSum(layer).row(head);
    weightTiles(qkv.block(r0, head * dh, n, dh), k, range, top.data(), sum.data(), mask, t, r0, k0, k1, sink);
}

Run forward(const Checkpoint& model, const std::vector<int>& ids, const Progress* progress, PassMaps maps, const std::vector<int>& types) {
    return forwardFrom(model, ids, types, nullptr, 0, progress, maps);
}

Run forwardAppend(const Checkpoint& model, const std::vector<int>& ids, const Run& previous) {
    // At least the last position is computed: the logits are of the last position.
    auto p = static_cast<Eigen::Index>(commonPrefix(ids, previous.ids));
    p = std::min<Eigen::Index>(p, static_cast<Eigen::Index>(ids.size()) - 1);
    const Config& cfg = model.config();
    // An edited pass's positions are not a plain pass's (and its store may hold only some layers).
    const bool sameShape = previous.edits.empty() && previous.computedFrom() == 0 && previous.layerCount() == cfg.nLayer &&
                           previous.headCount() == cfg.nHead && previous.final().cols() == cfg.nEmbd &&
                           previous.qkv(0).cols() == cfg.qkvWidth();
    // An encoder's earlier positions read the later ones: its pass is whole; so is one whose
    // LongRoPE factors change with the length (every position turns by the long ones past it).
    const auto longRope = [&](std::size_t tokens) {
        for (int l = 0; l < cfg.nLayer; ++l)
            if (const Rope& r = cfg.ropeOf(l); r.scaling == RopeScaling::LongRope && static_cast<long long>(tokens) > r.originalPositions)
                return true;
        return false;
    };
    const bool factorsChange = cfg.rotary && longRope(previous.ids.size()) != longRope(ids.size());
    if (p <= 0 || !sameShape || !cfg.causal || factorsChange) return forward(model, ids, nullptr, previous.maps());
    return forwardFrom(model, ids, {}, &previous, p, nullptr, previous.maps());
}

std::string interventionText(const Intervention& edit) {
    switch (edit.kind) {
        case Intervention::Kind::ZeroHead: return "ablate " + std::to_string(edit.layer) + "." + std::to_string(edit.head);
        case Intervention::Kind::MeanHead: return "ablate-mean " + std::to_string(edit.layer) + "." + std::to_string(edit.head);
        case Intervention::Kind::HideToken: break;
    }
    return "hide-token " + std::to_string(edit.token);
}

void checkInterventions(const Config& cfg, Eigen::Index tokens, const std::vector<Intervention>& edits, const std::string& field) {
    std::vector<std::string> fields;
    for (std::size_t n = 0; n < edits.size(); ++n) fields.push_back(field + "[" + std::to_string(n) + "]");
    checkInterventions(cfg, tokens, edits, fields);
}

void checkInterventions(const Config& cfg, Eigen::Index tokens, const std::vector<Intervention>& edits,
                        const std::vector<std::string>& fields) {
    for (std::size_t n = 0; n < edits.size(); ++n) {
        const Intervention& e = edits[n];
        const std::string& where = fields[n];
        if (e.kind == Intervention::Kind::HideToken) {
            if (e.token < 0 || e.token >= tokens)
                throw InputError(
                    where, "token " + std::to_string(e.token) + " is outside the sentence's tokens 0 … " + std::to_string(tokens - 1));
        } else {
            if (e.layer < 0 || e.layer >= cfg.nLayer)
                throw InputError(
                    where, "layer " + std::to_string(e.layer) + " is outside this model's layers 0 … " + std::to_string(cfg.nLayer - 1));
            if (e.head < 0 || e.head >= cfg.nHead)
                throw InputError(where,
                                 "head " + std::to_string(e.head) + " is outside this model's heads 0 … " + std::to_string(cfg.nHead - 1));
        }
        for (std::size_t m = 0; m < n; ++m) {
            const Intervention& o = edits[m];
            const bool hides = e.kind == Intervention::Kind::HideToken;
            if (hides != (o.kind == Intervention::Kind::HideToken)) continue;
            if (hides ? o.token == e.token : (o.layer == e.layer && o.head == e.head))
                throw InputError(where, hides ? "token " + std::to_string(e.token) + " is hidden twice"
                                              : "head " + std::to_string(e.layer) + "." + std::to_string(e.head) + " is ablated twice (" +
                                                    interventionText(o) + ", " + interventionText(e) + ")");
        }
    }
}

int firstChangedLayer(const std::vector<Intervention>& edits, int layers) {
    int first = layers;
    for (const Intervention& e : edits) first = std::min(first, e.kind == Intervention::Kind::HideToken ? 0 : e.layer);
    return first;
}

namespace {

std::vector<int> hiddenOf(const std::vector<Intervention>& edits) {
    std::vector<int> hidden;
    for (const Intervention& e : edits)
        if (e.kind == Intervention::Kind::HideToken) hidden.push_back(e.token);
    std::sort(hidden.begin(), hidden.end());
    return hidden;
}

}  // namespace

int firstDifferingLayer(const std::vector<Intervention>& a, const std::vector<Intervention>& b, int layers) {
    if (hiddenOf(a) != hiddenOf(b)) return 0;
    int first = layers;
    const auto missing = [&](const std::vector<Intervention>& from, const std::vector<Intervention>& in) {
        for (const Intervention& e : from)
            if (e.kind != Intervention::Kind::HideToken && std::find(in.begin(), in.end(), e) == in.end()) first = std::min(first, e.layer);
    };
    missing(a, b);
    missing(b, a);
    return first;
}

Run forwardEdited(const Checkpoint& model, const Run& base, const std::vector<Intervention>& edits, const Run* reuse,
                  const Progress* progress) {
    const Config& cfg = model.config();
    checkInterventions(cfg, base.tokens(), edits, "what-if");
    if (edits.empty()) return base;
    PassPlan plan;
    plan.source = &base;
    plan.firstLayer = firstChangedLayer(edits, cfg.nLayer);
    // An earlier edited pass over the same tokens holds the layers below where its edits and these
    // part: reuse them when that is higher than where these part from the plain pass.
    if (reuse && !reuse->edits.empty() && reuse->ids == base.ids && reuse->layerCount() == cfg.nLayer && reuse->headCount() == cfg.nHead) {
        const int differ = firstDifferingLayer(edits, reuse->edits, cfg.nLayer);
        if (differ == cfg.nLayer) {
            Run same = *reuse;
            same.edits = edits;
            return same;
        }
        if (differ > plan.firstLayer) plan.source = reuse, plan.firstLayer = differ;
    }
    if (plan.firstLayer > 0) {
        // The nearest pass in the chain that holds the layers below firstLayer (not one that
        // computed only layers at or above it).
        plan.below = RunAccess::shared(*plan.source);
        while (plan.below->firstLayer >= plan.firstLayer && plan.below->below) plan.below = plan.below->below;
    }
    plan.hidden = hiddenOf(edits);
    plan.heads.resize(static_cast<std::size_t>(cfg.nLayer));
    for (const Intervention& e : edits)
        if (e.kind != Intervention::Kind::HideToken) plan.heads[static_cast<std::size_t>(e.layer)].push_back(e);
    Run run = forwardFrom(model, base.ids, base.types, nullptr, 0, progress, base.maps(), &plan);
    run.edits = edits;
    return run;
}

std::vector<NextTokenChange> nextTokenChanges(const Vec& before, const Vec& after, int count) {
    if (before.size() == 0 || before.size() != after.size()) return {};  // nothing predicted (an encoder's text without a [MASK])
    const auto logSoftmax = [](const Vec& logits) {
        const double top = logits.maxCoeff();
        double sum = 0;
        for (Eigen::Index i = 0; i < logits.size(); ++i) sum += std::exp(static_cast<double>(logits[i]) - top);
        return top + std::log(sum);
    };
    const double zBefore = logSoftmax(before), zAfter = logSoftmax(after);
    std::vector<int> ids;
    for (const Vec* logits : {&before, &after})
        for (const NextToken& n : topNext(*logits, 1.0f, count))
            if (std::find(ids.begin(), ids.end(), n.id) == ids.end()) ids.push_back(n.id);
    std::vector<NextTokenChange> changes;
    for (const int id : ids) {
        const double b = before[id] - zBefore, a = after[id] - zAfter;
        changes.push_back({id, static_cast<float>(std::exp(b)), static_cast<float>(std::exp(a)), a - b});
    }
    std::stable_sort(changes.begin(), changes.end(), [](const NextTokenChange& x, const NextTokenChange& y) {
        const double dx = std::abs(x.deltaLogProb), dy = std::abs(y.deltaLogProb);
        return dx != dy ? dx > dy : x.before > y.before;
    });
    return changes;
}

}  // namespace attnviz::core::decoder
