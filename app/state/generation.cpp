#include "app/state/generation.hpp"

#include "app/state/actions.hpp"
#include "app/state/source.hpp"

#include <cmath>

namespace attnviz::app {

bool generateOne(AppState& state, const core::decoder::Sampling& sampling) {
    const core::LoadedModel* pass = checkpointPass(state);
    if (pass == nullptr) {
        state.error = "generate: needs a model (open one with --model or File → Open model folder)";
        return false;
    }
    const core::decoder::Config& cfg = pass->checkpoint->config();
    if (!cfg.causal) {
        state.error = "generate: an encoder reads its text in both directions and generates no tokens";
        return false;
    }
    if (pass->edited()) {
        state.error = "generate: a what-if pass is not generated from (its edits would not follow the new tokens); clear the edits first";
        return false;
    }
    if (!sampling.greedy && !(sampling.temperature > 0.0f && std::isfinite(sampling.temperature))) {
        state.error = "generate: the temperature must be above 0";
        return false;
    }
    if (pass->run->logits.size() == 0) {
        state.error = "generate: the pass predicts no next token";
        return false;
    }
    if (pass->run->tokens() >= cfg.longestInput()) {
        state.error = "generate: the text fills the model's " + std::to_string(cfg.longestInput()) + " positions";
        return false;
    }
    std::vector<int> ids = state.scenario.generated;
    ids.push_back(core::decoder::nextToken(pass->run->logits, sampling, static_cast<int>(ids.size())));
    return apply(state, action::SetGenerated{std::move(ids)});
}

std::string generateTokens(AppState& state, int count, const core::decoder::Sampling& sampling) {
    if (count < 1) return "generate: expected 1 or more tokens, got " + std::to_string(count);
    for (int i = 0; i < count; ++i) {
        if (!generateOne(state, sampling)) return state.error;
        const core::LoadedModel* pass = checkpointPass(state);
        const std::optional<int> end = pass->checkpoint->tokenizer().endOfText();
        if (end && state.scenario.generated.back() == *end) break;
        if (pass->run->tokens() >= pass->checkpoint->config().longestInput()) break;
    }
    return "";
}

bool stepGeneration(AppState& state) {
    const AppState::Generation under = state.generation;
    if (under.left <= 0) return false;
    if (!generateOne(state, under.sampling)) {
        state.generation.left = 0;
        return false;
    }
    state.generation = {under.left - 1, under.sampling};  // SetGenerated alone (taking tokens back) stops it
    const core::LoadedModel* pass = checkpointPass(state);
    const std::optional<int> end = pass->checkpoint->tokenizer().endOfText();
    if ((end && state.scenario.generated.back() == *end) || pass->run->tokens() >= pass->checkpoint->config().longestInput())
        state.generation.left = 0;
    return true;
}

Eigen::Index generatedFrom(const AppState& state) {
    const core::LoadedModel* pass = checkpointPass(state);
    if (pass == nullptr || pass->generated == 0 || pass->run->tokens() != state.model.tq()) return -1;
    return pass->run->tokens() - static_cast<Eigen::Index>(pass->generated);
}

}  // namespace attnviz::app
