// Inside the scenario room: the reader that turns a scenario's text into a JSON tree for its
// small values and matrices for its numbers (scenario_reader.cpp), and what scenario.cpp needs
// from it. Not for use outside core/scenario/.
#pragma once

#include "core/base/error.hpp"
#include "core/base/matrix.hpp"
#include "core/scenario/scenario.hpp"

#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <optional>
#include <string>

namespace attnviz::core {

// A matrix read from the parser's events (parseScenario), or the first error expectMatrix would
// have thrown for its value, kept until the scenario reads that key so that errors keep their order.
struct ReadMatrix {
    Mat value;
    std::optional<InputError> error;
};
using ReadMatrices = std::map<std::string, ReadMatrix, std::less<>>;

// What the reader made of a scenario's text: the tree of everything but the matrices, the
// matrices, and what it counted.
struct ScenarioEvents {
    nlohmann::json root;
    ReadMatrices matrices;
    ScenarioParseCounts counts;
};

// Reads the text's JSON events: checks it is UTF-8 (naming the first bad byte), reads the
// matrices' numbers straight into floats and the rest into a tree. Syntax errors name the line
// and column; `where` prefixes every message.
ScenarioEvents readScenarioEvents(const std::string& text, const std::string& where);

// Why a JSON number cannot be a float ("" when it can).
std::string whyNotFloat(double d);

}  // namespace attnviz::core
