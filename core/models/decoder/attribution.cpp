#include "core/models/decoder/attribution.hpp"

#include "core/attention/kernels.hpp"
#include "core/base/error.hpp"
#include "core/base/utf8.hpp"
#include "core/models/decoder/decoder_store.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

namespace attnviz::core::decoder {
namespace {

using VecD = Eigen::RowVectorXd;

// A norm's divisor of row x: LayerNorm's √(var + ε), RMSNorm's √(mean x² + ε).
double divisor(Norm kind, const VecD& x, double eps) {
    const auto n = static_cast<double>(x.size());
    if (kind == Norm::RmsNorm) return std::sqrt(x.squaredNorm() / n + eps);
    const double mean = x.mean();
    return std::sqrt((x.array() - mean).square().sum() / n + eps);
}

// What a component c of the stream adds to the normed row, without the norm's bias: LayerNorm's
// (c − mean c) / σ ∘ g, RMSNorm's c / σ ∘ g (σ frozen).
VecD throughNorm(Norm kind, const VecD& c, double sigma, const VecD& gain) {
    const VecD centred = kind == Norm::LayerNorm ? VecD(c.array() - c.mean()) : c;
    return (centred / sigma).cwiseProduct(gain);
}

VecD rowOf(const KeptView& m, Eigen::Index r) { return m.row(r).cast<double>(); }

// Head h's output at `position` before W_O, z = A v, as the pass computed it: zero for an ablated
// head, its mean over the positions for a mean-ablated one (hidden tokens: mapWeightRows blocks them).
VecD headOutput(const Run& run, const Config& cfg, int layer, int h, Eigen::Index position, bool mean) {
    const Eigen::Index t = run.tokens(), dh = cfg.headDim;
    const Mat v = run.qkv(layer).middleCols(cfg.qWidth() + cfg.kvWidth() + static_cast<Eigen::Index>(cfg.kvHeadOf(h)) * dh, dh);
    if (!mean) {
        Mat a(1, t);
        mapWeightRows(run, cfg, layer, h, position, a);
        return (a * v).cast<double>();
    }
    Mat a(t, t);
    mapWeightRows(run, cfg, layer, h, 0, a);
    return (a * v).cast<double>().colwise().mean();
}

// One token's id for `text`, or −1: "#ID", the text's one token, or the one token of " " + text.
int oneToken(const Checkpoint& model, std::string_view text) {
    const ModelTokenizer& tok = model.tokenizer();
    if (text.size() > 1 && text[0] == '#' && text.size() <= 11 &&
        std::all_of(text.begin() + 1, text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        const long long id = std::stoll(std::string(text.substr(1)));
        return id < model.lmHead().storedRows() ? static_cast<int>(id) : -1;
    }
    // The word as it stands inside a sentence first (" Mary": GPT-2's and Llama 3's word tokens carry
    // their space; SentencePiece and WordPiece read " Mary" as "Mary" themselves), else as written.
    const bool spaced = !text.empty() && text[0] == ' ';
    for (const std::string& t : {spaced ? std::string(text) : " " + std::string(text), std::string(text)}) {
        std::vector<int> ids = tok.encode(t);
        if (const std::optional<int> bos = tok.bosId(); bos && !ids.empty() && ids.front() == *bos) ids.erase(ids.begin());
        if (ids.size() == 1) return ids[0];
        if (spaced) break;
    }
    return -1;
}

}  // namespace

AttributionTarget parseTarget(const Checkpoint& model, std::string_view text, const std::string& field) {
    const auto clipped = [&](std::string_view t) {
        const std::string s(t.substr(0, 40));
        return "\"" + sanitizeUtf8(s) + (t.size() > 40 ? "…" : "") + "\"";
    };
    if (text.empty()) throw InputError(field, "no token given");
    if (text.size() > 400)
        throw InputError(field, "a target is one token or two joined by \"-\", not " + std::to_string(text.size()) + " bytes");
    if (const int id = oneToken(model, text); id >= 0) return {id, -1};
    // a difference: the first "-" whose sides are each one token
    for (std::size_t at = text.find('-', 1); at != std::string_view::npos && at + 1 < text.size(); at = text.find('-', at + 1)) {
        const int a = oneToken(model, text.substr(0, at)), b = oneToken(model, text.substr(at + 1));
        if (a >= 0 && b >= 0) return {a, b};
    }
    throw InputError(field, clipped(text) +
                                " is not one token of this model's vocabulary (nor two joined by \"-\"); give a token's "
                                "text as the tokenizer splits it, or #ID");
}

double LogitAttribution::total() const {
    double sum = embeddings + finalBias;
    for (const double v : headTerms) sum += v;
    for (const double v : outBias) sum += v;
    for (const double v : mlpTerms) sum += v;
    return sum;
}

Vec positionLogits(const Checkpoint& model, const Run& run, Eigen::Index position) {
    if (position == run.predicted && run.logits.size() > 0) return run.logits;
    const Weight& head = model.lmHead();
    Vec logits(head.storedRows());
    const RowVec x = run.final().row(position);
    multiplyRowsByVector(head.source, head.type, head.storedRows(), head.storedCols(), x.data(), logits.data());
    if (const float cap = model.config().logitSoftcap; cap > 0.0f) logits = (logits.array() / cap).tanh() * cap;
    return logits;
}

LogitAttribution logitAttribution(const Checkpoint& model, const Run& run, Eigen::Index position, int target, int minus) {
    const Config& cfg = model.config();
    const char* where = "attribution";
    if (!cfg.causal || cfg.postNorm || model.headDense())
        throw InputError(where,
                         "direct logit attribution reads a decoder whose norms come before each block (GPT-2, Llama, Gemma, …); "
                         "this " +
                             cfg.family + " model's stream is normed after each block");
    if (!run.keepsActivations())
        throw InputError(where, "this pass keeps no residual stream (an input of " + std::to_string(run.tokens()) +
                                    " tokens keeps only what makes its maps); shorten the text");
    if (position < 0 || position >= run.tokens())
        throw InputError(where, "position " + std::to_string(position) + " is outside the " + std::to_string(run.tokens()) + " tokens");
    const Weight& unembed = model.lmHead();
    const Eigen::Index vocab = unembed.storedRows();
    const auto outside = [&](int t) {
        return InputError(where, "token " + std::to_string(t) + " is outside the vocabulary of " + std::to_string(vocab));
    };
    if (target < 0 || target >= vocab) throw outside(target);
    if (minus < -1 || minus >= vocab) throw outside(minus);

    LogitAttribution out;
    out.position = position;
    out.target = target;
    out.minus = minus;
    out.layers = cfg.nLayer;
    out.heads = cfg.nHead;
    // The target's direction, u = W_U[target] (− W_U[minus]).
    VecD u = unembed.storedRowsWidened(target, 1).cast<double>();
    if (minus >= 0) u -= unembed.storedRowsWidened(minus, 1).cast<double>();
    const VecD gain = model.finalGain() ? VecD(model.finalGain().row().cast<double>()) : VecD::Ones(cfg.nEmbd);
    const double eps = cfg.normEpsilon;

    // The stream's components at the position, in the order they were added.
    std::vector<VecD> heads(static_cast<std::size_t>(cfg.nLayer * cfg.nHead)), mlps(static_cast<std::size_t>(cfg.nLayer)),
        biases(static_cast<std::size_t>(cfg.nLayer), VecD::Zero(cfg.nEmbd));
    const VecD embeddings = rowOf(run.input(0), position);
    VecD x = embeddings;
    Mat scratchUp, scratchGate;
    for (int l = 0; l < cfg.nLayer; ++l) {
        const Layer& layer = model.layers()[static_cast<std::size_t>(l)];
        // Every head's z in its own row of a block-diagonal [h, h · d_h], through the packed W_O
        // at once: row h is head h's output (without the bias).
        Mat z = Mat::Zero(cfg.nHead, cfg.qWidth()), written(cfg.nHead, cfg.nEmbd);
        for (int h = 0; h < cfg.nHead; ++h) {
            bool zero = false, mean = false;
            for (const Intervention& e : run.edits)
                if (e.kind != Intervention::Kind::HideToken && e.layer == l && e.head == h) {
                    zero = zero || e.kind == Intervention::Kind::ZeroHead;
                    mean = mean || e.kind == Intervention::Kind::MeanHead;
                }
            if (!zero)
                z.block(h, static_cast<Eigen::Index>(h) * cfg.headDim, 1, cfg.headDim) =
                    headOutput(run, cfg, l, h, position, mean).cast<float>();
        }
        linear(z, layer.outW, {}, written);
        VecD attn = VecD::Zero(cfg.nEmbd);
        for (int h = 0; h < cfg.nHead; ++h) {
            VecD& w = heads[static_cast<std::size_t>(l) * static_cast<std::size_t>(cfg.nHead) + static_cast<std::size_t>(h)];
            w = written.row(h).cast<double>();
            attn += w;
        }
        if (layer.outBias) biases[static_cast<std::size_t>(l)] = layer.outBias.row().cast<double>();
        attn += biases[static_cast<std::size_t>(l)];
        // Gemma's norm of the attention's output, its divisor frozen: each part scaled alike.
        if (layer.attnOutNormGain) {
            const double sigma = divisor(Norm::RmsNorm, attn, eps);
            const VecD g = layer.attnOutNormGain.row().cast<double>();
            for (int h = 0; h < cfg.nHead; ++h) {
                VecD& written = heads[static_cast<std::size_t>(l) * static_cast<std::size_t>(cfg.nHead) + static_cast<std::size_t>(h)];
                written = (written / sigma).cwiseProduct(g);
            }
            biases[static_cast<std::size_t>(l)] = (biases[static_cast<std::size_t>(l)] / sigma).cwiseProduct(g);
            attn = (attn / sigma).cwiseProduct(g);
        }
        x += attn;
        // The MLP of the stream after the attention, as the pass computes it.
        const Mat mid = x.cast<float>();
        Mat normed(1, cfg.nEmbd), mlpOut(1, cfg.nEmbd);
        scratchUp.resize(1, cfg.nInner);
        scratchGate.resize(1, cfg.nInner);
        normRows(cfg.norm, mid, layer.norm2Gain, layer.norm2Bias, cfg.normEpsilon, normed);
        mlp(cfg, layer, normed, scratchUp, scratchGate, mlpOut);
        if (layer.mlpOutNormGain) normRows(cfg.norm, mlpOut, layer.mlpOutNormGain, {}, cfg.normEpsilon, mlpOut);
        mlps[static_cast<std::size_t>(l)] = mlpOut.cast<double>();
        x += mlps[static_cast<std::size_t>(l)];
    }

    // The final norm's divisor frozen at the stream's value, each component projected through it.
    out.scale = divisor(cfg.norm, x, eps);
    const auto term = [&](const VecD& c) { return throughNorm(cfg.norm, c, out.scale, gain).dot(u); };
    out.embeddings = term(embeddings);
    out.headTerms.reserve(heads.size());
    for (const VecD& c : heads) out.headTerms.push_back(term(c));
    for (const VecD& c : biases) out.outBias.push_back(term(c));
    for (const VecD& c : mlps) out.mlpTerms.push_back(term(c));
    if (model.finalBias() && cfg.norm == Norm::LayerNorm) out.finalBias = model.finalBias().row().cast<double>().dot(u);
    // The pass's own logit (difference), before any soft-capping: its final row against u.
    out.logit = rowOf(run.final(), position).dot(u);
    return out;
}

}  // namespace attnviz::core::decoder
