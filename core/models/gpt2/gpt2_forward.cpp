// GPT-2's forward pass (gpt2.hpp gives the equations), computed for positions prefix … T-1 over
// the kept layers of earlier positions: prefix 0 is the whole pass.
#include "core/base/error.hpp"
#include "core/base/pages.hpp"
#include "core/models/gpt2/gpt2.hpp"
#include "core/models/gpt2/gpt2_store.hpp"

#include <algorithm>
#include <cmath>
#include <exception>
#include <numeric>

namespace attnviz::core::gpt2 {

namespace {

// out: [rows, d] = LayerNorm of x's rows: (x - mean) / √(var + ε) · gain + bias; the mean and
// variance summed in double (a row of 1600 floats loses digits in float). Rows on every core.
void layerNorm(const MatRef& x, const Weight& gain, const Weight& bias, float eps, Eigen::Ref<Mat> out) {
    const auto g = gain.row(), b = bias.row();
    const Eigen::Index n = x.cols();
#pragma omp parallel for schedule(static) if (x.rows() * n >= (1 << 15))
    for (Eigen::Index r = 0; r < x.rows(); ++r) {
        const auto row = x.row(r);
        double sum = 0, squares = 0;
        for (Eigen::Index c = 0; c < n; ++c) sum += row[c];
        const double mean = sum / static_cast<double>(n);
        for (Eigen::Index c = 0; c < n; ++c) squares += (row[c] - mean) * (row[c] - mean);
        const auto inv = static_cast<float>(1.0 / std::sqrt(squares / static_cast<double>(n) + eps));
        const auto m = static_cast<float>(mean);
        out.row(r) = ((row.array() - m) * inv) * g.array() + b.array();
    }
}

// out: [rows, n] = a [rows, k] · W [k, n] + bias [n], with W's packed panels.
void linear(const MatRef& a, const Weight& w, const Weight& bias, Eigen::Ref<Mat> out) {
    multiplyPacked(a, nullptr, w.map(), w.packed, out);
    out.rowwise() += bias.row();
}

// The activation of every element of m, rows on every core.
void activate(Activation act, Eigen::Ref<Mat> m) {
#pragma omp parallel for schedule(static) if (m.size() >= (1 << 15))
    for (Eigen::Index r = 0; r < m.rows(); ++r) {
        auto a = m.row(r).array();
        switch (act) {
            case Activation::GeluTanh: {
                constexpr float kRoot2OverPi = 0.7978845608028654f;
                a = 0.5f * a * (1.0f + (kRoot2OverPi * (a + 0.044715f * a.cube())).tanh());
                break;
            }
            case Activation::GeluErf: a = a.unaryExpr([](float x) { return 0.5f * x * (1.0f + std::erf(x * 0.7071067811865476f)); }); break;
            case Activation::Relu: a = a.max(0.0f); break;
        }
    }
}

bool allFinite(const MatRef& m) { return (m.array() * 0.0f).sum() == 0.0f; }

// What one thread's heads reuse from head to head and pass to pass.
struct HeadScratch {
    PackedKeys keys;
    PackedColumns values;
    ScoreMaxima maxima;
    std::vector<float> scores;
};

// One head's attention for queries [p, T) over keys [0, T): block [T - p, T] = those rows of
// the weights, and out [T - p, d_k] = A v of those rows. False when the scores are not finite.
bool attendRows(const MatRef& q, const MatRef& k, const MatRef& v, float scale, Eigen::Index p, const Eigen::Ref<Mat>& block,
                const Eigen::Ref<Mat>& out) {
    thread_local HeadScratch s;
    const Eigen::Index t = k.rows(), rows = t - p;
    Settings causal;
    causal.causal = true;
    packKeys(k, s.keys);
    packColumns(v, s.values);
    s.maxima.resize(t);
    s.scores.resize(static_cast<std::size_t>(rows * t));
    Eigen::Map<Mat> scores(s.scores.data(), rows, t);
    scoreRows(q, k, s.keys, scores);
    scoreMaxima(scores, p, s.maxima);
    if (!softmaxRows(scores, scale, causal, block, p, &s.maxima)) return false;
    weighValues(block, v, s.values, out, p);
    return true;
}

// A claim on positions 0 … T-1 of a store whose first p hold previous's: previous's own store
// when it has room and no live pass reads past p, else a new one with them copied.
std::shared_ptr<const Run::Extent> claim(const Config& cfg, Eigen::Index t, const Run* previous, Eigen::Index p) {
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
        auto store = std::make_shared<Store>(cfg, t);
        const std::lock_guard<std::mutex> lock(store->mutex);
        return registered(store, t);
    }
    const std::shared_ptr<Store>& old = RunAccess::extent(*previous)->store;
    if (t <= old->capacity) {
        const std::lock_guard<std::mutex> lock(old->mutex);
        if (*old->live.rbegin() <= p) return registered(old, t);
    }
    auto store = std::make_shared<Store>(cfg, grownCapacity(cfg, t));
    const Eigen::Index c = store->capacity, d = store->d;
    for (int l = 0; l < cfg.nLayer; ++l) {
        keptBlock(store->input(l), p, d, d) = previous->input(l).topRows(p);
        keptBlock(store->normed(l), p, d, d) = previous->normed(l).topRows(p);
        keptBlock(store->qkv(l), p, 3 * d, 3 * d) = previous->qkv(l).topRows(p);
        for (int h = 0; h < cfg.nHead; ++h) keptBlock(store->weights(l, h), p, p, c) = previous->weights(l, h).topLeftCorner(p, p);
    }
    keptBlock(store->final(), p, d, d) = previous->final().topRows(p);
    const std::lock_guard<std::mutex> lock(store->mutex);
    return registered(store, t);
}

// The logits of one position: lm_head [vocab, d] · row, rows of lm_head on every core (a
// product of one row reads all of it: 154 MB for GPT-2 small).
void lastLogits(const Weight& head, const Eigen::Ref<const RowVec>& row, Vec& logits) {
    const auto w = head.map();
    const Eigen::Index vocab = w.rows();
    constexpr Eigen::Index kChunk = 2048;
    logits.resize(vocab);
#pragma omp parallel for schedule(static)
    for (Eigen::Index a = 0; a < vocab; a += kChunk) {
        const Eigen::Index n = std::min(kChunk, vocab - a);
        logits.segment(a, n).noalias() = w.middleRows(a, n) * row.transpose();
    }
}

}  // namespace

