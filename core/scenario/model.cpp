#include "core/scenario/model.hpp"
#include "core/scenario/shapes.hpp"

#include "core/attention/permutation.hpp"
#include "core/base/error.hpp"
#include "core/base/format.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <initializer_list>
#include <limits>
#include <optional>
#include <tuple>
#include <utility>

namespace attnviz::core {
namespace {

std::vector<std::string> numberedLabels(const char* prefix, Eigen::Index n) {
    std::vector<std::string> labels;
    for (Eigen::Index i = 0; i < n; ++i) labels.push_back(prefix + std::to_string(i + 1));
    return labels;
}

void expectShape(const Mat& m, Eigen::Index rows, Eigen::Index cols, const std::string& field, const std::string& why) {
    if (m.rows() != rows || m.cols() != cols)
        throw InputError(field, "expected " + shapeString(rows, cols) + " (" + why + "), got " + shapeString(m.rows(), m.cols()));
}

Mat projectionMatrix(const MatrixSpec& spec, int rows, int cols, int headWidth, std::uint64_t seed, const std::string& field,
                     const std::string& why) {
    switch (spec.kind) {
        case MatrixSpec::Kind::Random: return xavierMatrix(rows, cols, headWidth, seed, field);
        case MatrixSpec::Kind::Identity:
            if (rows != cols)
                throw InputError(field,
                                 "\"identity\" needs a square matrix, but the shape is " + shapeString(rows, cols) + " (" + why + ")");
            return Mat::Identity(rows, cols);
        case MatrixSpec::Kind::Explicit: expectShape(spec.value, rows, cols, field, why); return spec.value;
        case MatrixSpec::Kind::None: return {};
    }
    return {};
}

// One of the matrices a model holds itself (X, weights), for the memory estimate.
struct MatrixSize {
    const char* name;
    long long rows, cols;
    int copies = 1;  // 2: also kept packed for a product
};

// The model's own matrices count as well as the forward pass's: with one token and a huge d_k
// the weights are nearly all of it.
// `projects`: token mode, where each head keeps its W_Q, W_K, W_V slices packed for its
// projections (as many bytes as W_Q, W_K and W_V together).
// The heads' count is checked where it is resolved (resolveShapes); d_k and d_v come after the
// bytes: a wide head is first a question of memory, which that message sizes, and their own
// limit then bounds the work the bytes do not show (Q Kᵀ is T² d_k multiply-adds).
void checkLimits(long long tq, long long tk, long long heads, long long dModel, long long dOut, long long dk, long long dv,
                 std::initializer_list<MatrixSize> modelMatrices, const Limits& limits, bool projects) {
    if (tq > limits.maxTokens || tk > limits.maxTokens)
        throw InputError("tokens", std::to_string(std::max(tq, tk)) + " tokens is over the limit of " + std::to_string(limits.maxTokens));
    if (dModel > limits.maxDModel)
        throw InputError("d_model", std::to_string(dModel) + " is over the limit of " + std::to_string(limits.maxDModel));
    if (dOut > limits.maxDModel)
        throw InputError("W_O", std::to_string(dOut) + " columns (d_out) is over the limit of " + std::to_string(limits.maxDModel));
    const std::uint64_t forward = forwardBytes(tq, tk, heads, std::max(dModel, dOut), dk, dv);
    const long double copies = projects ? 4.0L * dModel * heads * static_cast<long double>(2 * dk + dv) : 0.0L;
    long double total = static_cast<long double>(forward) + copies;
    const MatrixSize* largest = nullptr;
    const auto bytesOf = [](const MatrixSize& m) { return 4.0L * m.rows * m.cols; };
    for (const MatrixSize& m : modelMatrices) {
        total += m.copies * bytesOf(m);
        if (!largest || bytesOf(m) > bytesOf(*largest)) largest = &m;
    }
    if (total > static_cast<long double>(limits.maxBytes)) {
        const std::uint64_t bytes = total > 1.8e19L ? UINT64_MAX : static_cast<std::uint64_t>(total);
        if (largest && bytesOf(*largest) > static_cast<long double>(forward))
            throw InputError(largest->name, "this needs about " + formatBytes(bytes) + " (" + largest->name + " alone is " +
                                                shapeString(largest->rows, largest->cols) + "), over the limit of " +
                                                formatBytes(limits.maxBytes));
        throw InputError("heads", "this needs about " + formatBytes(bytes) + " (" + std::to_string(heads) + " heads x " +
                                      std::to_string(tq) + " x " + std::to_string(tk) + " scores and weights), over the limit of " +
                                      formatBytes(limits.maxBytes));
    }
    for (const auto& [name, width] : {std::pair{"d_k", dk}, {"d_v", dv}})
        if (width > limits.maxHeadWidth)
            throw InputError(name, std::to_string(width) + " is over the limit of " + std::to_string(limits.maxHeadWidth));
}

Model buildExplicit(const Scenario& s, bool applySwaps, const Limits& limits) {
    if (!s.k) throw InputError("K", "required when Q is given");
    if (!s.v) throw InputError("V", "required when Q is given");
    if (s.x) throw InputError("X", "cannot be combined with explicit Q, K, V");
    for (const auto* spec : {&s.wq, &s.wk, &s.wv})
        if (spec->kind != MatrixSpec::Kind::Random)
            throw InputError(spec == &s.wq ? "W_Q" : spec == &s.wk ? "W_K" : "W_V", "cannot be combined with explicit Q, K, V");
    if (s.positional != Positional::None)
        throw InputError("positional", "explicit Q, K, V are used as given; positional encoding needs token inputs");
    if (s.heads && *s.heads != 1) throw InputError("heads", "explicit Q, K, V describe one head");
    if (s.kvHeads && *s.kvHeads != 1) throw InputError("kv_heads", "explicit Q, K, V describe one head");
    if (s.length) throw InputError("length", "repeats tokens; it cannot stretch explicit Q, K, V");
    Model m;
    m.explicitQkv = true;
    m.q = *s.q;
    m.k = *s.k;
    m.v = *s.v;
    m.dk = static_cast<int>(m.q.cols());
    m.dv = static_cast<int>(m.v.cols());
    if (m.k.cols() != m.q.cols())
        throw InputError("K", "expected " + std::to_string(m.dk) + " columns (d_k, as Q), got " + std::to_string(m.k.cols()));
    if (m.v.rows() != m.k.rows())
        throw InputError("V", "expected " + std::to_string(m.k.rows()) + " rows (one per key, as K), got " + std::to_string(m.v.rows()));
    if (s.dk && *s.dk != m.dk)
        throw InputError("d_k", std::to_string(*s.dk) + " given, but Q is " + shapeString(m.q.rows(), m.dk) + " (T_q x d_k)");
    if (s.dv && *s.dv != m.dv)
        throw InputError("d_v", std::to_string(*s.dv) + " given, but V is " + shapeString(m.v.rows(), m.dv) + " (T_k x d_v)");
    // W_O maps the head's output [T_q, d_v] to [T_q, d_out]; d_out is free here (no X to match).
    // A random W_O is d_v x d_v: checked before it is drawn.
    const int dOut = s.wo.kind == MatrixSpec::Kind::Explicit ? static_cast<int>(s.wo.value.cols()) : m.dv;
    const bool hasWo = s.wo.kind != MatrixSpec::Kind::None;
    checkLimits(m.q.rows(), m.k.rows(), 1, dOut, dOut, m.dk, m.dv,
                {{"Q", m.q.rows(), m.dk}, {"K", m.k.rows(), m.dk}, {"V", m.v.rows(), m.dv}, {"W_O", hasWo ? m.dv : 0, dOut, 2}}, limits,
                false);
    m.wo = projectionMatrix(s.wo, m.dv, dOut, dOut, s.seed, "W_O", "d_v x d_out");
    m.dModel = dOut;

    if (s.sentence || s.tokens) {
        m.queryTokens = s.tokens ? *s.tokens : tokenize(*s.sentence, s.tokenizer);
        if (static_cast<Eigen::Index>(m.queryTokens.size()) != m.q.rows())
            throw InputError(s.tokens ? "tokens" : "sentence",
                             std::to_string(m.queryTokens.size()) + " tokens, but Q has " + std::to_string(m.q.rows()) + " rows");
    } else {
        m.queryTokens = numberedLabels("q", m.q.rows());
    }
    if (s.keyTokens) {
        m.keyTokens = *s.keyTokens;
        if (static_cast<Eigen::Index>(m.keyTokens.size()) != m.k.rows())
            throw InputError("key_tokens",
                             std::to_string(m.keyTokens.size()) + " labels, but K has " + std::to_string(m.k.rows()) + " rows");
    } else {
        m.keyTokens = m.k.rows() == m.q.rows() ? m.queryTokens : numberedLabels("k", m.k.rows());
    }
    m.perm = identityPermutation(static_cast<int>(m.q.rows()));
    if (applySwaps && !s.swaps.empty()) {
        if (m.q.rows() != m.k.rows())
            throw InputError("swaps", "need as many queries as keys (self-attention); Q has " + std::to_string(m.q.rows()) +
                                          " rows, K has " + std::to_string(m.k.rows()));
        m.perm = permutationFromSwaps(static_cast<int>(m.q.rows()), s.swaps, "swaps");
        m.q = permuteRows(m.q, m.perm);
        m.k = permuteRows(m.k, m.perm);
        m.v = permuteRows(m.v, m.perm);
        m.queryTokens = permuteLabels(m.queryTokens, m.perm);
        m.keyTokens = permuteLabels(m.keyTokens, m.perm);
    }
    return m;
}

}  // namespace

std::uint64_t forwardBytes(long long tq, long long tk, long long heads, long long dModel, long long dk, long long dv) {
    // scores and weights; q, k, v and the output; k and v packed for the kernels; the scores'
    // two maxima per query
    const long double perHead = 2.0L * tq * tk + static_cast<long double>(tq) * dk + static_cast<long double>(tk) * dk +
                                static_cast<long double>(tk) * dv + static_cast<long double>(tq) * dv +
                                static_cast<long double>(tk) * (dk + dv) + 2.0L * tq;
    const long double total = 4.0L * (heads * perHead + 2.0L * tq * (heads * dv + dModel) + tq * dModel);
    return total > 1.8e19L ? UINT64_MAX : static_cast<std::uint64_t>(total);
}

std::uint64_t keptBytes(const Model& model, const Forward& forward) {
    std::uint64_t floats = 0;
    const auto add = [&](const Mat& m) { floats += static_cast<std::uint64_t>(m.size()); };
    for (const Mat* m : {&model.embeddings, &model.positional, &model.x, &model.wq, &model.wk, &model.wv, &model.wo, &model.q, &model.k,
                         &model.v, &model.ropeCos, &model.ropeSin})
        add(*m);
    floats += model.xTiles.tiles.size() + model.packed.o.panels.size();
    for (const auto* heads : {&model.packed.q, &model.packed.k, &model.packed.v})
        for (const PackedColumns& p : *heads) floats += p.panels.size();
    for (const HeadTensors& h : forward.heads) {
        for (const Mat* m : {&h.q, &h.k, &h.v, &h.scores, &h.weights, &h.output}) add(*m);
        floats += static_cast<std::uint64_t>(h.scoreMax.all.size() + h.scoreMax.causal.size());
        floats += h.packedKeys.panels.size() + h.packedValues.panels.size();
        for (const PackedColumns& p : h.packedProjections) floats += p.panels.size();
    }
    add(forward.concat);
    add(forward.output);
    floats += forward.packedWo.panels.size();
    return 4 * floats;
}

std::string projectionFormula(const Model& model, char which) {
    const std::string name(1, which);
    if (model.explicitQkv) return name + ", as the scenario gives it";
    const RowVec& bias = which == 'Q' ? model.bq : which == 'K' ? model.bk : model.bv;
    std::string f = "X W_" + name + (bias.size() != 0 ? " + b_" + name : "");
    const RowVec& norm = which == 'Q' ? model.qNorm : model.kNorm;
    if (which != 'V' && norm.size() != 0) f = "RMSNorm(" + f + ")";  // each head's vector, before RoPE
    if (which != 'V' && model.ropeCos.size() != 0) f = "RoPE(" + f + ")";
    return name + " = " + f;
}

std::string formatBytes(std::uint64_t bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double value = static_cast<double>(bytes);
    int unit = 0;
    while (value >= 1024.0 && unit < 6) value /= 1024.0, ++unit;
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, unit == 0 ? "%.0f %s" : "%.1f %s", value, units[unit]);
    return buffer;
}

