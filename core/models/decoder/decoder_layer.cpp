// What the families share beyond the pass: the next tokens' ranking, the tokens' labels, RoPE's
// frequencies, and one layer's attention as a scenario model.
#include "core/base/error.hpp"
#include "core/models/decoder/decoder.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace attnviz::core::decoder {

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
    const Layer& b = model.layers()[static_cast<std::size_t>(layer)];
    const Eigen::Index d = cfg.nEmbd, qw = cfg.qWidth(), kvw = cfg.kvWidth(), w = cfg.qkvWidth();
    Model m;
    m.queryTokens = labels;
    m.keyTokens = labels;
    // X, what the scenario's forward and the stages read: none from a Lean pass, whose shown layer
    // is read from the pass (the rows keep the token count).
    if (run.keepsActivations()) m.x = run.normed(layer);
    else m.x.resize(run.tokens(), 0);
    packRows(m.x, m.xTiles);
    // q | k | v's weights [d, w] and biases [w] side by side, as the parts lie in qkv's columns.
    Mat all(d, w);
    RowVec bias = RowVec::Zero(w);
    bool biased = false;
    Eigen::Index column = 0;
    for (std::size_t part = 0; part < b.qkv.size(); ++part) {
        const Eigen::Index n = b.qkv[part].cols;
        all.middleCols(column, n) = b.qkv[part].widened();
        if (b.qkvBias[part]) bias.segment(column, n) = b.qkvBias[part].row(), biased = true;
        column += n;
    }
    m.wq = all.leftCols(qw);
    m.wk = all.middleCols(qw, kvw);
    m.wv = all.rightCols(kvw);
    if (biased) {
        m.bq = bias.head(qw);
        m.bk = bias.segment(qw, kvw);
        m.bv = bias.tail(kvw);
    }
    m.wo = b.outW.widened();
    if (b.outBias) m.bo = b.outBias.row();
    m.heads = cfg.nHead;
    m.kvHeads = cfg.nKvHead == cfg.nHead ? 0 : cfg.nKvHead;
    m.dk = m.dv = cfg.headDim;
    m.dModel = cfg.nEmbd;
    if (cfg.qkNorm) {
        m.qNorm = b.qNorm.row();
        m.kNorm = b.kNorm.row();
        m.qkNormEpsilon = cfg.normEpsilon;
    }
    if (cfg.rotary) ropeTables(cfg, 0, m.x.rows(), m.ropeCos, m.ropeSin, layer);
    // The scenario divides by √d_k: a model's own scale (Gemma's query_pre_attn_scalar) is folded
    // into q, through its norm's gain where q is normed (RoPE is linear: it turns the scaled q alike).
    if (const double fold = cfg.scoreScale() * std::sqrt(static_cast<double>(cfg.headDim)); cfg.scaleScores && fold != 1.0) {
        if (cfg.qkNorm) m.qNorm *= static_cast<float>(fold);
        else m.wq *= static_cast<float>(fold), m.bq *= static_cast<float>(fold);
    }
    m.softcap = cfg.attnSoftcap;
    m.window = cfg.window(layer);
    m.perm.resize(labels.size());
    std::iota(m.perm.begin(), m.perm.end(), 0);
    model.checkUnchanged();  // the weights were copied from the file
    packProjections(m);
    return m;
}

float Config::scoreScale() const {
    Settings scaling;  // τ = 1: the model's own softmax
    scaling.scaled = scaleScores;
    return logitScale(scoreDim > 0 ? scoreDim : headDim, scaling);
}

std::vector<double> ropeFrequencies(const Config& cfg, int layer, Eigen::Index tokens) {
    const int width = cfg.rotaryWidth(), half = width / 2;
    const Rope& r = cfg.ropeOf(layer);
    // LongRoPE's factors: the long ones past the original context.
    const std::vector<double>& factors = tokens > r.originalPositions ? r.longFactors : r.shortFactors;
    std::vector<double> out(static_cast<std::size_t>(half));
    for (int i = 0; i < half; ++i) {
        // θ_i = base^(-2i/r)
        double f = 1.0 / std::pow(r.theta, 2.0 * i / width);
        switch (r.scaling) {
            case RopeScaling::None: break;
            case RopeScaling::Linear: f /= r.factor; break;
            case RopeScaling::Llama3: {
                // Wavelengths longer than the original context / low_freq_factor are slowed by the
                // factor, shorter than it / high_freq_factor kept, and those between blended.
                constexpr double kTwoPi = 6.283185307179586;
                const double old = r.originalPositions, wavelength = kTwoPi / f;
                const double lowWavelength = old / r.lowFreqFactor, highWavelength = old / r.highFreqFactor;
                if (wavelength > lowWavelength) {
                    f /= r.factor;
                } else if (wavelength >= highWavelength) {
                    const double smooth = (old / wavelength - r.lowFreqFactor) / (r.highFreqFactor - r.lowFreqFactor);
                    f = (1 - smooth) * f / r.factor + smooth * f;
                }
                break;
            }
            case RopeScaling::LongRope: f /= factors[static_cast<std::size_t>(i)]; break;
        }
        out[static_cast<std::size_t>(i)] = f;
    }
    return out;
}

void ropeTables(const Config& cfg, Eigen::Index first, Eigen::Index count, Mat& cosines, Mat& sines, int layer, Eigen::Index tokens) {
    const std::vector<double> frequencies = ropeFrequencies(cfg, layer, tokens > 0 ? tokens : first + count);
    const double gain = cfg.ropeOf(layer).scaling == RopeScaling::LongRope ? cfg.ropeOf(layer).attentionFactor : 1.0;
    const auto half = static_cast<Eigen::Index>(frequencies.size());
    cosines.resize(count, half);
    sines.resize(count, half);
    for (Eigen::Index t = 0; t < count; ++t)
        for (Eigen::Index i = 0; i < half; ++i) {
            const double angle = static_cast<double>(first + t) * frequencies[static_cast<std::size_t>(i)];
            cosines(t, i) = static_cast<float>(std::cos(angle) * gain);
            sines(t, i) = static_cast<float>(std::sin(angle) * gain);
        }
}

}  // namespace attnviz::core::decoder
