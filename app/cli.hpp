// The command line: flags -> a scenario, exports that need no window, and the hand-off to
// the GUI. Errors print one line, "attnviz: error: <where>: <what>", and exit with code 2.
#pragma once

#include "app/state/launch.hpp"
#include "core/scenario/model.hpp"
#include "core/scenario/scenario.hpp"

#include <chrono>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>

namespace attnviz::app {

// Opens the window; returns the process exit code.
using GuiLauncher = std::function<int(const GuiRequest&)>;

// Parses argv and runs what it asks for. `gui` is called when no export flag is given.
int runMain(int argc, const char* const* argv, const GuiLauncher& gui, std::ostream& out, std::ostream& err);

// "The cat sat on the mat · head 1 of 4 · τ = 1.00 · causal": the title of exported figures.
std::string heatmapTitle(const core::Scenario& scenario, const core::Model& model, const core::Settings& settings, int head);
// The same for the grid of every head: "… · all 4 heads · τ = 1.00 …".
std::string headsTitle(const core::Scenario& scenario, const core::Model& model, const core::Settings& settings);

}  // namespace attnviz::app
