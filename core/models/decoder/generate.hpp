// Generation: tokens chosen one at a time from a decoder's logits at its last position, each read
// through the incremental pass (forwardAppend: one more row of q, k, v per layer, its attention
// against the kept keys), so that a step costs what typing one more token costs and the pass after
// N steps is the whole pass over the final tokens.
#pragma once

#include "core/base/progress.hpp"
#include "core/models/decoder/decoder.hpp"

#include <cstdint>
#include <vector>

namespace attnviz::core::decoder {

// How the next token is chosen: the most likely (greedy; a tie: the lowest id), or sampled from
// softmax(logits / temperature) over the `topK` most likely (0: every token) with a seeded stream.
struct Sampling {
    bool greedy = true;
    float temperature = 1.0f;
    int topK = 0;
    std::uint64_t seed = 0;
};

// The token chosen from `logits` (`uniform`: a draw in (0, 1] for a sampled choice; unused when greedy).
int chooseToken(const Vec& logits, const Sampling& sampling, double uniform);
// The draw of generated token number `step` (0 for the first after the text) under `seed`: its own
// stream, so that a generation stopped and resumed, in the window or on the command line, draws the same.
double generationDraw(std::uint64_t seed, int step);
// The token generated at `step` from `logits`: chooseToken with that step's draw.
int nextToken(const Vec& logits, const Sampling& sampling, int step);

// Up to `count` tokens after `start`'s (a decoder's pass), each chosen from the last pass's logits
// and appended: stops early after the tokenizer's end-of-text token, or at the model's positions.
// `last` (when given) receives the pass over every token. Throws InputError for an encoder, an
// edited pass (a what-if's: its edits would not follow the new tokens), a count below 1 or
// settings out of range; Cancelled between steps once `progress` was asked to stop.
std::vector<int> generate(const Checkpoint& model, const Run& start, int count, const Sampling& sampling, Run* last = nullptr,
                          Progress* progress = nullptr);

}  // namespace attnviz::core::decoder
