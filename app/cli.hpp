// The command line: flags -> a scenario, exports that need no window, and the hand-off to
// the GUI. Errors print one line, "attnviz: error: <where>: <what>", and exit with code 2.
#pragma once

#include "core/model.hpp"
#include "core/scenario.hpp"

#include <functional>
#include <iosfwd>
#include <string>

namespace attnviz::app {

struct GuiRequest {
    core::Scenario scenario;
    std::string presetId;      // when opened with --preset (or the default demo)
    std::string scenarioPath;  // when opened with --scenario
    core::Limits limits;
    std::string screenshot;    // --screenshot OUT.png: render, save, exit
    std::string panel;         // --panel NAME: only that panel in the screenshot
    int width = 1600, height = 1000;  // --size WxH
    float scale = 1.0f;               // --scale S
    int head = 0;                     // --head N (-1 = mean)
    bool fresh = false;               // --fresh: ignore the saved session
};

// Opens the window; returns the process exit code.
using GuiLauncher = std::function<int(const GuiRequest&)>;

// Parses argv and runs what it asks for. `gui` is called when no export flag is given.
int runMain(int argc, const char* const* argv, const GuiLauncher& gui, std::ostream& out, std::ostream& err);

// The one-line error format of the command line.
std::string errorLine(const std::string& message);

}  // namespace attnviz::app
