// What the tests of readers of maps under every mask share: one map's six masks.
#pragma once

#include "core/attention/attention.hpp"

#include <vector>

namespace attnviz::core {

// None, causal, causal within `causalWindow` keys, both ways within `window`, causal with keys 0,
// 6 and 7 padded, and a custom mask ((i·5 + j·3) mod 4 = 0 blocked): every mask a sweep reads.
inline std::vector<Settings> everyMask(Eigen::Index tq, Eigen::Index tk, int causalWindow, int window) {
    std::vector<Settings> masks(6);
    masks[1].causal = true;
    masks[2].causal = true, masks[2].window = causalWindow;
    masks[3].window = window;
    masks[4].causal = true, masks[4].paddedKeys = {0, 6, 7};
    masks[5].custom = MaskMat::Zero(tq, tk);
    for (Eigen::Index i = 0; i < tq; ++i)
        for (Eigen::Index j = 0; j < tk; ++j) masks[5].custom(i, j) = (i * 5 + j * 3) % 4 == 0;
    return masks;
}

}  // namespace attnviz::core