std::vector<float> alibiSlopes(int heads) {
    // The slopes of P heads, P a power of two: a geometric sequence from 2^(-8/P) with that ratio.
    const auto powerOfTwo = [](int p, int count, int first, int step) {
        std::vector<float> out;
        for (int n = 0, e = first; n < count; ++n, e += step) out.push_back(static_cast<float>(std::exp2(-8.0 * e / p)));
        return out;
    };
    int p = 1;
    while (p * 2 <= heads) p *= 2;
    std::vector<float> slopes = powerOfTwo(p, p, 1, 1);
    // The rest: 2P heads' slopes 1, 3, 5, … (those between the ones already taken).
    const std::vector<float> extra = powerOfTwo(2 * p, heads - p, 1, 2);
    slopes.insert(slopes.end(), extra.begin(), extra.end());
    return slopes;
}

namespace {

// cos and sin of (positionOffset + t) · base^(-2i/d_k) for t < T, i < d_k/2, in double.
void ropeTables(Model& m, long long T, float base, int positionOffset) {
    const Eigen::Index half = m.dk / 2;
    m.ropeCos.resize(T, half);
    m.ropeSin.resize(T, half);
    for (Eigen::Index i = 0; i < half; ++i) {
        const double theta = std::pow(static_cast<double>(base), -2.0 * static_cast<double>(i) / m.dk);
        for (Eigen::Index t = 0; t < T; ++t) {
            const double angle = static_cast<double>(positionOffset + t) * theta;
            m.ropeCos(t, i) = static_cast<float>(std::cos(angle));
            m.ropeSin(t, i) = static_cast<float>(std::sin(angle));
        }
    }
}

}  // namespace

