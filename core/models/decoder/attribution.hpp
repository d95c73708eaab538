// Direct logit attribution (as TransformerLens computes it with decompose_resid and
// apply_ln_to_stack): the residual stream at one position is a sum of what wrote into it (the
// embeddings, each head's output z_h · W_O^h, each layer's W_O bias, each MLP's output); the final
// norm is linear in that sum once its divisor is frozen at the pass's value (LayerNorm's
// √(var + ε), RMSNorm's √(mean x² + ε)), so the target's logit is the sum of each component's
// projection through the norm onto the target's unembedding direction, plus the norm's bias term.
// The target is a token, or the difference of two ("Mary" − "John": the logit difference the IOI
// papers read). Of a decoder with its norms before each block (GPT-2, the Llama family, Gemma:
// its sandwich norms' divisors frozen too, the logit before the final soft-capping).
#pragma once

#include "core/models/decoder/decoder.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace attnviz::core::decoder {

struct LogitAttribution {
    Eigen::Index position = 0;
    int target = -1, minus = -1;  // the target token, and the token whose logit is subtracted (−1: none)
    int layers = 0, heads = 0;
    double embeddings = 0;          // the embeddings' term (with the learned positions where the model adds them)
    std::vector<double> headTerms;  // [layers × heads], layer-major: each head's output through its rows of W_O
    std::vector<double> outBias;    // [layers]: each W_O bias's term (0 without one)
    std::vector<double> mlpTerms;   // [layers]: each MLP's output, its down projection's bias included
    double finalBias = 0;           // the final norm's bias · the direction (0 for RMSNorm)
    double scale = 0;               // the final norm's divisor, frozen
    double logit = 0;               // the pass's own logit (difference) at the position, before any soft-capping

    double head(int layer, int h) const {
        return headTerms[static_cast<std::size_t>(layer) * static_cast<std::size_t>(heads) + static_cast<std::size_t>(h)];
    }
    // Every term and the final bias: the logit, to float rounding.
    double total() const;
};

// The attribution at `position` of `target` (minus `minus`, −1: none) in `run`, a pass of `model`
// (its what-if edits as they acted: an ablated head's zeroed or averaged output). Throws
// InputError for an encoder or a post-norm model, a pass that keeps no residual stream (a long
// input's lean pass), a position or token out of range.
LogitAttribution logitAttribution(const Checkpoint& model, const Run& run, Eigen::Index position, int target, int minus = -1);

// A target as a person writes it: one token's text, read as the word inside a sentence where that
// is one token ("Mary" as " Mary", the token GPT-2 predicts after "to"), else as written; "#ID"
// for a token id; or two of those joined by "-" for their difference ("Mary-John": Mary's logit
// minus John's).
struct AttributionTarget {
    int target = -1, minus = -1;
};
// Throws InputError naming `field` when a part is not one token (the text clipped in the message).
AttributionTarget parseTarget(const Checkpoint& model, std::string_view text, const std::string& field);

// The logits at `position` of the pass (soft-capped where the model caps them): the pass's own
// at its predicted position, else its final row against the unembedding.
Vec positionLogits(const Checkpoint& model, const Run& run, Eigen::Index position);

}  // namespace attnviz::core::decoder
