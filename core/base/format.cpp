#include "core/base/format.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace attnviz::core {

double shortestDouble(float value) {
    char buffer[64];
    const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
    *result.ptr = '\0';
    return std::strtod(buffer, nullptr);
}

std::string formatNumber(double value) {
    char buffer[64];
    const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
    return std::string(buffer, result.ptr);
}

std::string formatFixed(double value, int digits) {
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.*f", digits, value);
    return buffer;
}

std::vector<AxisTick> axisTicks(double lo, double hi, bool log) {
    std::vector<AxisTick> ticks;
    if (!(hi > lo) || !std::isfinite(lo) || !std::isfinite(hi) || (log && !(lo > 0))) return ticks;
    if (log) {
        const auto first = static_cast<int>(std::ceil(std::log10(lo) - 1e-9)), last = static_cast<int>(std::floor(std::log10(hi) + 1e-9));
        for (int e = first; e <= last; ++e) {
            const double v = std::pow(10.0, e);
            ticks.push_back({v, e >= 0 && e <= 5 ? formatFixed(v, 0) : "1e" + std::to_string(e)});
        }
        return ticks;
    }
    const double raw = (hi - lo) / 10, decade = std::pow(10.0, std::floor(std::log10(raw)));
    double step = 10 * decade;
    for (const double m : {1.0, 2.0, 5.0})
        if (m * decade >= raw) {
            step = m * decade;
            break;
        }
    const int decimals = std::max(0, static_cast<int>(-std::floor(std::log10(step) + 1e-9)));
    const auto first = static_cast<long long>(std::ceil(lo / step - 1e-9)), last = static_cast<long long>(std::floor(hi / step + 1e-9));
    for (long long k = first; k <= last; ++k) {
        const double v = static_cast<double>(k) * step;
        ticks.push_back({v, formatFixed(k == 0 ? 0.0 : v, decimals)});
    }
    return ticks;
}

std::string groupedNumber(long long value) {
    const std::string digits = std::to_string(value < 0 ? -value : value);
    std::string out;
    for (std::size_t k = 0; k < digits.size(); ++k) {
        if (k > 0 && (digits.size() - k) % 3 == 0) out += ',';
        out += digits[k];
    }
    return value < 0 ? "-" + out : out;
}

std::string joinChoices(const std::vector<std::string>& choices) {
    std::string out;
    for (std::size_t i = 0; i < choices.size(); ++i) out += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + choices[i];
    return out;
}

std::string joinStrings(const std::vector<std::string>& parts, const std::string& separator) {
    std::string out;
    for (std::size_t i = 0; i < parts.size(); ++i) {
        if (i) out += separator;
        out += parts[i];
    }
    return out;
}

}  // namespace attnviz::core
