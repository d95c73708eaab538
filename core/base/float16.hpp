// Half (IEEE binary16) and bfloat16 to float, exactly: every value, subnormals, infinities and
// NaN (its payload kept, a signalling NaN still signalling). The checkpoint reader widens tensors
// with them, and the kernels' scalar paths widen a weight's elements with them.
#pragma once

#include <bit>
#include <cstdint>

namespace attnviz::core {

// Exact: a half's 11-bit significand and 5-bit exponent fit a float's; a subnormal half is
// normalised (its value is m · 2^-24), infinities and NaN keep their payload.
inline float halfToFloat(std::uint16_t h) {
    const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000U) << 16;
    std::uint32_t exponent = (h >> 10) & 0x1FU, mantissa = h & 0x3FFU, bits = 0;
    if (exponent == 0x1F) {
        bits = sign | 0x7F800000U | (mantissa << 13);
    } else if (exponent != 0) {
        bits = sign | ((exponent + 112) << 23) | (mantissa << 13);  // rebias 15 → 127
    } else if (mantissa == 0) {
        bits = sign;
    } else {
        exponent = 113;  // 2^-14 as a float exponent, lowered once per shift below
        while ((mantissa & 0x400U) == 0) mantissa <<= 1, --exponent;
        bits = sign | (exponent << 23) | ((mantissa & 0x3FFU) << 13);
    }
    return std::bit_cast<float>(bits);
}

inline float bfloat16ToFloat(std::uint16_t bits) { return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16); }

}  // namespace attnviz::core