Model buildModel(const Scenario& s, bool applySwaps, const Limits& limits, int positionOffset) {
    if (s.model) throw InputError("model", "a scenario naming a model is built from its checkpoint (core/models/loaded_model.hpp)");
    if (s.q || s.k || s.v) {
        if (!s.q) throw InputError(s.k ? "K" : "V", "explicit K and V need an explicit Q too");
        return buildExplicit(s, applySwaps, limits);
    }
    if (s.keyTokens) throw InputError("key_tokens", "only for explicit Q, K, V (cross-attention)");

    Model m;
    std::vector<std::string> tokens;
    if (s.x) {
        if (s.sentence || s.tokens) {
            tokens = s.tokens ? *s.tokens : tokenize(*s.sentence, s.tokenizer);
            if (static_cast<Eigen::Index>(tokens.size()) != s.x->rows())
                throw InputError(s.tokens ? "tokens" : "sentence",
                                 std::to_string(tokens.size()) + " tokens, but X has " + std::to_string(s.x->rows()) + " rows");
        } else {
            tokens = numberedLabels("x", s.x->rows());
        }
    } else {
        tokens = s.tokens ? *s.tokens : tokenize(s.sentence ? *s.sentence : kDefaultSentence, s.tokenizer);
        if (tokens.empty()) throw InputError(s.tokens ? "tokens" : "sentence", "no tokens: the text is empty or only white space");
    }
    const int vocab = !s.x && s.embedding == EmbeddingKind::OneHot ? static_cast<int>(vocabulary(tokens).size()) : 0;
    const Shapes shapes = resolveShapes(s, vocab, limits);
    m.dModel = shapes.dModel;
    m.heads = shapes.heads;
    m.dk = shapes.dk;
    m.dv = shapes.dv;
    if (s.kvHeads) m.kvHeads = shapes.kvHeads;
    if (s.positional == Positional::Rope && m.dk % 2 != 0)
        throw InputError("d_k", std::to_string(m.dk) + " is odd; RoPE turns pairs of dimensions and needs an even d_k");
    if (s.length) {
        if (s.x) throw InputError("length", "repeats tokens; it cannot stretch an explicit X");
        if (*s.length > limits.maxTokens)
            throw InputError("length", std::to_string(*s.length) + " tokens is over the limit of " + std::to_string(limits.maxTokens));
        std::vector<std::string> cycled;
        cycled.reserve(static_cast<std::size_t>(*s.length));
        for (int t = 0; t < *s.length; ++t) cycled.push_back(tokens[static_cast<std::size_t>(t) % tokens.size()]);
        tokens = std::move(cycled);
    }
    for (std::string& t : tokens) t = sanitizeUtf8(t);
    const long long T = static_cast<long long>(tokens.size());

    const long long hk = static_cast<long long>(m.heads) * m.dk, hv = static_cast<long long>(m.heads) * m.dv;
    const long long kvHeads = m.kvHeadCount();
    const long long kk = kvHeads * m.dk, kvv = kvHeads * m.dv;
    if (std::max(hk, hv) > std::numeric_limits<int>::max())
        throw InputError(
            "heads", std::to_string(m.heads) + " heads x d_k " + std::to_string(m.dk) + " (d_v " + std::to_string(m.dv) + ") is too large");
    const bool hasWo = s.wo.kind != MatrixSpec::Kind::None;
    // embeddings, x, x's tiles packed for the projections (, positional)
    // (RoPE's cos and sin tables are T x d_k, less than X's T x d_model)
    const long long inputs = s.positional == Positional::Sinusoidal || s.positional == Positional::Rope ? 4 : 3;
    checkLimits(T, T, m.heads, m.dModel, shapes.dOut, m.dk, m.dv,
                {{"X", inputs * T, m.dModel},
                 {"W_Q", m.dModel, hk},
                 {"W_K", m.dModel, kk},
                 {"W_V", m.dModel, kvv},
                 {"W_O", hasWo ? hv : 0, shapes.dOut, 2}},
                limits, true);

    m.perm = identityPermutation(static_cast<int>(T));
    if (applySwaps && !s.swaps.empty()) m.perm = permutationFromSwaps(static_cast<int>(T), s.swaps, "swaps");
    m.queryTokens = permuteLabels(tokens, m.perm);
    m.keyTokens = m.queryTokens;

    // 1. token vectors, in the current (swapped) order
    if (s.x) m.embeddings = permuteRows(*s.x, m.perm);
    else if (s.embedding == EmbeddingKind::OneHot) m.embeddings = oneHotEmbeddings(m.queryTokens, m.dModel);
    else m.embeddings = randomEmbeddings(m.queryTokens, m.dModel, s.seed);
    // 2. position is added after the reordering: this is what breaks equivariance
    m.x = m.embeddings;
    if (s.positional == Positional::Sinusoidal) {
        m.positional = sinusoidalEncoding(static_cast<int>(T), m.dModel, positionOffset);
        m.x += m.positional;
    }
    // RoPE and ALiBi leave X alone: they act on each head's q and k, and on its logits.
    if (s.positional == Positional::Rope) ropeTables(m, T, s.ropeBase, positionOffset);
    if (s.positional == Positional::Alibi) m.alibiSlopes = alibiSlopes(m.heads);
    packRows(m.x, m.xTiles);
    // 3. projections (hk, hv fit an int: checked above)
    const std::string qkShape = "d_model x heads*d_k";
    const int hki = static_cast<int>(hk), hvi = static_cast<int>(hv);
    const bool grouped = m.kvHeads > 0;
    m.wq = projectionMatrix(s.wq, m.dModel, hki, m.dk, s.seed, "W_Q", qkShape);
    m.wk = projectionMatrix(s.wk, m.dModel, static_cast<int>(kk), m.dk, s.seed, "W_K", grouped ? "d_model x kv_heads*d_k" : qkShape);
    m.wv = projectionMatrix(s.wv, m.dModel, static_cast<int>(kvv), m.dv, s.seed, "W_V",
                            grouped ? "d_model x kv_heads*d_v" : "d_model x heads*d_v");
    m.wo = projectionMatrix(s.wo, hvi, shapes.dOut, shapes.dOut, s.seed, "W_O", "heads*d_v x d_out");
    packProjections(m);
    return m;
}

