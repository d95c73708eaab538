#include "app/state/what_if.hpp"

#include "app/state/source.hpp"
#include "core/attention/compare.hpp"
#include "core/models/run_maps.hpp"

namespace attnviz::app {

WhatIfEdits whatIfEdits(const core::Scenario& scenario) { return {scenario.ablations, scenario.hiddenTokens}; }

void setWhatIfEdits(core::Scenario& scenario, const WhatIfEdits& edits) {
    scenario.ablations = edits.ablations;
    scenario.hiddenTokens = edits.hiddenTokens;
}

core::decoder::Intervention whatIfEdit(const WhatIfEdits& edits, std::size_t n) {
    using Kind = core::decoder::Intervention::Kind;
    if (n < edits.ablations.size()) {
        const core::HeadAblation& a = edits.ablations[n];
        return {a.mean ? Kind::MeanHead : Kind::ZeroHead, a.layer, a.head, 0};
    }
    return {Kind::HideToken, 0, 0, edits.hiddenTokens[n - edits.ablations.size()]};
}

std::string whatIfEditText(const core::decoder::Intervention& edit, const std::vector<std::string>& labels) {
    using Kind = core::decoder::Intervention::Kind;
    // The window counts layers, heads and tokens from 1; the command line from 0.
    if (edit.kind == Kind::HideToken) {
        const auto t = static_cast<std::size_t>(edit.token);
        return "hide token " + std::to_string(edit.token + 1) + (t < labels.size() ? " \u201c" + labels[t] + "\u201d" : "") +
               "  (--hide-token " + std::to_string(edit.token) + ")";
    }
    return std::string(edit.kind == Kind::ZeroHead ? "zero" : "mean") + " layer " + std::to_string(edit.layer + 1) + " \u00b7 head " +
           std::to_string(edit.head + 1) + "  (" + core::decoder::interventionText(edit).insert(0, "--") + ")";
}

std::vector<double> whatIfMoved(const AppState& state) {
    const core::LoadedModel* pass = checkpointPass(state);
    if (!pass || !pass->edited()) return {};
    const core::decoder::Config& config = pass->checkpoint->config();
    const core::AttentionMaps before = core::runMaps(*pass->base, config), after = core::runMaps(*pass->run, config);
    return core::headsMoved(before, after, core::samePositions(static_cast<int>(pass->base->tokens())));
}

core::Mat whatIfDifference(const AppState& state, int layer, int head) {
    const core::LoadedModel* pass = checkpointPass(state);
    if (!pass || !pass->edited() || layer < 0 || layer >= pass->run->layerCount() || head < 0 || head >= pass->run->headCount()) return {};
    core::MaskMat lined;
    const core::decoder::Config& config = pass->checkpoint->config();
    core::Mat before, after;  // maps made on demand when the passes keep none
    return core::alignedDifference(core::runMaps(*pass->base, config).map(layer, head, before),
                                   core::runMaps(*pass->run, config).map(layer, head, after),
                                   core::samePositions(static_cast<int>(pass->base->tokens())), lined);
}

}  // namespace attnviz::app
