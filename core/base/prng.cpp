#include "core/base/prng.hpp"

#include <cmath>
#include <numbers>

namespace attnviz::core {

std::uint64_t fnv1a(std::string_view text) {
    std::uint64_t h = 0xcbf29ce484222325ULL;
    for (unsigned char c : text) {
        h ^= c;
        h *= 0x100000001b3ULL;
    }
    return h;
}

Prng Prng::stream(std::uint64_t seed, std::string_view tag) {
    Prng mix(seed ^ fnv1a(tag));
    return Prng(mix.nextU64());
}

std::uint64_t Prng::nextU64() {
    std::uint64_t z = (m_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

double Prng::uniform() {
    // 53 random bits -> (0, 1]; never 0, so log() below is finite.
    return static_cast<double>((nextU64() >> 11) + 1) * 0x1.0p-53;
}

double Prng::normal() {
    if (m_hasSpare) {
        m_hasSpare = false;
        return m_spare;
    }
    const double r = std::sqrt(-2.0 * std::log(uniform()));
    const double theta = 2.0 * std::numbers::pi * uniform();
    m_spare = r * std::sin(theta);
    m_hasSpare = true;
    return r * std::cos(theta);
}

}  // namespace attnviz::core