std::size_t commonPrefix(const std::vector<int>& a, const std::vector<int>& b) {
    return static_cast<std::size_t>(
        std::mismatch(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(std::min(a.size(), b.size())), b.begin()).first - a.begin());
}

void checkIds(const Config& cfg, const std::vector<int>& ids, const std::string& field) {
    if (ids.empty()) throw InputError(field, "no tokens: type some text for the model to read");
    if (static_cast<long long>(ids.size()) > cfg.nPositions)
        throw InputError(
            field, std::to_string(ids.size()) + " tokens are more than this model's " + std::to_string(cfg.nPositions) + " positions");
    for (const int id : ids)
        if (id < 0 || id >= cfg.vocabSize) throw InputError(field, "token id " + std::to_string(id) + " is outside the vocabulary");
}

Eigen::Index grownCapacity(const Config& cfg, Eigen::Index tokens) { return std::min<Eigen::Index>(cfg.nPositions, tokens + 32); }

namespace {

Run forwardFrom(const Checkpoint& model, const std::vector<int>& ids, const Run* previous, Eigen::Index p, const Progress* progress) {
    const Config& cfg = model.config();
    checkIds(cfg, ids, "token ids");
    model.checkUnchanged();
    const auto t = static_cast<Eigen::Index>(ids.size());
    const Eigen::Index d = cfg.nEmbd, heads = cfg.nHead, dk = cfg.headWidth(), rows = t - p;
    Settings scaling;  // τ = 1: the model's own softmax
    scaling.scaled = cfg.scaleAttnWeights;
    const float scale = logitScale(static_cast<int>(dk), scaling);

    Run run;
    run.ids = ids;
    RunAccess::attach(run, claim(cfg, t, previous, p));
    const Store& store = *RunAccess::extent(run)->store;
    const Eigen::Index c = store.capacity;
    // The pass's temporaries, in this thread's buffers kept from pass to pass (fresh pages cost
    // their faults: core/base/pages.hpp).
    thread_local std::vector<float, PageAllocator<float>> buffer;
    buffer.resize(static_cast<std::size_t>(rows * (4 * d + cfg.nInner)));
    Eigen::Map<Mat> x(buffer.data(), rows, d), attn(x.data() + rows * d, rows, d), normed(attn.data() + rows * d, rows, d),
        concat(normed.data() + rows * d, rows, d), mlp(concat.data() + rows * d, rows, cfg.nInner);
    // 1. x = wte[ids] + wpe[positions], for the new positions.
    for (Eigen::Index i = 0; i < rows; ++i)
        x.row(i) = model.wte().map().row(ids[static_cast<std::size_t>(p + i)]) + model.wpe().map().row(p + i);

    for (int l = 0; l < cfg.nLayer; ++l) {
        check(progress);
        const Block& b = model.blocks()[static_cast<std::size_t>(l)];
        // Earlier rows read no new key: the causal zeros of their new columns.
        for (int h = 0; h < heads; ++h) keptBlock(store.weights(l, h) + p, p, rows, c).setZero();
        // 2. the new positions' rows of the kept matrices (earlier ones are previous's).
        keptBlock(store.input(l) + p * d, rows, d, d) = x;
        KeptBlock normed1 = keptBlock(store.normed(l) + p * d, rows, d, d);
        layerNorm(x, b.ln1Gain, b.ln1Bias, cfg.layerNormEpsilon, normed1);
        linear(normed1, b.attnW, b.attnBias, keptBlock(store.qkv(l) + p * 3 * d, rows, 3 * d, 3 * d));
        KeptBlock qkv = keptBlock(store.qkv(l), t, 3 * d, 3 * d);
        // 3. each head: A = softmax_causal(q kᵀ · scale) for the new queries over every key.
        std::exception_ptr failure;
        bool finite = true;
#pragma omp parallel for schedule(dynamic, 1) if (heads > 1) reduction(&& : finite)
        for (Eigen::Index h = 0; h < heads; ++h) {
            try {
                finite =
                    attendRows(qkv.block(p, h * dk, rows, dk), qkv.middleCols(d + h * dk, dk), qkv.middleCols(2 * d + h * dk, dk), scale, p,
                               keptBlock(store.weights(l, static_cast<int>(h)) + p * c, rows, t, c), concat.middleCols(h * dk, dk)) &&
                    finite;
            } catch (...) {
#pragma omp critical(attnviz_gpt2_failure)
                failure = std::current_exception();
            }
        }
        if (failure) std::rethrow_exception(failure);
        if (!finite) model.explainNonFinite("layer " + std::to_string(l) + ": attention", "Q Kᵀ overflows the float range");
        // 4. x += concat · c_proj + b; x += mlp(LayerNorm(x)).
        linear(concat, b.projW, b.projBias, attn);
        x += attn;
        layerNorm(x, b.ln2Gain, b.ln2Bias, cfg.layerNormEpsilon, normed);
        linear(normed, b.fcW, b.fcBias, mlp);
        activate(cfg.activation, mlp);
        linear(mlp, b.fcProjW, b.fcProjBias, attn);
        x += attn;
        if (!allFinite(x)) model.explainNonFinite("layer " + std::to_string(l), "the activations overflow the float range");
    }
    // 5. ln_f, and the last position's logits against the (tied) embeddings.
    KeptBlock final = keptBlock(store.final() + p * d, rows, d, d);
    layerNorm(x, model.lnfGain(), model.lnfBias(), cfg.layerNormEpsilon, final);
    lastLogits(model.lmHead(), final.row(rows - 1), run.logits);
    if (!allFinite(final) || !run.logits.allFinite()) model.explainNonFinite("logits", "the next token's logits overflow the float range");
    // What was read from the file is what it held: a file changed during the pass is refused.
    model.checkUnchanged();
    return run;
}

}  // namespace

