// Generation through the action layer: each token chosen from the pass's logits at its last
// position (core/models/decoder/generate.hpp) and written with SetGenerated, so that the pass grows
// by one row per token as typing does and every view follows. The command line writes them all
// at once; the window one a frame, with Stop and taking tokens back.
#pragma once

#include "app/state/app_state.hpp"

#include <string>

namespace attnviz::app {

// One more token: chosen from the shown pass's logits (draw number Scenario::generated.size()
// under the sampling's seed) and appended. False (and state.error) when the source is not a
// decoder's checkpoint, the pass is edited, or the text fills the model's positions.
bool generateOne(AppState& state, const core::decoder::Sampling& sampling);
// `count` tokens (stops early after the tokenizer's end-of-text): "" or why not, as one line.
std::string generateTokens(AppState& state, int count, const core::decoder::Sampling& sampling);
// The window's generation: one token when one is due (state.generation), then the count goes
// down; a token that cannot be written ends it (state.error says why). Returns whether one was written.
bool stepGeneration(AppState& state);
// Where the tokens a model generated start in the shown pass (marked in every view), or −1 when
// none were generated.
Eigen::Index generatedFrom(const AppState& state);

}  // namespace attnviz::app
