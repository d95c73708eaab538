// The logit lens (nostalgebraist, 2020): the residual stream after each block read as the model
// reads its last one, through the final norm and the unembedding and whatever the model does
// after them (Gemma 2's final soft-capping; an encoder's masked-LM transform and vocabulary bias),
// so that each layer's guess at each position can be watched forming. Layer 0 is the embeddings
// (the stream entering the first block), layer l the stream after block l; the last layer's row
// is the model's own prediction, the next-token panel's.
#pragma once

#include "core/base/progress.hpp"
#include "core/models/decoder/decoder.hpp"

#include <cstddef>
#include <vector>

namespace attnviz::core::decoder {

struct LensToken {
    int id = 0;
    float prob = 0;  // softmax over the whole vocabulary at τ = 1
};

// One lens over positions [first, first + positions) of a pass, every layer.
struct LogitLens {
    int layers = 0;  // the model's blocks + 1 (the embeddings)
    Eigen::Index first = 0, positions = 0;
    int k = 0;                      // tokens kept per cell
    std::vector<LensToken> top;     // [layers][positions][k], most likely first
    std::vector<int> targets;       // [positions]: the token each position's target is; −1: none
    std::vector<float> targetProb;  // [layers][positions] the target's probability (0 without one)
    std::vector<int> targetRank;    // [layers][positions] 1 = the most likely; 0 without a target

    // A cell's index: `layer` 0 … layers − 1, `p` counted from `first`.
    std::size_t at(int layer, Eigen::Index p) const {
        return static_cast<std::size_t>(layer) * static_cast<std::size_t>(positions) + static_cast<std::size_t>(p);
    }
    const LensToken* cell(int layer, Eigen::Index p) const { return top.data() + at(layer, p) * static_cast<std::size_t>(k); }
};

// The most tokens a cell keeps.
inline constexpr int kMaxLensTokens = 20;

// The lens of `run` (a pass of `model`) over positions [first, first + count), the `k` most likely
// tokens of each cell (1 … kMaxLensTokens). `targets`: one token for each position (−1: none), or
// empty for each position's last-layer top token (what the model finally predicts there). The
// vocabulary is read once, a block of rows at a time in the file's type, for every layer and
// position together. Throws InputError when the model has no output head, when the pass keeps no
// residual stream (a long input's lean pass), or for positions or targets out of range; Cancelled
// once `progress` was asked to stop.
LogitLens logitLens(const Checkpoint& model, const Run& run, Eigen::Index first, Eigen::Index count, int k,
                    const std::vector<int>& targets = {}, Progress* progress = nullptr);

// The rows the lens unembeds for `layer` (0 … L) at positions [first, first + count): the stream
// after the final norm and an encoder's masked-LM transform, [count, d] (the last layer's are the
// rows whose product is the pass's logits).
Mat lensRows(const Checkpoint& model, const Run& run, int layer, Eigen::Index first, Eigen::Index count);

}  // namespace attnviz::core::decoder
