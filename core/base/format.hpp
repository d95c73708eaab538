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
// "a", "a or b", "a, b or c": the choices a message offers.
std::string joinChoices(const std::vector<std::string>& choices);

}  // namespace attnviz::core
