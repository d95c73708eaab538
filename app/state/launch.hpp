// What the command line asks the window to open: the scenario, the view and, for a screenshot,
// what to capture. Plain data (core types only), so that the front end links the state library
// and not the command line.
#pragma once

#include "app/state/app_state.hpp"
#include "app/state/session.hpp"
#include "core/attention/colormap.hpp"
#include "core/io/lesson.hpp"
#include "core/models/decoder/generate.hpp"
#include "core/scenario/model.hpp"
#include "core/scenario/scenario.hpp"

#include <chrono>
#include <optional>
#include <string>
#include <utility>

namespace attnviz::app {

struct GuiRequest {
    core::Scenario scenario;
    std::string presetId;      // when opened with --preset (or the default demo)
    std::string scenarioPath;  // when opened with --scenario
    std::string source;        // where the scenario came from, for messages: its path, or "preset NAME"
    core::Limits limits;
    std::string screenshot;                                     // --screenshot OUT.png: render, save, exit
    std::string panel;                                          // --panel NAME: only that panel in the screenshot
    int width = 0, height = 0;                                  // --size WxH (0 = the saved session's, or 1600x1000)
    float scale = 1.0f;                                         // --scale S: pixels per UI point in the screenshot (1x, 2x …)
    float uiScale = 0.0f;                                       // --ui-scale S (0 = the saved session's, or 1)
    std::optional<int> head;                                    // --head N (-1 = mean)
    std::string theme;                                          // --theme dark|light|high-contrast ("" = the saved session's)
    bool presenter = false;                                     // --presenter
    std::string lab;                                            // --lab NAME, a labName ("" = none)
    std::optional<core::Lesson> lesson;                         // --lesson NAME|FILE, parsed
    std::optional<int> lessonStep;                              // --lesson-step N (0 = first), within the lesson
    std::optional<int> query;                                   // --query N, checked against T when the state is built
    std::optional<int> stage;                                   // --stage N, 0 … kStageCount − 1
    bool smallMultiples = false;                                // --small-multiples
    bool skipFirstKey = false;                                  // --skip-first-key
    int firstTokens = 0;                                        // --first-tokens (0: not given)
    std::string target;                                         // --target: direct logit attribution's target
    LensColour lensColour = LensColour::Top;                    // --lens-colour top|probability|rank: the logit lens's colour
    LensTarget lensTarget = LensTarget::Final;                  // --lens-target final|next: its target
    std::optional<ModelViewOptions> modelView;                  // --model-view-sort, -rank, -pooling: the model view's order
    int generate = 0;                                           // --generate N: tokens written after the text
    core::decoder::Sampling sampling;                           // --sample-seed, --top-k, --sample-temperature
    std::optional<int> trainSteps;                              // --train-steps N: train at start (the train lab)
    bool measure = false;                                       // --measure: time the cost sweep at start (the cost lab)
    float zoom = 0.0f;                                          // --zoom Z (0: not given): the heatmap zoomed in
    std::optional<std::pair<long long, long long>> zoomAt;      // --zoom-at Q,K: its centre (else the map's), checked against T
    bool inductionTest = false;                                 // --induction-test: run it at start (the statistics panel)
    std::optional<core::RetrievalSettings> retrieval;           // --retrieval-test: run it at start with these settings
    bool retrievalLengthsGiven = false;                         // --retrieval-lengths given (else cut to the model's longest)
    bool fresh = false;                                         // --fresh: ignore the saved session
    bool explicitScenario = false;                              // a scenario, preset or model flag was given
    core::ColormapKind colormap = core::ColormapKind::Viridis;  // --colormap
    std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();  // for the start-up time
    bool colormapGiven = false;
    core::ColourScale colourScale = core::ColourScale::Auto;  // --colour-scale
    bool colourScaleGiven = false;
    PairFilter pairFilter = PairFilter::All;                     // --pair-filter: a sentence pair's block the views show
    bool rollout = false;                                        // --rollout: the heatmap and bars show attention rollout
    core::RolloutHeads rolloutHeads = core::RolloutHeads::Mean;  // --rollout-heads
    std::string compareText;                                     // --compare TEXT: the compare view's other sentence
};

// The view the window opens with: `saved` (the last session's, or the defaults) with what the
// request sets on top (theme, UI scale, presenter mode, lab, head, colour map and scale).
ViewState requestedView(const GuiRequest& request, ViewState saved);

// "" when `head` is one of a model's `heads` or -1 (their mean); else why --head cannot show it,
// naming the value and the count of heads. The window and the exports refuse the same heads.
std::string headOutOfRange(int head, int heads);

// Applies what the request asks of a state whose view is already requestedView's, through the
// action layer: the head and query selected (a --head the model lacks or a --query past the
// sentence is an error; a head restored from the session is clamped), the lesson opened at its
// step, a lab's run started (--train-steps, --measure), a test of the model's heads started
// (--induction-test, --retrieval-test). Returns "" or the error, for one line.
std::string startRequested(AppState& state, const GuiRequest& request);

// The state the window opens on, built before the window exists: startingState (the restored
// session's scenario unless the request names one), its view (requestedView over the restored
// one) and what the request asks started (startRequested). `notice` as startingState's. Throws
// core::InputError when the request cannot be opened, named as the command line names the same
// error (within request.source); the window is then never shown.
AppState launchState(const GuiRequest& request, const RestoredSession& restored, const std::string& sessionFile, std::string& notice);

// The one-line error format of the command line and the app: "attnviz: error: <what>".
std::string errorLine(const std::string& message);

}  // namespace attnviz::app