Settings buildSettings(const Scenario& s, const Model& model) {
    Settings settings;
    settings.temperature = s.temperature;
    settings.scaled = s.scaled;
    settings.causal = s.causal;
    settings.window = s.window > 0 ? s.window : model.window;
    for (std::size_t n = 0; n < s.padding.size(); ++n) {
        if (s.padding[n] >= model.tk())
            throw InputError("padding[" + std::to_string(n) + "]",
                             "key position " + std::to_string(s.padding[n]) + " is out of range (" + std::to_string(model.tk()) + " keys)");
        settings.paddedKeys.push_back(s.padding[n]);
    }
    // A model's what-if hides these tokens from every layer's keys: the shown layer's too, where
    // the swaps put them (position p holds the token from perm[p]).
    if (s.model)
        for (const int token : s.hiddenTokens) {
            int at = token;
            for (std::size_t p = 0; p < model.perm.size(); ++p)
                if (model.perm[p] == token) at = static_cast<int>(p);
            if (at < model.tk() && std::find(settings.paddedKeys.begin(), settings.paddedKeys.end(), at) == settings.paddedKeys.end())
                settings.paddedKeys.push_back(at);
        }
    if (s.mask) {
        if (s.mask->rows() != model.tq() || s.mask->cols() != model.tk())
            throw InputError("mask", "expected " + shapeString(model.tq(), model.tk()) + " (queries x keys), got " +
                                         shapeString(s.mask->rows(), s.mask->cols()));
        settings.custom = *s.mask;
    }
    return settings;
}

}  // namespace attnviz::core
