// The logit lens as a view (core/models/decoder/logit_lens.hpp): a layers × positions grid of a
// checkpoint's pass, each cell the token the residual stream after that layer would predict there
// read through the model's own last step (its final norm and unembedding), coloured by its
// probability; the embeddings are layer 0, the last layer the model's own prediction. The window's
// lens is made on a worker thread (no frame waits for the vocabulary's product); the command
// line's export over every position at once.
#pragma once

#include "app/state/app_state.hpp"
#include "app/state/derived.hpp"
#include "app/views/figures.hpp"
#include "core/models/decoder/logit_lens.hpp"

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace attnviz::app {

namespace panel_id {
inline constexpr std::string_view kLogitLens = "logit-lens";
}  // namespace panel_id

inline constexpr int kLensTop = 5;                        // tokens kept per cell (the hover's list)
inline constexpr Eigen::Index kLensWindowPositions = 64;  // the window's lens: at most this many positions

// A lens of the state's pass: positions [first, first + count) and the tokens' labels.
struct LensKey {
    PassKey pass;
    Eigen::Index first = 0, count = 0;
    LensTarget target = LensTarget::Final;
    bool operator==(const LensKey&) const = default;
};
struct LensData {
    core::decoder::LogitLens lens;
    std::vector<std::string> topLabels;     // [cells × k]: each kept token's label
    std::vector<std::string> targetLabels;  // [positions]: each target's label ("" without one)
    LensTarget target = LensTarget::Final;  // what the targets are
    int vocab = 0;                          // the vocabulary's size (the last rank)
};
using LensView = Derived<LensKey, LensData>;

// A cell's shade for its colour, 0 … 1: the top token's probability, the target's probability, or
// the target's rank on a log scale (1 at rank 1, 0 at the vocabulary's last); below 0 where the
// cell has no target (the last position's next input token).
float lensShade(const LensData& data, LensColour colour, int layer, Eigen::Index p);
// The colour's rule: the colour bar's ticks (shade, label) and caption, and the words that say
// what a cell's colour is ("its probability", "the probability of the next input token there").
struct LensScale {
    std::vector<std::pair<float, std::string>> ticks;
    std::string caption, words;
};
LensScale lensScale(const LensData& data, LensColour colour);
// "the model's final choice" or "the next input token".
const char* lensTargetName(LensTarget target);

// The positions the window's lens covers: the whole text up to kLensWindowPositions tokens, else
// that many ending at the selected query (the last when none is).
LensKey windowLensKey(const AppState& state);

// The view's row's refresh: starts the window's lens on the worker when it is not current (and not
// being made), and takes it in when the worker is done; returns whether it is current now.
bool refreshLogitLens(AppState& state);
// The window's lens when it is current (made, or with its reason why not); else null.
const LensView* shownLogitLens(const AppState& state);
// Whether a lens is being made on the worker (the window keeps drawing for it), and how far.
bool lensRunning(const AppState& state);
double lensProgress(const AppState& state);

// The lens over every position of the state's pass, made here (the command line's). Throws
// core::InputError naming `where`.
LensData wholeLogitLens(const AppState& state, const std::string& where);

// --export-logit-lens: OUT.csv or OUT.json (one record per layer and position: the layer counted
// from the embeddings as 0, the position, its token, the top tokens' ids, texts and
// probabilities, the target's id, text, probability and rank), or OUT.png / OUT.svg, the grid.
std::string writeLogitLens(AppState& state, const std::string& path, const FigureRequest& request);
void checkLogitLensPath(const std::string& path);
// The CSV and JSON of a lens (`tokens`: the input's labels).
std::string lensCsv(const LensData& data, const std::vector<std::string>& tokens);
std::string lensJson(const LensData& data, const std::vector<std::string>& tokens, const std::string& source);

}  // namespace attnviz::app
