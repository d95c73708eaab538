// Input matrices: token embeddings, positional encodings, seeded projection weights.
#pragma once

#include "core/base/matrix.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace attnviz::core {

enum class EmbeddingKind { Random, OneHot };
// How positions reach attention: not at all; sinusoidal encodings added to X; rotary positions
// applied to each head's q and k (RoPE); or a linear distance penalty on the logits (ALiBi).
enum class Positional { None, Sinusoidal, Rope, Alibi };

// x: [T, d_model]. One N(0, 1) vector per distinct token, drawn from a stream named by the
// token itself, so "the" is the same vector wherever it appears (anagrams, swaps).
Mat randomEmbeddings(const std::vector<std::string>& tokens, int dModel, std::uint64_t seed);

// Sorted distinct tokens: the one-hot vocabulary. Sorting (not first appearance) keeps
// the vocabulary, and so each token's vector, the same under any reordering.
std::vector<std::string> vocabulary(const std::vector<std::string>& tokens);

// x: [T, d_model], d_model >= vocabulary size; row t has a 1 at its token's vocabulary index.
Mat oneHotEmbeddings(const std::vector<std::string>& tokens, int dModel);

// pe: [T, d_model], Vaswani et al. §3.5:
//   pe[pos, 2i] = sin(pos / 10000^(2i/d_model)),  pe[pos, 2i+1] = cos(pos / 10000^(2i/d_model)).
// Rows are positions first … first + T - 1.
Mat sinusoidalEncoding(int T, int dModel, int first = 0);
// One entry of that formula at any real position (the curves drawn through the positions).
double sinusoidalValue(double position, int dim, int dModel);
// The wavelength of dimension `dim`: 2π · 10000^(2i/d_model), in positions.
double sinusoidalWavelength(int dim, int dModel);

// w: [rows, cols], N(0, 2 / (fan_in + fan_out)) with fan_in = rows and fan_out = headWidth
// (Xavier/Glorot normal per head), from the stream (seed, tag).
Mat xavierMatrix(int rows, int cols, int headWidth, std::uint64_t seed, std::string_view tag);

const char* embeddingName(EmbeddingKind kind);
const char* positionalName(Positional kind);

}  // namespace attnviz::core
