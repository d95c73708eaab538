// Direct logit attribution as a view (core/models/decoder/attribution.hpp): for one position and a
// target (a token, or the difference of two), what each head, each MLP and the embeddings write
// onto the target's logit, through the final norm with its divisor frozen, as a layers × heads grid
// on a two-sided colour scale with the MLPs and W_O's biases in their own columns, and the sum
// beside the pass's own logit. Made on the UI thread (one position: a row of weights per head and
// one product of W_O per layer).
#pragma once

#include "app/state/app_state.hpp"
#include "app/state/attribution.hpp"
#include "app/views/figures.hpp"

#include <string>
#include <string_view>

namespace attnviz::app {

namespace panel_id {
inline constexpr std::string_view kAttribution = "attribution";
}  // namespace panel_id

// One line: "sum 4.2311 · the pass's logit 4.2311 · difference 2.1e-06".
std::string attributionCheck(const core::decoder::LogitAttribution& terms);
// "logit of ␣Mary − ␣John at position 14 (␣to)": what the terms add up to.
std::string attributionSubject(const AttributionData& data);

// --export-attribution: OUT.png or OUT.svg (the grid), OUT.csv or OUT.json (one record per layer
// and head, per MLP and W_O bias, and the embeddings, with the sum and the pass's logit).
std::string writeAttribution(AppState& state, const std::string& path, const FigureRequest& request);
void checkAttributionPath(const std::string& path);

}  // namespace attnviz::app
