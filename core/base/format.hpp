// Number and text formatting shared by messages, exports and the UI.
#pragma once

#include <string>
#include <vector>

namespace attnviz::core {

// The shortest decimal that reads back as the same float, as a double: 0.4013 stays 0.4013 in
// JSON instead of 0.40130001306533813.
double shortestDouble(float value);
// "0.25", "1e-07", "3.4e+38": shortest round-trip text of a float.
std::string formatNumber(double value);
// Fixed digits: formatFixed(0.40131, 3) == "0.401".
std::string formatFixed(double value, int digits);
std::string joinStrings(const std::vector<std::string>& parts, const std::string& separator);
// "1,204", "32,768": a count with its thousands grouped, as the figures write them.
std::string groupedNumber(long long value);
// "a", "a or b", "a, b or c": the choices a message offers.
std::string joinChoices(const std::vector<std::string>& choices);

// The ticks of a plot's axis from lo to hi: every power of ten of a log axis (lo > 0), labelled
// "1", "10", …, "1e6", "1e-3"; a round step of a linear one (1, 2 or 5 × 10^e, 5 to 11 ticks).
struct AxisTick {
    double value;
    std::string label;
};
std::vector<AxisTick> axisTicks(double lo, double hi, bool log);

}  // namespace attnviz::core
