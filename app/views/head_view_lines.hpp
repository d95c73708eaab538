// The head view's lines and sums as the window draws them, made once per pass and selection in the
// state (never per frame, never in the panel): every line core::HeadLineRule keeps for the heads
// shown, and the picked tokens' attention summed on the keys.
#pragma once

#include "app/state/app_state.hpp"
#include "app/state/derived.hpp"
#include "core/attention/head_lines.hpp"

#include <vector>

namespace attnviz::app {

struct HeadViewLines {
    struct Key {
        PassKey pass;
        int layer = -1;
        Eigen::Index tokens0 = 0;        // the pass's length (a model's pass may grow in place)
        std::vector<int> heads, tokens;  // shown heads, picked tokens
        bool operator==(const Key&) const = default;
    };
    core::HeadLines lines;
    std::vector<float> sums;  // [heads × keys]: summedAttention of the picked tokens (two or more picked)
};
using HeadViewLinesView = Derived<HeadViewLines::Key, HeadViewLines>;

// The head view's row's refresh: makes the lines when they are not current and the pass is ready.
bool refreshHeadViewLines(AppState& state);
// The lines when they are current; else null.
const HeadViewLines* shownHeadViewLines(const AppState& state);

}  // namespace attnviz::app