Run forward(const Checkpoint& model, const std::vector<int>& ids, const Progress* progress) {
    return forwardFrom(model, ids, nullptr, 0, progress);
}

Run forwardAppend(const Checkpoint& model, const std::vector<int>& ids, const Run& previous) {
    // At least the last position is computed: the logits are of the last position.
    auto p = static_cast<Eigen::Index>(commonPrefix(ids, previous.ids));
    p = std::min<Eigen::Index>(p, static_cast<Eigen::Index>(ids.size()) - 1);
    const Config& cfg = model.config();
    const bool sameShape =
        previous.layerCount() == cfg.nLayer && previous.headCount() == cfg.nHead && previous.normed(0).cols() == cfg.nEmbd;
    if (p <= 0 || !sameShape) return forward(model, ids);
    return forwardFrom(model, ids, &previous, p, nullptr);
}

std::vector<float> probabilities(const Vec& logits, const std::vector<NextToken>& tokens, float temperature) {
    std::vector<float> out;
    if (logits.size() == 0) return out;
    // softmax(logits / τ), with the largest logit subtracted so nothing overflows.
    const double tau = std::max(static_cast<double>(temperature), 1e-6);
    const double top = logits.maxCoeff();
    double sum = 0;
    for (Eigen::Index i = 0; i < logits.size(); ++i) sum += std::exp((logits[i] - top) / tau);
    out.reserve(tokens.size());
    for (const NextToken& t : tokens) out.push_back(static_cast<float>(std::exp((logits[t.id] - top) / tau) / sum));
    return out;
}

