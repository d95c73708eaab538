#include "core/labs/train.hpp"

#include "core/base/error.hpp"
#include "core/base/prng.hpp"
#include "core/scenario/embedding.hpp"

#include <cmath>
#include <cstdio>

namespace attnviz::core {
namespace {

MatD normalMatrix(Prng& prng, Eigen::Index rows, Eigen::Index cols, double scale) {
    MatD m(rows, cols);
    for (Eigen::Index i = 0; i < rows; ++i)
        for (Eigen::Index j = 0; j < cols; ++j) m(i, j) = scale * prng.normal();
    return m;
}

TinyModel zerosLike(const TinyModel& m) {
    TinyModel z;
    for (auto [out, in] : {std::pair{&z.embed, &m.embed},
                           {&z.pos, &m.pos},
                           {&z.wq, &m.wq},
                           {&z.wk, &m.wk},
                           {&z.wv, &m.wv},
                           {&z.wo, &m.wo},
                           {&z.wout, &m.wout}})
        *out = MatD::Zero(in->rows(), in->cols());
    return z;
}

// Every parameter matrix of a model, in one order (for Adam and the gradient checks).
std::vector<MatD*> parameters(TinyModel& m) { return {&m.embed, &m.pos, &m.wq, &m.wk, &m.wv, &m.wo, &m.wout}; }

void softmaxRowsInPlace(MatD& s) {
    for (Eigen::Index i = 0; i < s.rows(); ++i) {
        s.row(i).array() -= s.row(i).maxCoeff();
        s.row(i) = s.row(i).array().exp().matrix();
        s.row(i) /= s.row(i).sum();
    }
}

bool isTwoRelations(const TrainConfig& c) { return c.task == TrainTask::TwoRelations; }

// X [T, d] of example b.
MatD inputOf(const TinyModel& model, const TrainConfig& config, const TrainBatch& batch, std::size_t b) {
    if (isTwoRelations(config)) return batch.x[b];
    const int T = config.tokens;
    MatD x(T, config.dModel);
    const MatD sinusoid = config.positions == TrainPositions::Sinusoidal ? MatD(sinusoidalEncoding(T, config.dModel).cast<double>())
                                                                         : MatD::Zero(T, config.dModel);
    for (int t = 0; t < T; ++t) {
        x.row(t) = model.embed.row(batch.tokens[b][static_cast<std::size_t>(t)]) + sinusoid.row(t);
        if (config.positions == TrainPositions::Learned) x.row(t) += model.pos.row(t);
    }
    return x;
}

struct HeadCache {
    MatD q, k, v, a;  // [T, d_k], [T, d_k], [T, d_k], [T, T]
    MatD dropped;     // A_drop = A ⊙ mask [T, T]; empty without dropout
    // The weights O = · V uses: A_drop while training with dropout, else A.
    const MatD& weights() const { return dropped.size() ? dropped : a; }
};
struct Forward1 {
    MatD x, concat, y, probs;  // [T, d], [T, d], [T, d], [T, vocab]
    std::vector<HeadCache> heads;
};

// x: [T, d]; masks: null (inference) or [h] of [T, T], scaled, for this example.
Forward1 forwardOne(const TinyModel& m, const TrainConfig& config, const MatD& x, const std::vector<MatD>* masks = nullptr) {
    Forward1 f;
    f.x = x;
    const Eigen::Index h = config.heads, dk = config.dModel / config.heads;
    const double c = 1.0 / std::sqrt(static_cast<double>(dk));
    f.concat.resize(x.rows(), config.dModel);
    for (Eigen::Index i = 0; i < h; ++i) {
        HeadCache hc;
        hc.q = x * m.wq.middleCols(i * dk, dk);
        hc.k = x * m.wk.middleCols(i * dk, dk);
        hc.v = x * m.wv.middleCols(i * dk, dk);
        hc.a = (hc.q * hc.k.transpose()) * c;  // 1. scaled scores
        softmaxRowsInPlace(hc.a);              // 2. weights
        // 2b. dropout: A_drop = A ⊙ mask
        if (masks) hc.dropped = hc.a.cwiseProduct((*masks)[static_cast<std::size_t>(i)]);
        f.concat.middleCols(i * dk, dk) = hc.weights() * hc.v;  // 3. A V
        f.heads.push_back(std::move(hc));
    }
    f.y = f.concat * m.wo;  // 4. mix the heads
    if (!isTwoRelations(config)) {
        f.probs = f.y * m.wout;  // 5. logits, then probabilities
        softmaxRowsInPlace(f.probs);
    }
    return f;
}

// masks: [B][h] of [T, T].
void checkMasks(const DropoutMasks& masks, const TrainConfig& config, std::size_t B) {
    bool ok = masks.size() == B;
    for (const auto& example : masks) {
        ok = ok && example.size() == static_cast<std::size_t>(config.heads);
        for (const MatD& m : example) ok = ok && m.rows() == config.tokens && m.cols() == config.tokens;
    }
    if (!ok)
        throw InputError("dropout masks", "expected " + std::to_string(B) + " examples of " + std::to_string(config.heads) + " heads of " +
                                              std::to_string(config.tokens) + " × " + std::to_string(config.tokens));
}

// The two-relation targets of example b: every query looks at position 2, and at the planted token.
MatD positionTarget(int T) {
    MatD t = MatD::Zero(T, T);
    t.col(2).setOnes();
    return t;
}
MatD contentTarget(int T, int planted) {
    MatD t = MatD::Zero(T, T);
    t.col(planted).setOnes();
    return t;
}

}  // namespace

std::string trainTaskName(TrainTask task) {
    switch (task) {
        case TrainTask::TwoRelations: return "two-relations";
        case TrainTask::Reversal: return "reversal";
        case TrainTask::PreviousToken: return "previous-token";
    }
    return "";
}

TrainTask parseTrainTask(const std::string& name, const std::string& where) {
    for (TrainTask t : {TrainTask::TwoRelations, TrainTask::Reversal, TrainTask::PreviousToken})
        if (name == trainTaskName(t)) return t;
    throw InputError(where, "expected two-relations, reversal or previous-token, got '" + name + "'");
}

TinyModel initialModel(const TrainConfig& config) {
    Prng prng = Prng::stream(config.seed, "train:init");
    const int d = config.dModel;
    const double w = 1.0 / std::sqrt(static_cast<double>(d));
    TinyModel m;
    m.embed = normalMatrix(prng, config.vocab, d, 1.0);
    m.pos = config.positions == TrainPositions::Learned ? normalMatrix(prng, config.tokens, d, 1.0) : MatD::Zero(config.tokens, d);
    m.wq = normalMatrix(prng, d, d, w);
    m.wk = normalMatrix(prng, d, d, w);
    m.wv = normalMatrix(prng, d, d, w);
    m.wo = normalMatrix(prng, d, d, w);
    m.wout = normalMatrix(prng, d, config.vocab, w);
    return m;
}

TrainBatch makeBatch(const TrainConfig& config, int size, std::uint64_t seed) {
    Prng prng = Prng::stream(seed, "train:batch");
    TrainBatch batch;
    const int T = config.tokens;
    for (int b = 0; b < size; ++b) {
        if (isTwoRelations(config)) {
            // content: 2 normal coordinates, one token planted as [1, 0]; position: eye(T)[:, :2]
            MatD x = MatD::Zero(T, 4);
            for (int t = 0; t < T; ++t) x(t, 0) = prng.normal(), x(t, 1) = prng.normal();
            const int planted = static_cast<int>(prng.nextU64() % static_cast<std::uint64_t>(T));
            x(planted, 0) = 1.0, x(planted, 1) = 0.0;
            x(0, 2) = 1.0, x(1, 3) = 1.0;
            batch.x.push_back(x);
            batch.planted.push_back(planted);
            continue;
        }
        std::vector<int> tokens(static_cast<std::size_t>(T)), targets(static_cast<std::size_t>(T));
        for (int& t : tokens) t = static_cast<int>(prng.nextU64() % static_cast<std::uint64_t>(config.vocab));
        for (int t = 0; t < T; ++t)
            targets[static_cast<std::size_t>(t)] = config.task == TrainTask::Reversal ? tokens[static_cast<std::size_t>(T - 1 - t)]
                                                   : t == 0                           ? -1
                                                                                      : tokens[static_cast<std::size_t>(t - 1)];
        batch.tokens.push_back(tokens);
        batch.targets.push_back(targets);
    }
    return batch;
}

DropoutMasks makeDropoutMasks(const TrainConfig& config, int size, std::uint64_t seed) {
    DropoutMasks masks;
    if (config.dropout == 0.0f) return masks;
    Prng prng = Prng::stream(seed, "train:dropout");
    const double p = config.dropout, kept = 1.0 / (1.0 - p);
    const int T = config.tokens;
    for (int b = 0; b < size; ++b) {
        std::vector<MatD> heads;
        for (int i = 0; i < config.heads; ++i) {
            MatD mask(T, T);
            for (int r = 0; r < T; ++r)
                for (int c = 0; c < T; ++c) mask(r, c) = prng.uniform() > p ? kept : 0.0;
            heads.push_back(std::move(mask));
        }
        masks.push_back(std::move(heads));
    }
    return masks;
}

double lossAndGradient(const TinyModel& m, const TrainConfig& config, const TrainBatch& batch, TinyModel* grad, const DropoutMasks* masks) {
    const std::size_t B = isTwoRelations(config) ? batch.x.size() : batch.tokens.size();
    if (masks && masks->empty()) masks = nullptr;
    if (masks) checkMasks(*masks, config, B);
    const int T = config.tokens, h = config.heads;
    const Eigen::Index dk = config.dModel / config.heads;
    const double c = 1.0 / std::sqrt(static_cast<double>(dk));
    if (grad) *grad = zerosLike(m);
    // cross-entropy averages over every scored position of the batch
    double scored = 0;
    if (!isTwoRelations(config))
        for (const auto& targets : batch.targets)
            for (int y : targets) scored += y >= 0;
    double loss = 0;
    for (std::size_t b = 0; b < B; ++b) {
        const Forward1 f = forwardOne(m, config, inputOf(m, config, batch, b), masks ? &(*masks)[b] : nullptr);
        std::vector<MatD> dA(static_cast<std::size_t>(h), MatD::Zero(T, T));
        MatD dConcat = MatD::Zero(T, config.dModel);
        if (isTwoRelations(config)) {
            // MSE of the maps against the targets, averaged over the batch and the T² cells
            const double n = static_cast<double>(B) * T * T;
            const MatD tp = positionTarget(T), tc = contentTarget(T, batch.planted[b]);
            const MatD& a0 = f.heads[0].weights();
            const MatD& a1 = f.heads[h > 1 ? 1 : 0].weights();
            loss += (a0 - tp).squaredNorm() / n + (a1 - tc).squaredNorm() / n;
            dA[0] += 2.0 * (a0 - tp) / n;
            dA[h > 1 ? 1 : 0] += 2.0 * (a1 - tc) / n;
        } else {
            // 5. cross-entropy: d logits = (p − onehot) / N
            MatD dLogits = MatD::Zero(T, config.vocab);
            for (int t = 0; t < T; ++t) {
                const int y = batch.targets[b][static_cast<std::size_t>(t)];
                if (y < 0) continue;
                loss -= std::log(std::max(f.probs(t, y), 1e-300)) / scored;
                dLogits.row(t) = f.probs.row(t) / scored;
                dLogits(t, y) -= 1.0 / scored;
            }
            if (grad) {
                grad->wout.noalias() += f.y.transpose() * dLogits;
                const MatD dY = dLogits * m.wout.transpose();
                // 4. Y = concat W_O
                grad->wo.noalias() += f.concat.transpose() * dY;
                dConcat = dY * m.wo.transpose();
            }
        }
        if (!grad) continue;
        MatD dX = MatD::Zero(T, config.dModel);
        for (Eigen::Index i = 0; i < h; ++i) {
            const HeadCache& hc = f.heads[static_cast<std::size_t>(i)];
            // 3. O = A_drop V (A_drop = A without dropout)
            const MatD dO = dConcat.middleCols(i * dk, dk);
            MatD dAi = dA[static_cast<std::size_t>(i)] + dO * hc.v.transpose();
            const MatD dV = hc.weights().transpose() * dO;
            // 2b. A_drop = A ⊙ mask: the same mask on the way back
            if (masks) dAi = dAi.cwiseProduct((*masks)[b][static_cast<std::size_t>(i)]);
            // 2. softmax by rows: dS = A ⊙ (dA − rowsum(dA ⊙ A))
            const Eigen::VectorXd rowDot = (dAi.array() * hc.a.array()).rowwise().sum();
            const MatD dS = (hc.a.array() * (dAi.array().colwise() - rowDot.array())).matrix() * c;
            // 1. scores = Q Kᵀ · c
            const MatD dQ = dS * hc.k, dK = dS.transpose() * hc.q;
            grad->wq.middleCols(i * dk, dk).noalias() += f.x.transpose() * dQ;
            grad->wk.middleCols(i * dk, dk).noalias() += f.x.transpose() * dK;
            grad->wv.middleCols(i * dk, dk).noalias() += f.x.transpose() * dV;
            dX.noalias() += dQ * m.wq.middleCols(i * dk, dk).transpose() + dK * m.wk.middleCols(i * dk, dk).transpose() +
                            dV * m.wv.middleCols(i * dk, dk).transpose();
        }
        if (isTwoRelations(config)) continue;  // X is given
        // 0. X = E[token] + P
        for (int t = 0; t < T; ++t) {
            grad->embed.row(batch.tokens[b][static_cast<std::size_t>(t)]) += dX.row(t);
            if (config.positions == TrainPositions::Learned) grad->pos.row(t) += dX.row(t);
        }
    }
    return loss;
}

Trainer::Trainer(const TrainConfig& config) : m_config(config), m_batchSeed(config.seed) {
    if (isTwoRelations(m_config)) m_config.dModel = 4, m_config.tokens = 4, m_config.vocab = 2;
    if (m_config.heads < 1 || m_config.heads > m_config.dModel || m_config.dModel % m_config.heads != 0)
        throw InputError("heads", std::to_string(m_config.heads) + " heads do not divide d_model " + std::to_string(m_config.dModel));
    if (m_config.tokens < 2 || m_config.tokens > 64) throw InputError("tokens", "expected 2 to 64 tokens");
    if (m_config.vocab < 2 || m_config.vocab > 64) throw InputError("vocab", "expected 2 to 64 symbols");
    if (!(m_config.learningRate > 0.0) || m_config.learningRate > 1.0) throw InputError("learning rate", "expected a number in (0, 1]");
    if (!(m_config.dropout >= 0.0f && m_config.dropout < 1.0f)) {
        char got[32];
        std::snprintf(got, sizeof got, "%g", static_cast<double>(m_config.dropout));
        throw InputError("dropout", std::string("must be at least 0 and below 1, got ") + got);
    }
    m_model = initialModel(m_config);
    m_m = zerosLike(m_model);
    m_v = zerosLike(m_model);
    m_heldOut = makeBatch(m_config, 64, m_config.seed ^ 0x5eedULL);
}

double Trainer::step() {
    // each step's batch and dropout masks from their own streams of the step's seed
    const std::uint64_t stepSeed = m_batchSeed + static_cast<std::uint64_t>(m_steps) * 7919ULL;
    const TrainBatch batch = makeBatch(m_config, m_config.batch, stepSeed);
    const DropoutMasks masks = makeDropoutMasks(m_config, m_config.batch, stepSeed);
    TinyModel grad;
    const double loss = lossAndGradient(m_model, m_config, batch, &grad, &masks);
    // Adam (β1 0.9, β2 0.999, ε 1e-8) with bias correction
    ++m_steps;
    const double b1 = 0.9, b2 = 0.999;
    const double c1 = 1.0 - std::pow(b1, m_steps), c2 = 1.0 - std::pow(b2, m_steps);
    const auto params = parameters(m_model), grads = parameters(grad), ms = parameters(m_m), vs = parameters(m_v);
    for (std::size_t p = 0; p < params.size(); ++p) {
        *ms[p] = b1 * *ms[p] + (1 - b1) * *grads[p];
        *vs[p] = b2 * *vs[p] + (1 - b2) * grads[p]->cwiseProduct(*grads[p]);
        params[p]->array() -= m_config.learningRate * (ms[p]->array() / c1) / ((vs[p]->array() / c2).sqrt() + 1e-8);
    }
    return loss;
}

double Trainer::heldOutLoss() const { return lossAndGradient(m_model, m_config, m_heldOut, nullptr); }

std::vector<MatD> headWeights(const TinyModel& model, const TrainConfig& config, const TrainBatch& batch, std::size_t b,
                              const std::vector<MatD>* masks) {
    if (masks) checkMasks({*masks}, config, 1);
    const Forward1 f = forwardOne(model, config, inputOf(model, config, batch, b), masks);
    std::vector<MatD> maps;
    for (const HeadCache& hc : f.heads) maps.push_back(hc.weights());
    return maps;
}

// Inference: no dropout.
std::vector<MatD> Trainer::sampleAttention() const { return headWeights(m_model, m_config, m_heldOut, 0); }

Scenario Trainer::toScenario() const {
    Scenario s;
    s.name = "Trained: " + trainTaskName(m_config.task) + ", " + std::to_string(m_config.heads) + " head" +
             (m_config.heads > 1 ? "s" : "") + ", " + std::to_string(m_steps) + " steps";
    s.description = "Weights trained in attnviz's lab (seed " + std::to_string(m_config.seed) +
                    "); X is the first held-out example, positions included.";
    const MatD x = inputOf(m_model, m_config, m_heldOut, 0);
    s.x = x.cast<float>();
    std::vector<std::string> tokens;
    for (int t = 0; t < m_config.tokens; ++t) {
        if (isTwoRelations(m_config))
            tokens.push_back(t == m_heldOut.planted[0] ? "x" + std::to_string(t + 1) + "*" : "x" + std::to_string(t + 1));
        else tokens.emplace_back(1, static_cast<char>('a' + m_heldOut.tokens[0][static_cast<std::size_t>(t)]));
    }
    s.tokens = tokens;
    s.heads = m_config.heads;
    for (auto [spec, value] : {std::pair{&s.wq, &m_model.wq}, {&s.wk, &m_model.wk}, {&s.wv, &m_model.wv}, {&s.wo, &m_model.wo}}) {
        spec->kind = MatrixSpec::Kind::Explicit;
        spec->value = value->cast<float>();
    }
    return s;
}

}  // namespace attnviz::core
