// GPT-2's forward pass (gpt2.hpp gives the equations), computed for positions prefix … T-1 over
// the kept layers of earlier positions: prefix 0 is the whole pass.
#include "core/base/error.hpp"
#include "core/models/gpt2/gpt2.hpp"

#include <algorithm>
#include <cmath>
#include <exception>
#include <numeric>

namespace attnviz::core::gpt2 {

namespace {

// out: [rows, d] = LayerNorm of x's rows: (x - mean) / √(var + ε) · gain + bias; the mean and
// variance summed in double (a row of 1600 floats loses digits in float).
void layerNorm(const MatRef& x, const Weight& gain, const Weight& bias, float eps, Mat& out) {
    out.resize(x.rows(), x.cols());
    const auto g = gain.row(), b = bias.row();
    for (Eigen::Index r = 0; r < x.rows(); ++r) {
        const auto row = x.row(r);
        double sum = 0, squares = 0;
        for (Eigen::Index c = 0; c < x.cols(); ++c) sum += row[c];
        const double mean = sum / static_cast<double>(x.cols());
        for (Eigen::Index c = 0; c < x.cols(); ++c) squares += (row[c] - mean) * (row[c] - mean);
        const auto inv = static_cast<float>(1.0 / std::sqrt(squares / static_cast<double>(x.cols()) + eps));
        const auto m = static_cast<float>(mean);
        out.row(r) = ((row.array() - m) * inv) * g.array() + b.array();
    }
}

// out: [rows, n] = a [rows, k] · W [k, n] + bias [n], with W's packed panels.
void linear(const MatRef& a, const Weight& w, const Weight& bias, Mat& out) {
    out.resize(a.rows(), w.cols);
    multiplyPacked(a, nullptr, w.map(), w.packed, out);
    out.rowwise() += bias.row();
}

void activate(Activation act, Mat& m) {
    auto a = m.array();
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

void requireFinite(const Mat& m, const std::string& where) {
    if (!((m.array() * 0.0f).sum() == 0.0f)) throw InputError(where, "the activations overflow the float range");
}

// One head's attention for queries [p, T) over keys [0, T): rows [p, T) of `weights` ([T, T],
// rows before p already set), and out [T - p, d_k] = A v of those rows.
void attendRows(const Mat& q, const Mat& k, const Mat& v, float scale, Eigen::Index p, Mat& weights, Mat& out) {
    const Eigen::Index t = k.rows(), rows = t - p;
    Settings causal;
    causal.causal = true;
    PackedKeys keys;
    PackedColumns values;
    packKeys(k, keys);
    packColumns(v, values);
    ScoreMaxima maxima;
    maxima.resize(t);
    Mat scores(rows, t);
    out.resize(rows, v.cols());
    auto block = weights.middleRows(p, rows);
    scoreRows(q, k, keys, scores);
    scoreMaxima(scores, p, maxima);
    if (!softmaxRows(scores, scale, causal, block, p, &maxima)) throw InputError("attention", "Q Kᵀ overflows the float range");
    weighValues(block, v, values, out, p);
}

}  // namespace

std::size_t commonPrefix(const std::vector<int>& a, const std::vector<int>& b) {
    return static_cast<std::size_t>(
        std::mismatch(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(std::min(a.size(), b.size())), b.begin()).first - a.begin());
}

namespace {

Run forwardFrom(const Checkpoint& model, const std::vector<int>& ids, const Run* previous, Eigen::Index p) {
    const Config& cfg = model.config();
    const auto t = static_cast<Eigen::Index>(ids.size());
    if (t < 1) throw InputError("text", "no tokens: type some text for the model to read");
    if (t > cfg.nPositions)
        throw InputError("text", std::to_string(t) + " tokens are more than the model's " + std::to_string(cfg.nPositions) + " positions");
    for (const int id : ids)
        if (id < 0 || id >= cfg.vocabSize) throw InputError("token ids", "id " + std::to_string(id) + " is outside the vocabulary");
    const Eigen::Index d = cfg.nEmbd, heads = cfg.nHead, dk = cfg.headWidth(), rows = t - p;
    Settings scaling;  // τ = 1: the model's own softmax
    scaling.scaled = cfg.scaleAttnWeights;
    const float scale = logitScale(static_cast<int>(dk), scaling);

    Run run;
    run.ids = ids;
    run.layers.resize(static_cast<std::size_t>(cfg.nLayer));
    // 1. x = wte[ids] + wpe[positions], for the new positions.
    Mat x(rows, d);
    for (Eigen::Index i = 0; i < rows; ++i)
        x.row(i) = model.wte().map().row(ids[static_cast<std::size_t>(p + i)]) + model.wpe().map().row(p + i);

    Mat attn, mlp, concat(rows, d);
    for (int l = 0; l < cfg.nLayer; ++l) {
        const Block& b = model.blocks()[static_cast<std::size_t>(l)];
        Layer& layer = run.layers[static_cast<std::size_t>(l)];
        const Layer* old = previous ? &previous->layers[static_cast<std::size_t>(l)] : nullptr;
        // 2. the kept rows: those of earlier positions come from the previous run unchanged.
        layer.input.resize(t, d);
        layer.normed.resize(t, d);
        layer.qkv.resize(t, 3 * d);
        if (p > 0) {
            layer.input.topRows(p) = old->input.topRows(p);
            layer.normed.topRows(p) = old->normed.topRows(p);
            layer.qkv.topRows(p) = old->qkv.topRows(p);
        }
        layer.input.bottomRows(rows) = x;
        Mat normed;
        layerNorm(x, b.ln1Gain, b.ln1Bias, cfg.layerNormEpsilon, normed);
        layer.normed.bottomRows(rows) = normed;
        Mat qkv;
        linear(normed, b.attnW, b.attnBias, qkv);
        layer.qkv.bottomRows(rows) = qkv;
        // 3. each head: A = softmax_causal(q kᵀ · scale) for the new queries over every key.
        layer.weights.resize(static_cast<std::size_t>(heads));
        std::exception_ptr failure;
#pragma omp parallel for schedule(dynamic, 1) if (heads > 1)
        for (Eigen::Index h = 0; h < heads; ++h) {
            try {
                Mat& w = layer.weights[static_cast<std::size_t>(h)];
                w.setZero(t, t);
                if (p > 0) w.topLeftCorner(p, p) = old->weights[static_cast<std::size_t>(h)].topLeftCorner(p, p);
                const Mat q = layer.qkv.block(p, h * dk, rows, dk);
                const Mat k = layer.qkv.middleCols(d + h * dk, dk);
                const Mat v = layer.qkv.middleCols(2 * d + h * dk, dk);
                Mat out;
                attendRows(q, k, v, scale, p, w, out);
                concat.middleCols(h * dk, dk) = out;
            } catch (...) {
#pragma omp critical(attnviz_gpt2_failure)
                failure = std::current_exception();
            }
        }
        if (failure) std::rethrow_exception(failure);
        // 4. x += concat · c_proj + b; x += mlp(LayerNorm(x)).
        linear(concat, b.projW, b.projBias, attn);
        x += attn;
        layerNorm(x, b.ln2Gain, b.ln2Bias, cfg.layerNormEpsilon, normed);
        linear(normed, b.fcW, b.fcBias, mlp);
        activate(cfg.activation, mlp);
        linear(mlp, b.fcProjW, b.fcProjBias, attn);
        x += attn;
        requireFinite(x, "layer " + std::to_string(l));
    }
    // 5. ln_f, and the last position's logits against the (tied) embeddings.
    Mat final;
    layerNorm(x, model.lnfGain(), model.lnfBias(), cfg.layerNormEpsilon, final);
    run.final.resize(t, d);
    if (p > 0) run.final.topRows(p) = previous->final.topRows(p);
    run.final.bottomRows(rows) = final;
    run.logits = model.lmHead().map() * run.final.row(t - 1).transpose();
    return run;
}

}  // namespace

Run forward(const Checkpoint& model, const std::vector<int>& ids) { return forwardFrom(model, ids, nullptr, 0); }

Run forwardAppend(const Checkpoint& model, const std::vector<int>& ids, const Run& previous) {
    // At least the last position is computed: the logits are of the last position.
    auto p = static_cast<Eigen::Index>(commonPrefix(ids, previous.ids));
    p = std::min<Eigen::Index>(p, static_cast<Eigen::Index>(ids.size()) - 1);
    if (p <= 0 || previous.layers.size() != model.blocks().size()) return forward(model, ids);
    return forwardFrom(model, ids, &previous, p);
}

std::vector<NextToken> topNext(const Vec& logits, float temperature, int count) {
    const Eigen::Index n = logits.size();
    if (n == 0 || count <= 0) return {};
    // softmax(logits / τ), with the largest logit subtracted so nothing overflows.
    const double tau = std::max(static_cast<double>(temperature), 1e-6);
    const double top = logits.maxCoeff();
    double sum = 0;
    for (Eigen::Index i = 0; i < n; ++i) sum += std::exp((logits[i] - top) / tau);
    std::vector<int> order(static_cast<std::size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    const auto k = static_cast<std::ptrdiff_t>(std::min<Eigen::Index>(count, n));
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
                      [&](int a, int b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
    std::vector<NextToken> out;
    for (std::ptrdiff_t i = 0; i < k; ++i) {
        const int id = order[static_cast<std::size_t>(i)];
        out.push_back({id, logits[id], static_cast<float>(std::exp((logits[id] - top) / tau) / sum)});
    }
    return out;
}

std::vector<std::string> tokenLabels(const Checkpoint& model, const std::vector<int>& ids) {
    std::vector<std::string> labels;
    labels.reserve(ids.size());
    for (const int id : ids) labels.push_back(byteTokenLabel(model.tokenizer().tokenBytes(id)));
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
    m.x = run.layers[static_cast<std::size_t>(layer)].normed;
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
    return m;
}

}  // namespace attnviz::core::gpt2
