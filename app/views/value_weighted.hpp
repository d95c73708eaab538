// Value-weighted attention as a view (Kobayashi et al., EMNLP 2020, "Attention is Not Only a
// Weight"): per head, the map ‖α_ij · v_j W_O^h‖, the size of what key j writes into query i's
// residual stream through the head: its weight times the length of the key's value carried through
// the head's rows of W_O (its bias included in v_j; a scenario without W_O: ‖α_ij v_j‖). A key the
// head weighs heavily but whose value is small writes little, so rows no longer sum to 1. Of the
// pass the views of every layer read (a checkpoint's own, causal at τ = 1; a scenario's heads);
// imported maps have no values behind them.
#pragma once

#include "app/render/value_weighted_image.hpp"
#include "app/state/app_state.hpp"
#include "app/state/derived.hpp"
#include "app/views/figures.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace attnviz::app {

namespace panel_id {
inline constexpr std::string_view kValueWeighted = "value-weighted";
}  // namespace panel_id

// ‖v_j W‖ for every key j (`values` [T_k, d_v], `wo` [d_v, d_out]; no rows: ‖v_j‖), in double.
core::RowVec valueNorms(const core::MatRef& values, const core::MatRef& wo);
// α_ij · norms_j: `weights` α [T_q, T_k], `norms` [T_k].
core::Mat valueWeighted(const core::MatRef& weights, const core::RowVec& norms);

// The shown layer's value-weighted maps, made once per pass, layer and head (never per frame).
struct ValueWeightedMaps {
    struct Key {
        PassKey pass;
        int layer = 0, head = 0;  // the layer of the maps (counted in the pass's maps) and the head shown (-1: their mean)
        bool operator==(const Key&) const = default;
    };
    std::vector<core::RowVec> norms;  // [heads], each [T_k]: ‖v_j W_O^h‖
    core::Mat map;                    // the shown head's map; for the mean, the mean of the heads' maps
    // Cells per side of map's cells: 1, or past render::kMaxValueWeightedTokens a long input's
    // pooling (longFigureFactor): map holds block means, core::kMaskedTexel where masked.
    int factor = 1;
    float largest = 0;       // over the map's readable cells
    bool throughWo = false;  // the values were carried through W_O (a scenario may have none)
};
using ValueWeightedView = Derived<ValueWeightedMaps::Key, ValueWeightedMaps>;

// The view's row's refresh: makes the maps when they are not current and the pass is ready (a
// scenario's heads all computed); returns whether they are current now. An import leaves no maps
// and says why.
bool refreshValueWeighted(AppState& state);
// The view's data when it is current (made, or with its reason why not); else null.
const ValueWeightedView* shownValueWeighted(const AppState& state);

// The shown head's figure (--head; -1 the mean), as the window shows it.
render::ValueWeightedFigure valueWeightedFigure(AppState& state, const FigureRequest& request);
// --export-value-weighted: OUT.png or OUT.svg, the figure; OUT.npy, every layer × head's map
// [layers, heads, T_q, T_k] float32.
std::string writeValueWeighted(AppState& state, const std::string& path, const FigureRequest& request);
void checkValueWeightedPath(const std::string& path);

}  // namespace attnviz::app
