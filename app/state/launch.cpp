#include "app/state/launch.hpp"

#include "core/base/error.hpp"

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
    return view;
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
