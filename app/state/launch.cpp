#include "app/state/launch.hpp"

#include "app/state/generation.hpp"

#include "app/state/actions.hpp"
#include "app/state/model_test_job.hpp"
#include "app/state/source.hpp"
#include "core/base/error.hpp"

#include <algorithm>
#include <string>

namespace attnviz::app {

ViewState requestedView(const GuiRequest& request, ViewState view) {
    if (request.uiScale > 0.0f) view.uiScale = request.uiScale;
    if (request.theme == "dark") view.theme = Theme::Dark;
    if (request.theme == "light") view.theme = Theme::Light;
    if (request.theme == "high-contrast") view.theme = Theme::HighContrast;
    if (request.presenter) view.presenter = true;
    if (!request.lab.empty()) view.lab = labFromName(request.lab).value_or(Lab::None);  // checked by the CLI
    if (request.head) view.selectedHead = *request.head;
    if (request.colormapGiven) view.colormap = request.colormap;
    if (request.colourScaleGiven) view.colourScale = request.colourScale;
    view.pairFilter = request.pairFilter;
    if (request.stage) view.stage = *request.stage;
    if (request.smallMultiples) view.smallMultiples = true;
    if (request.skipFirstKey) view.skipFirstKey = true;
    if (request.firstTokens > 0) view.firstTokens = request.firstTokens;
    view.attributionTarget = request.target;
    view.lensColour = request.lensColour;
    view.lensTarget = request.lensTarget;
    if (request.modelView) view.modelView = *request.modelView;
    if (!request.sampling.greedy) {  // --sample-seed: the window's Generate samples as the command line did
        view.generateSampled = true;
        view.generateTopK = request.sampling.topK;
        view.generateSeed = request.sampling.seed;
        view.nextTemperature = std::clamp(request.sampling.temperature, kMinTemperature, kMaxTemperature);
    }
    if (request.query) view.attributionQuery = *request.query;
    if (!request.compareText.empty()) view.compareText = request.compareText;
    if (request.rollout) {
        view.rollout = true;
        view.rolloutHeads = request.rolloutHeads;
    }
    return view;
}

std::string headOutOfRange(int head, int heads) {
    if (head >= -1 && head < heads) return "";
    return "head " + std::to_string(head) + " does not exist (the model has " + std::to_string(heads) + "; -1 = mean)";
}

std::string startRequested(AppState& state, const GuiRequest& request) {
    if (request.head)
        if (const std::string why = headOutOfRange(*request.head, state.model.heads); !why.empty()) return "--head: " + why;
    apply(state, action::SelectHead{state.view.selectedHead});  // clamps a restored selection
    if (request.lesson && !apply(state, action::OpenLesson{*request.lesson})) return state.error;
    if (request.lessonStep && !apply(state, action::GoToLessonStep{*request.lessonStep})) return state.error;
    if (request.generate > 0)
        if (const std::string why = generateTokens(state, request.generate, request.sampling); !why.empty()) return "--generate: " + why;
    const long long queries = state.model.tq();
    if (request.query && *request.query >= queries)
        return "--query: expected 0 to " + std::to_string(queries - 1) + " (" + std::to_string(queries) + " queries), got " +
               std::to_string(*request.query);
    apply(state, action::SelectQuery{request.query.value_or(state.view.selectedQuery)});
    if (request.zoom > 0.0f) {
        const long long keys = state.model.tk();
        float x = 0.5f, y = 0.5f;
        if (request.zoomAt) {
            const auto [q, k] = *request.zoomAt;
            if (q >= queries || k >= keys)
                return "--zoom-at: expected a query from 0 to " + std::to_string(queries - 1) + " and a key from 0 to " +
                       std::to_string(keys - 1) + ", got " + std::to_string(q) + "," + std::to_string(k);
            x = static_cast<float>((static_cast<double>(k) + 0.5) / static_cast<double>(keys));
            y = static_cast<float>((static_cast<double>(q) + 0.5) / static_cast<double>(queries));
        }
        apply(state, action::SetView{request.zoom, x, y});  // at the edges, as far as the view reaches
    }
    if (request.trainSteps) {
        TrainSettings settings = state.labs.train;
        settings.steps = *request.trainSteps;
        if (!apply(state, action::StartTraining{settings})) return state.error;
    }
    if (request.measure && !apply(state, action::StartCostSweep{})) return state.error;
    if (request.inductionTest && !apply(state, action::StartInductionTest{})) return state.error;
    if (request.retrieval) {
        core::RetrievalSettings settings = *request.retrieval;
        if (const core::LoadedModel* pass = checkpointPass(state); pass && !request.retrievalLengthsGiven)
            settings = retrievalUpTo(settings, longestTestInput(*pass->checkpoint, state.limits.maxTokens));
        if (!apply(state, action::StartRetrievalTest{settings})) return state.error;
    }
    return "";
}

AppState launchState(const GuiRequest& request, const RestoredSession& restored, const std::string& sessionFile, std::string& notice) {
    const ViewState view = requestedView(request, restored.session ? restored.session->view : ViewState{});
    AppState state = [&] {
        try {
            return startingState(request.scenario, request.presetId, restored, request.explicitScenario, request.limits, sessionFile,
                                 notice);
        } catch (const core::InputError& e) {
            throw e.within(request.source);  // as the command line names it (the file, the preset, --model)
        }
    }();
    state.sourcePath = request.scenarioPath;
    state.view = view;
    if (const std::string error = startRequested(state, request); !error.empty()) throw core::InputError("", error);
    return state;
}

// One line, bounded whatever the input was: a message may quote a flag's value (CLI11 quotes
// a value it cannot convert whole).
std::string errorLine(const std::string& message) {
    std::string line = core::clipText(message, 2 * core::InputError::kMaxWhat);
    for (char& c : line)
        if (c == '\n' || c == '\r') c = ' ';
    return "attnviz: error: " + line;
}

}  // namespace attnviz::app
