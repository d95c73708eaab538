// Linear attention and its older readings, live on the visible head's q, k, v (seed 000 §39.4):
// the implied linear map beside the softmax map, the parallel and recurrent forms' agreement,
// the fast-weight matrix S_t growing token by token, and one Hopfield retrieval step.
#pragma once

#include "app/panels/panel.hpp"
#include "core/labs/linear_attention.hpp"

#include <cstdint>

namespace attnviz::app {

class LinearPanel : public Panel {
public:
    const char* id() const override { return "linear"; }
    const char* title() const override { return "Linear attention · fast weights · Hopfield"; }
    void draw(PanelContext& ctx) override;

    // Largest T for which the T x T linear map is computed and drawn.
    static constexpr Eigen::Index kMaxTokens = 2048;

private:
    // Derived from one head's q, k, v; recomputed when that head's numbers or the mask change.
    struct Derived {
        std::uint64_t version = 0;
        int head = -1;
        bool causal = false;
        core::LinearAttention linear;  // with the scenario's mask (causal or not)
        float recurrentDiff = 0;       // max |recurrent − causal parallel map|
        int steps = -1;                // tokens written into `fast`
        core::Mat fast;                // the fast-weight matrix S after `steps` tokens, [d_k, d_v]
        float fastRange = 0;           // max |S|, the colour scale
    };
    const Derived& derived(const AppState& s, int head, int steps);
    Derived m_derived;
};

}  // namespace attnviz::app
