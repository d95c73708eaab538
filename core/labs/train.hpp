// Heads that learn: a one-layer attention model trained on the CPU in seconds, with a
// hand-written backward pass for every forward stage (as llm.c does), in double precision.
//
//   X = E[token] + P            [T, d]   (P: none, learned, or sinusoidal; the two-relation
//                                         task gives X directly)
//   per head h (d_k = d / h, columns h·d_k … of each W):
//     Q = X W_Q,h   K = X W_K,h   V = X W_V,h        [T, d_k]
//     A = softmax_rows(Q Kᵀ / √d_k)                   [T, T]
//     A_drop = A ⊙ M / (1 − p)  (training only)       [T, T]   M_ij ~ Bernoulli(1 − p)
//     O_h = A_drop V                                  [T, d_k]
//   Y = [O_1 | … | O_h] W_O                           [T, d]
//   logits = Y W_out                                  [T, vocab]
//
// Tasks (seed 000 §39.7.1 and Exercise 39.4):
//   two relations: X's first two columns are content (one token planted as [1, 0]), the last
//     two the position; the loss asks the attention maps to look at position 2 and at the
//     planted token, MSE (one head must serve both targets; with two, head 1 gets the first)
//   reversal: predict token T−1−t at position t (cross-entropy)
//   previous token: predict token t−1 at position t ≥ 1 (cross-entropy)
//
// Attention dropout (seed 001): while training, each weight of A is zeroed with probability p and
// the rest scaled by 1/(1 − p), so E[A_drop] = A; the masks come from the run's seed, one stream a
// step, so a run repeats exactly. The held-out loss and the maps shown use A itself (inference).
// On the two-relation task the scored maps are A_drop while training, as everything after the
// softmax sees them.
#pragma once

#include "core/scenario/scenario.hpp"

#include <Eigen/Core>

#include <cstdint>
#include <string>
#include <vector>

namespace attnviz::core {

using MatD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

enum class TrainTask { TwoRelations, Reversal, PreviousToken };
enum class TrainPositions { None, Learned, Sinusoidal };

struct TrainConfig {
    TrainTask task = TrainTask::Reversal;
    int heads = 1;
    TrainPositions positions = TrainPositions::Learned;
    int dModel = 16;  // the two-relation task uses 4
    int tokens = 6;   // T (the two-relation task uses 4)
    int vocab = 6;
    int batch = 32;
    double learningRate = 1e-2;
    std::uint64_t seed = 1;
    float dropout = 0.0f;  // p in [0, 1): attention dropout while training (0 = none)
};

// The trainable parameters; a gradient has the same shapes.
struct TinyModel {
    MatD embed;           // [vocab, d]
    MatD pos;             // [T, d] learned positions (zero and not trained unless learned)
    MatD wq, wk, wv, wo;  // [d, d]
    MatD wout;            // [d, vocab]
};

// One batch: token sequences and targets, or (two relations) X and the two target maps.
struct TrainBatch {
    std::vector<std::vector<int>> tokens, targets;  // [B][T]; target −1 = not scored
    std::vector<MatD> x;                            // two relations: [B] of [T, d]
    std::vector<int> planted;                       // two relations: the token planted as [1, 0]
};

// Dropout masks for one batch, already scaled: [B][h] of [T, T], each entry 0 (dropped) or
// 1/(1 − p) (kept), so A_drop = A ⊙ mask. Empty = no dropout.
using DropoutMasks = std::vector<std::vector<MatD>>;

class Trainer {
public:
    explicit Trainer(const TrainConfig& config);  // throws InputError for impossible settings

    // One Adam step on a fresh batch (with dropout when config.dropout > 0); returns that batch's
    // loss (before the step).
    double step();
    // The loss on a fixed held-out batch, without training and without dropout.
    double heldOutLoss() const;
    int steps() const { return m_steps; }

    const TrainConfig& config() const { return m_config; }
    const TinyModel& model() const { return m_model; }
    // The first held-out example's attention map for every head, without dropout: [h] of [T, T].
    std::vector<MatD> sampleAttention() const;
    // The first held-out example as a scenario (X, W_Q, W_K, W_V, W_O explicit, heads), so the
    // trained heads open in the app exactly as they are here.
    Scenario toScenario() const;

private:
    TrainConfig m_config;
    TinyModel m_model, m_m, m_v;  // parameters, Adam's moments
    TrainBatch m_heldOut;
    std::uint64_t m_batchSeed;
    int m_steps = 0;
};

// Loss of `model` on `batch`, and (when grad is not null) its gradient with respect to every
// parameter, with the attention weights multiplied by `masks` when given ([B][h] of [T, T]; the
// backward pass uses the same masks). Exposed for the gradient checks.
double lossAndGradient(const TinyModel& model, const TrainConfig& config, const TrainBatch& batch, TinyModel* grad,
                       const DropoutMasks* masks = nullptr);
TrainBatch makeBatch(const TrainConfig& config, int size, std::uint64_t seed);
// `size` examples' masks for config.dropout, from the stream (seed, "train:dropout"): entry kept
// when a uniform draw in (0, 1] exceeds p, i.e. with probability 1 − p. Empty when p is 0.
DropoutMasks makeDropoutMasks(const TrainConfig& config, int size, std::uint64_t seed);
// Example b's attention weights as O = · V uses them, per head: [h] of [T, T]; A_drop = A ⊙ mask
// when `masks` ([h] of [T, T], scaled) is given, else A.
std::vector<MatD> headWeights(const TinyModel& model, const TrainConfig& config, const TrainBatch& batch, std::size_t b,
                              const std::vector<MatD>* masks = nullptr);
TinyModel initialModel(const TrainConfig& config);

// "reversal", "previous-token", "two-relations"; and back (throws InputError).
std::string trainTaskName(TrainTask task);
TrainTask parseTrainTask(const std::string& name, const std::string& where);

}  // namespace attnviz::core
