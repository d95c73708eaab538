// Distances and sinks: each head's profile (core/attention/head_profile.hpp) as a view of every
// layer × head. For the selected layer, attention by distance on log–log axes (the mean weight of
// the pairs at each distance, beside uniform attention's) and the mass on the first k tokens across
// query positions; the selected head drawn over the layer's other heads. Made in the sweep that
// makes the statistics and the model view (state.headSummary): at long inputs from maps made on
// demand, a block of rows at a time, never a whole map.
#pragma once

#include "app/render/profile_image.hpp"
#include "app/state/app_state.hpp"
#include "app/views/figures.hpp"

#include <string>
#include <string_view>

namespace attnviz::app {

namespace panel_id {
inline constexpr std::string_view kDistance = "distance";
}  // namespace panel_id

// The layer of the summary the view shows (the selected one, counted in the summary's layers).
int profileLayer(const AppState& state);
// "layer 3 · head 2 of 12" ("all 12 heads" when none is selected): what the view shows.
std::string profileHeads(const AppState& state);

// The selected layer's curves as plots: the selected head (view.selectedHead; −1: every head in its
// own colour) over the layer's other heads, uniform attention as the reference by distance, the
// layer's window marked. The window's panel draws the same plots.
render::LinePlotsFigure profileFigure(AppState& state, const FigureRequest& request);
// The same from state.headSummary as it is (current, with profiles: the caller checks).
render::LinePlotsFigure profilePlots(const AppState& state);
// --export-distance: OUT.png or OUT.svg, the figure; OUT.csv or OUT.json, every layer × head's
// curves with their bins.
std::string writeProfiles(AppState& state, const std::string& path, const FigureRequest& request);
void checkProfilesPath(const std::string& path);

// "layer,head,curve,from,to,value,count": curve "distance" (the mean weight of the pairs whose
// distance is from … to, count = the pairs), "uniform" (the same for uniform attention) and
// "first_k" (the mean mass on the first k keys of the queries from … to that come after them, count
// = those queries); layers counted as the statistics count them.
std::string profilesCsv(const HeadSummary& summary);
// {"source", "tokens", "layer_count", "head_count", "first_k": {"k"}, "rule", "distance_bins":
//  [[from, to], …], "position_bins": [[from, to], …], "heads": [{"layer", "head", "by_distance",
//  "uniform", "pairs", "first_k", "rows"}]}
std::string profilesJson(const HeadSummary& summary, const std::string& source);

}  // namespace attnviz::app
