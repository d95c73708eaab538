// The command line: flags -> a scenario, exports that need no window, and the hand-off to
// the GUI. Errors print one line, "attnviz: error: <where>: <what>", and exit with code 2.
#pragma once

#include "core/attention/colormap.hpp"
#include "core/io/lesson.hpp"
#include "core/scenario/model.hpp"
#include "core/scenario/scenario.hpp"

#include <chrono>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>

namespace attnviz::app {

struct GuiRequest {
    core::Scenario scenario;
    std::string presetId;      // when opened with --preset (or the default demo)
    std::string scenarioPath;  // when opened with --scenario
    core::Limits limits;
    std::string screenshot;    // --screenshot OUT.png: render, save, exit
    std::string panel;         // --panel NAME: only that panel in the screenshot
    int width = 0, height = 0;        // --size WxH (0 = the saved session's, or 1600x1000)
    float scale = 1.0f;               // --scale S: pixels per UI point in the screenshot (1x, 2x …)
    float uiScale = 0.0f;             // --ui-scale S (0 = the saved session's, or 1)
    std::optional<int> head;          // --head N (-1 = mean)
    std::string theme;                // --theme dark|light|high-contrast ("" = the saved session's)
    bool presenter = false;           // --presenter
    std::string lab;                  // --lab linear|cost ("" = none)
    std::optional<core::Lesson> lesson;  // --lesson NAME|FILE, parsed
    bool fresh = false;               // --fresh: ignore the saved session
    bool explicitScenario = false;    // a scenario, preset or model flag was given
    core::ColormapKind colormap = core::ColormapKind::Viridis;  // --colormap
    std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();  // for the start-up time
    bool colormapGiven = false;
};

// Opens the window; returns the process exit code.
using GuiLauncher = std::function<int(const GuiRequest&)>;

// Parses argv and runs what it asks for. `gui` is called when no export flag is given.
int runMain(int argc, const char* const* argv, const GuiLauncher& gui, std::ostream& out, std::ostream& err);

// "The cat sat on the mat · head 1 of 4 · τ = 1.00 · causal": the title of exported figures.
std::string heatmapTitle(const core::Scenario& scenario, const core::Model& model, const core::Settings& settings, int head);

// The one-line error format of the command line.
std::string errorLine(const std::string& message);

}  // namespace attnviz::app
