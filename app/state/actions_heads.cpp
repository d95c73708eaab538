// Actions of the views of every head (the model view, the head statistics): a layer and head
// selected together, the tiles' order and tint, the sink threshold, the induction and retrieval tests.
#include "app/state/actions_families.hpp"
#include "app/state/head_summary.hpp"
#include "core/models/decoder/attribution.hpp"

#include "core/base/error.hpp"
#include "core/base/format.hpp"

#include <cmath>

namespace attnviz::app::detail {

bool applyAction(AppState& state, const action::SelectLayerHead& a) {
    const bool ownPass = capabilities(state).ownPass;
    const int layers = ownPass ? layerCount(state) : 1;
    if (a.layer < 0 || a.layer >= layers)
        return reject(state, "layer", std::to_string(a.layer) + " is outside 0 … " + std::to_string(layers - 1));
    if (ownPass && !applyAction(state, action::SelectLayer{a.layer})) return false;
    if (a.head < -1 || a.head >= state.model.heads)
        return reject(state, "head", std::to_string(a.head) + " is outside -1 … " + std::to_string(state.model.heads - 1));
    state.view.selectedHead = a.head;
    state.view.previewHead = -2;  // the tile under the mouse is the selection now
    state.view.previewLayer = -1;
    clampSelection(state);
    return true;
}

bool applyAction(AppState& state, const action::SetModelView& a) {
    state.view.modelView = a.options;
    return true;
}

bool applyAction(AppState& state, const action::SetSinkEpsilon& a) {
    if (!std::isfinite(a.value) || a.value < 0.0f || a.value > 1.0f)
        return reject(state, "sink threshold", "must be between 0 and 1, got " + core::formatNumber(a.value));
    state.view.sinkEpsilon = a.value;
    return true;
}

bool applyAction(AppState& state, const action::SetFirstTokens& a) {
    if (a.k < 1 || a.k > kMaxFirstTokens)
        return reject(state, "first tokens", "expected 1 to " + std::to_string(kMaxFirstTokens) + ", got " + std::to_string(a.k));
    state.view.firstTokens = a.k;  // the summary's key changes with it: every head summarized again
    return true;
}

bool applyAction(AppState& state, const action::SetLensColour& a) {
    if (a.colour > LensColour::TargetRank || a.target > LensTarget::NextInput) return reject(state, "logit lens", "unknown colouring");
    state.view.lensColour = a.colour;
    state.view.lensTarget = a.target;
    return true;
}

bool applyAction(AppState& state, const action::SetAttribution& a) {
    const core::LoadedModel* pass = checkpointPass(state);
    if (a.query < -1 || (pass != nullptr && a.query >= pass->run->tokens()))
        return reject(state, "attribution", "position " + std::to_string(a.query) + " is outside the text");
    if (pass != nullptr && !a.target.empty()) {
        try {
            (void)core::decoder::parseTarget(*pass->checkpoint, a.target, "attribution target");
        } catch (const core::InputError& e) {
            state.error = e.what();
            return false;
        }
    }
    state.view.attributionQuery = a.query;
    state.view.attributionTarget = a.target;
    return true;
}

bool applyAction(AppState& state, const action::StartInductionTest& a) {
    const core::LoadedModel* pass = checkpointPass(state);
    if (!pass) return reject(state, "induction test", "needs a model (open one with --model or File → Open model folder)");
    if (!capabilities(state).readsBack)
        return reject(state, "induction test", "scores a decoder's heads reading back along the text; this model reads every key");
    const core::InductionSettings settings = inductionUpTo(a.settings, *pass->checkpoint);  // a short context repeats fewer
    if (settings.repeat < 2 || settings.batch < 1)
        return reject(state, "induction test",
                      "needs at least 2 repeated tokens and 1 sequence, got " + std::to_string(settings.repeat) + " and " +
                          std::to_string(settings.batch) + " (the model reads " + std::to_string(pass->checkpoint->config().nPositions) +
                          " positions)");
    state.induction->start(pass->checkpoint, settings);
    return true;
}

bool applyAction(AppState& state, const action::StopInductionTest&) {
    state.induction->stop();
    return true;
}

bool applyAction(AppState& state, const action::StartRetrievalTest& a) {
    const core::LoadedModel* pass = checkpointPass(state);
    if (!pass) return reject(state, "retrieval test", "needs a model (open one with --model or File → Open model folder)");
    try {
        core::checkRetrievalSettings(*pass->checkpoint, a.settings);
    } catch (const core::InputError& e) {
        return reject(state, e.where(), e.what());
    }
    for (const int length : a.settings.lengths)
        if (length > state.limits.maxTokens)
            return reject(
                state, "retrieval test",
                "a length of " + std::to_string(length) + " tokens is over the limit of " + std::to_string(state.limits.maxTokens));
    state.retrieval->start(pass->checkpoint, a.settings);
    return true;
}

bool applyAction(AppState& state, const action::StopRetrievalTest&) {
    state.retrieval->stop();
    return true;
}

bool applyAction(AppState& state, const action::StopHeadSweep&) {
    if (state.headSweep) state.headSweep->stop();
    return true;
}

bool applyAction(AppState& state, const action::ResumeHeadSweep&) {
    if (state.headSweep) state.headSweep->resume();
    return true;
}

}  // namespace attnviz::app::detail