std::vector<NextToken> topNext(const Vec& logits, float temperature, int count) {
    const Eigen::Index n = logits.size();
    if (n == 0 || count <= 0) return {};
    std::vector<int> order(static_cast<std::size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    const auto k = static_cast<std::ptrdiff_t>(std::min<Eigen::Index>(count, n));
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
                      [&](int a, int b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
    std::vector<NextToken> out;
    for (std::ptrdiff_t i = 0; i < k; ++i) {
        const int id = order[static_cast<std::size_t>(i)];
        out.push_back({id, logits[id], 0.0f});
    }
    const std::vector<float> probs = probabilities(logits, out, temperature);
    for (std::size_t i = 0; i < out.size(); ++i) out[i].prob = probs[i];
    return out;
}

std::string tokenLabel(const Checkpoint& model, int id) {
    if (!model.tokenizer().hasId(id)) return "⟨id " + std::to_string(id) + "⟩";
    return byteTokenLabel(model.tokenizer().tokenBytes(id));
}

std::vector<std::string> tokenLabels(const Checkpoint& model, const std::vector<int>& ids) {
    std::vector<std::string> labels;
    labels.reserve(ids.size());
    for (const int id : ids) labels.push_back(tokenLabel(model, id));
    return labels;
}

Model layerModel(const Checkpoint& model, const Run& run, int layer, const std::vector<std::string>& labels) {
    const Config& cfg = model.config();
    if (layer < 0 || layer >= cfg.nLayer)
        throw InputError("layer", std::to_string(layer) + " is outside 0 … " + std::to_string(cfg.nLayer - 1));
    const Block& b = model.blocks()[static_cast<std::size_t>(layer)];
    const Eigen::Index d = cfg.nEmbd;
    Model m;
    m.queryTokens = labels;
    m.keyTokens = labels;
    m.x = run.normed(layer);
    packRows(m.x, m.xTiles);
    const auto w = b.attnW.map();
    m.wq = w.leftCols(d);
    m.wk = w.middleCols(d, d);
    m.wv = w.rightCols(d);
    m.wo = b.projW.map();
    const auto bias = b.attnBias.row();
    m.bq = bias.head(d);
    m.bk = bias.segment(d, d);
    m.bv = bias.tail(d);
    m.bo = b.projBias.row();
    m.heads = cfg.nHead;
    m.dk = m.dv = cfg.headWidth();
    m.dModel = cfg.nEmbd;
    m.perm.resize(labels.size());
    std::iota(m.perm.begin(), m.perm.end(), 0);
    model.checkUnchanged();  // the weights were copied from the file
    return m;
}

}  // namespace attnviz::core::gpt2
