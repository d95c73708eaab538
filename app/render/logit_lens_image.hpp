// The logit lens as a figure: a layers × positions grid (the embeddings on top as layer 0, the
// model's own prediction at the bottom), each cell the token the stream after that layer would
// predict at that position, on the colour of its probability (0 … 1) or of a target's probability
// or rank. PNG and SVG.
#pragma once

#include "core/attention/colormap.hpp"
#include "core/models/decoder/logit_lens.hpp"

#include <string>
#include <utility>
#include <vector>

namespace attnviz::render {

// The most positions one figure holds (the last of a longer lens; the CSV and JSON hold all).
inline constexpr Eigen::Index kMaxLensFigurePositions = 96;

struct LogitLensFigure {
    const core::decoder::LogitLens* lens = nullptr;
    const std::vector<std::string>* topLabels = nullptr;  // [cells × k]: the kept tokens' labels
    std::vector<std::string> tokens;                      // the input's labels, every position
    std::string title;
    core::ColormapKind colormap = core::ColormapKind::Viridis;
    // What colours the cells: empty, the top token's probability; else a shade per cell (the lens's
    // order), 0 … 1, below 0 for a cell without one (grey), with the colour bar's ticks (shade,
    // label), its caption and the subtitle's words for it.
    std::vector<float> shades;
    std::vector<std::pair<float, std::string>> ticks;
    std::string caption = "probability of the top token", words = "its probability";
    long long generatedFrom = -1;  // the first token a model generated: its label and those after in amber (−1: none)
};

// A cell's colour for its shade: the colormap's over 0 … 1, grey for a cell without one (below 0);
// the window's lens and the figure alike.
core::Rgb lensCellColour(core::ColormapKind colormap, float shade);

// The file for OUT.png or OUT.svg (chosen by the extension); InputError names the path, or the
// lens when it is empty or holds a probability that is not a number in [0, 1].
std::string encodeLogitLens(const std::string& path, const LogitLensFigure& figure);

}  // namespace attnviz::render
