#include "app/views/view_table.hpp"

#include "app/state/head_summary.hpp"
#include "app/state/query_key_view.hpp"
#include "app/state/shown_map.hpp"
#include "app/views/attribution.hpp"
#include "app/views/head_profile_view.hpp"
#include "app/views/head_view_lines.hpp"
#include "app/views/logit_lens.hpp"
#include "app/views/train_preview.hpp"
#include "app/views/value_weighted.hpp"
#include "app/views/what_if_view.hpp"

#include <algorithm>
#include <new>

namespace attnviz::app {
namespace {

// A figure's file: the view's builder, then the figure's encoder for the path's type.
template <auto build, auto encode>
std::string writeFigure(AppState& state, const std::string& path, const FigureRequest& request) {
    return encode(path, build(state, request));
}

void pngOrSvg(const std::string& path) { static_cast<void>(render::heatmapIsPng(path)); }

constexpr const char* kPngOrSvg = "OUT.png|OUT.svg";

// The positional panel's shift check (two forward passes); out of memory is its reason, not an error.
bool checkShiftNow(AppState& state) {
    try {
        checkShift(state);
    } catch (const std::bad_alloc&) {
        state.shiftCheck.why = "out of memory while checking the shift";
    }
    return true;
}

}  // namespace

const std::vector<ViewInfo>& viewTable() {
    static const std::vector<ViewInfo> table = {
        {panel_id::kControls, "Controls", "Controls", Place::Own, Need::Nothing, {}, nullptr},
        {panel_id::kHeatmap,
         "Attention weights",
         "Weights",
         Place::Weights,
         Need::Nothing,
         {"--export-heatmap", kPngOrSvg, "Write a heatmap figure (labels, colour bar) without a window: .png or .svg (vector)", false,
          writeFigure<heatmapFigure, render::encodeHeatmap>, pngOrSvg},
         refreshShownMap},
        {panel_id::kValueWeighted,
         "Value-weighted attention: what each key writes",
         "Value-weighted",
         Place::Weights,
         Need::Weights,
         {"--export-value-weighted", "OUT.png|OUT.svg|OUT.npy",
          "Write value-weighted attention (Kobayashi et al. 2020: ||a_ij v_j W_O||, what key j writes into query i through the head; "
          "--head, -1 = the mean of the heads' maps; --layer for a model) without a window: .png or .svg, or .npy with every layer × "
          "head [layers, heads, T, T] float32",
          true, writeValueWeighted, checkValueWeightedPath},
         refreshValueWeighted},
        {panel_id::kBars,
         "Per-query attention",
         "Per query",
         Place::Own,
         Need::Nothing,
         {"--export-bars", kPngOrSvg,
          "Write the per-query bar chart (one query's weights over the keys; --query, --head) without a window: .png or .svg", false,
          writeFigure<barsFigure, render::encodeBars>, pngOrSvg},
         nullptr},
        {panel_id::kHeads,
         "Heads",
         "Heads",
         Place::Own,
         Need::WholeMaps,
         {"--export-heads", kPngOrSvg,
          "Write every head's map side by side, with their mean and one colour bar, without a window: .png or .svg", false,
          writeFigure<headsFigure, render::encodeHeads>, pngOrSvg},
         nullptr},
        {panel_id::kSwap, "Token swap", "Swap", Place::Own, Need::WholeLayer, {}, nullptr},
        {panel_id::kStages, "Stages", "Stages", Place::Own, Need::WholeLayer, {}, nullptr},
        {panel_id::kPositional, "Positional encoding", "Positions", Place::Own, Need::WholeLayer, {}, checkShiftNow},
        {panel_id::kModel,
         "Model view: every layer × head",
         "Model",
         Place::Layers,
         Need::Nothing,
         {"--export-model-view", kPngOrSvg,
          "Write every layer × head as a thumbnail (rows: layers, columns: heads) with one colour bar, without a window: .png or .svg",
          true, writeFigure<modelViewFigure, render::encodeModelView>, pngOrSvg},
         refreshHeadSummary},
        {panel_id::kStats, "Head statistics", "Statistics", Place::Layers, Need::Nothing, {}, refreshHeadSummary},
        {panel_id::kDistance,
         "Distances and sinks: each head's profile",
         "Distances",
         Place::Layers,
         Need::Nothing,
         {"--export-distance", "OUT.png|OUT.svg|OUT.csv|OUT.json",
          "Write each head's profile without a window: the mean weight by distance (log bins) beside uniform attention's, and the "
          "mass on the first k tokens (--first-tokens) across query positions. .png or .svg: the selected layer (--layer), --head "
          "drawn over its other heads (-1: every head in its colour); .csv or .json: every layer x head's curves and bins",
          true, writeProfiles, checkProfilesPath},
         refreshHeadSummary},
        {panel_id::kHeadView,
         "Head view",
         "Head view",
         Place::Weights,
         Need::Nothing,
         {"--export-head-view", kPngOrSvg,
          "Write the head view (tokens twice, a line per query, key and head, opacity = weight; --head one head, default all of the "
          "layer; --query one query) without a window: .png or .svg",
          true, writeFigure<headViewFigure, render::encodeHeadView>, pngOrSvg},
         refreshHeadViewLines},
        {panel_id::kNeuron, "Neuron view: one score, term by term", "Neuron", Place::Weights, Need::WholeLayer, {}, nullptr},
        {panel_id::kCompare,
         "Compare two sentences",
         "Compare",
         Place::Weights,
         Need::WholeLayer,
         {"--export-compare", kPngOrSvg,
          "With --compare: write the head (--head, -1 = mean; --layer for a model) over both sentences and B − A without a window: "
          ".png or .svg",
          false, writeFigure<compareFigure, render::encodeCompare>, pngOrSvg},
         nullptr},
        {panel_id::kQkMap,
         "Query–key map",
         "Q–K map",
         Place::Layers,
         Need::Weights,
         {"--export-qk-map", "OUT.png|OUT.svg|OUT.json",
          "Write the query-key map of --head (its queries and keys, keys translated and both scaled as AttentionViz does, on their "
          "first two principal components; --query joined to its strongest keys) without a window: .png, .svg, or .json with the "
          "numbers",
          false, writeFigure<qkMapFigure, render::encodeQkMap>, render::checkQkMapPath},
         refreshQueryKeyMap},
        {panel_id::kWhatIf, "What-if: ablate heads, hide tokens", "What-if", Place::Layers, Need::Rerun, {}, refreshWhatIf},
        {panel_id::kLogitLens,
         "Logit lens: what each layer would predict",
         "Lens",
         Place::Layers,
         Need::Rerun,
         {"--export-logit-lens", "OUT.png|OUT.svg|OUT.csv|OUT.json",
          "Write the logit lens (each layer's residual stream through the final norm and unembedding: layer 0 the embeddings) without a "
          "window: .png or .svg, the layers x positions grid of top tokens (the last 96 positions); .csv or .json, one record per layer "
          "and position with the top 5 tokens' ids, texts and probabilities and the target's (--lens-target: the token the last layer ranks first, or the next input token; --lens-colour colours the grid by it)",
          false, writeLogitLens, checkLogitLensPath},
         refreshLogitLens},
        {panel_id::kAttribution,
         "Direct logit attribution: what each head writes onto the prediction",
         "Attribution",
         Place::Layers,
         Need::Rerun,
         {"--export-attribution", "OUT.png|OUT.svg|OUT.csv|OUT.json",
          "Write direct logit attribution (each head's output, each MLP's and the embeddings' through the final norm with its divisor "
          "frozen, onto --target's unembedding, at --query, default the last position) without a window: .png or .svg, the layers x "
          "heads grid; .csv or .json, one record per head, per layer's MLP and W_O bias, with the sum and the pass's logit",
          false, writeAttribution, checkAttributionPath},
         refreshAttribution},
        {labName(Lab::Linear), "Linear attention · fast weights · Hopfield", "Linear", Place::Own, Need::WholeLayer, {}, nullptr},
        {labName(Lab::Cost), "Cost of attention", "Cost", Place::Own, Need::Nothing, {}, nullptr},
        {labName(Lab::Train), "Heads that learn", "Training", Place::Own, Need::Nothing, {}, refreshTrainPreview},
        {labName(Lab::Flash), "Flash-attention walk", "Flash", Place::Own, Need::WholeLayer, {}, nullptr},
        {panel_id::kLesson, "Lesson", "Lesson", Place::Own, Need::Nothing, {}, nullptr},
    };
    return table;
}

bool feeds(const Capabilities& can, Need need) {
    switch (need) {
        case Need::Weights: return can.weights;
        case Need::Rerun: return can.rerun;
        case Need::WholeLayer: return can.weights && can.wholeLayer;
        case Need::WholeMaps: return can.wholeLayer;
        case Need::Nothing: break;
    }
    return true;
}

const char* needText(Need need) {
    switch (need) {
        case Need::Weights: return "needs the weights behind the maps: a scenario or a model, not imported attention";
        case Need::Rerun: return "needs a model to run again: open a model folder";
        case Need::WholeLayer:
            return "needs the weights behind the maps and the shown layer's heads computed whole: a scenario, or a model's sentence "
                   "whose every head's T x T maps fit --max-memory";
        case Need::WholeMaps:
            return "needs the shown layer's maps whole: a model's sentence whose every head's T x T maps fit --max-memory";
        case Need::Nothing: break;
    }
    return "";
}

bool feedsView(const AppState& state, std::string_view id) {
    const ViewInfo* view = findView(id);
    return view == nullptr || feeds(capabilities(state), view->needs);
}

std::vector<std::string_view> viewsAt(Place place) {
    std::vector<std::string_view> ids;
    for (const ViewInfo& view : viewTable())
        if (view.place == place) ids.push_back(view.id);
    return ids;
}

const ViewInfo* findView(std::string_view id) {
    const auto& table = viewTable();
    const auto it = std::find_if(table.begin(), table.end(), [&](const ViewInfo& v) { return v.id == id; });
    return it == table.end() ? nullptr : &*it;
}

}  // namespace attnviz::app
