// Deterministic random numbers: splitmix64 + Box-Muller.
// The same seed gives the same numbers with every compiler and standard library
// (std::normal_distribution does not), so a scenario's seed names one model everywhere.
#pragma once

#include <cstdint>
#include <string_view>

namespace attnviz::core {

// FNV-1a 64-bit: a stable hash for naming random streams ("W_Q", "emb:cat").
std::uint64_t fnv1a(std::string_view text);

class Prng {
public:
    explicit Prng(std::uint64_t seed) : m_state(seed) {}
    // An independent stream per (seed, tag): changing d_v never changes W_Q's numbers,
    // and a token's embedding does not depend on the sentence around it.
    static Prng stream(std::uint64_t seed, std::string_view tag);

    std::uint64_t nextU64();
    double uniform();  // in (0, 1]
    double normal();   // mean 0, variance 1

private:
    std::uint64_t m_state;
    double m_spare = 0.0;
    bool m_hasSpare = false;
};

}  // namespace attnviz::core
