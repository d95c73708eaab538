#include "core/scenario/embedding.hpp"

#include "core/base/prng.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace attnviz::core {

Mat randomEmbeddings(const std::vector<std::string>& tokens, int dModel, std::uint64_t seed) {
    Mat x(static_cast<Eigen::Index>(tokens.size()), dModel);
    for (std::size_t t = 0; t < tokens.size(); ++t) {
        Prng rng = Prng::stream(seed, "emb:" + tokens[t]);
        for (int c = 0; c < dModel; ++c) x(static_cast<Eigen::Index>(t), c) = static_cast<float>(rng.normal());
    }
    return x;
}

std::vector<std::string> vocabulary(const std::vector<std::string>& tokens) {
    std::vector<std::string> vocab(tokens);
    std::sort(vocab.begin(), vocab.end());
    vocab.erase(std::unique(vocab.begin(), vocab.end()), vocab.end());
    return vocab;
}

Mat oneHotEmbeddings(const std::vector<std::string>& tokens, int dModel) {
    const std::vector<std::string> vocab = vocabulary(tokens);
    Mat x = Mat::Zero(static_cast<Eigen::Index>(tokens.size()), dModel);
    for (std::size_t t = 0; t < tokens.size(); ++t) {
        const auto index = std::lower_bound(vocab.begin(), vocab.end(), tokens[t]) - vocab.begin();
        x(static_cast<Eigen::Index>(t), static_cast<Eigen::Index>(index)) = 1.0f;
    }
    return x;
}

double sinusoidalValue(double position, int dim, int dModel) {
    const int pair = dim / 2;  // i in 2i / 2i+1
    const double angle = position * std::pow(10000.0, -2.0 * pair / dModel);
    return dim % 2 == 0 ? std::sin(angle) : std::cos(angle);
}

double sinusoidalWavelength(int dim, int dModel) {
    const int pair = dim / 2;  // i in 2i / 2i+1
    return 2.0 * std::numbers::pi * std::pow(10000.0, 2.0 * pair / dModel);
}

Mat sinusoidalEncoding(int T, int dModel, int first) {
    Mat pe(T, dModel);
    for (int c = 0; c < dModel; ++c)
        for (int pos = 0; pos < T; ++pos) pe(pos, c) = static_cast<float>(sinusoidalValue(first + pos, c, dModel));
    return pe;
}

Mat xavierMatrix(int rows, int cols, int headWidth, std::uint64_t seed, std::string_view tag) {
    const double stddev = std::sqrt(2.0 / (rows + headWidth));
    Prng rng = Prng::stream(seed, tag);
    Mat w(rows, cols);
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) w(r, c) = static_cast<float>(stddev * rng.normal());
    return w;
}

const char* embeddingName(EmbeddingKind kind) { return kind == EmbeddingKind::Random ? "random" : "onehot"; }
const char* positionalName(Positional kind) {
    switch (kind) {
        case Positional::None: return "none";
        case Positional::Sinusoidal: return "sinusoidal";
        case Positional::Rope: return "rope";
        case Positional::Alibi: return "alibi";
    }
    return "none";
}

}  // namespace attnviz::core
