// Auto's colour scale on a map held whole tops its bar at the whole map's quantile
// (core::referenceQuantile, as a map read from a pass does): the heatmap's texels at any pooling,
// and the exported figure, read the same top.
#include "app/state/actions.hpp"
#include "app/views/figures.hpp"
#include "core/attention/attention_maps.hpp"
#include "core/attention/colormap.hpp"
#include "core/scenario/presets.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace attnviz;
using namespace attnviz::app;

TEST(KeptScale, AutosTopIsTheWholeMapsAtAnyPoolingAndInTheFigure) {
    core::Scenario sc = core::loadPreset("default");
    std::string sentence;
    for (int i = 0; i < 1400; ++i) sentence += "w" + std::to_string(i * 7 % 53) + " ";
    sc.sentence = sentence;
    AppState s = makeState(sc);
    recompute(s);
    ASSERT_GT(s.model.tq(), 1024);
    ASSERT_EQ(core::scaleReferenceFactor(s.model.tq(), s.model.tk()), 2);  // the whole map is pooled for its quantile
    ASSERT_EQ(s.view.colourScale, core::ColourScale::Auto);
    const int head = 1;
    const auto h = static_cast<std::size_t>(head);
    std::vector<float> maxima;
    core::poolBlocks(s.forward.heads[h].weights, s.settings, 2, core::BlockPooling::Max, maxima);
    const float whole = core::readableQuantile(maxima.data(), maxima.size(), core::kAutoClipQuantile);
    EXPECT_EQ(core::referenceQuantile(s.forward.heads[h].weights, s.settings), whole);
    ASSERT_GT(whole, 0.0f);
    // A frame with nothing to compute (the window just opened) makes it once.
    recomputeStep(s, head, 0, 5);
    EXPECT_EQ(s.pooled.quantileHead, head);
    EXPECT_EQ(s.pooled.referenceQuantile, whole);
    // The texels made with the head's softmax, at two poolings (two window sizes): the same top,
    // where the texels' own quantile moves.
    std::vector<float> own;
    for (const int pooling : {1, 3}) {
        ASSERT_TRUE(apply(s, action::SetTemperature{0.5f}));
        ASSERT_TRUE(apply(s, action::SetTemperature{1.0f}));
        recomputeStep(s, head, 0, pooling);
        ASSERT_EQ(s.pooled.head, head);
        ASSERT_EQ(s.pooled.factor, pooling);
        EXPECT_EQ(s.pooled.quantileHead, head);
        EXPECT_EQ(s.pooled.referenceQuantile, whole);
        own.push_back(core::readableQuantile(s.pooled.texels.data(), s.pooled.texels.size(), core::kAutoClipQuantile));
    }
    EXPECT_NE(own[0], own[1]);
    // Another scale keeps it, computing nothing: Auto again reads it at once.
    const long long softmaxes = s.work.softmaxes;
    ASSERT_TRUE(apply(s, action::SetColourScale{core::ColourScale::Fixed}));
    recomputeStep(s, head, 0, 3);
    ASSERT_TRUE(apply(s, action::SetColourScale{core::ColourScale::Auto}));
    recomputeStep(s, head, 0, 3);
    EXPECT_EQ(s.work.softmaxes, softmaxes);
    EXPECT_EQ(s.pooled.quantileHead, head);
    EXPECT_EQ(s.pooled.referenceQuantile, whole);
    // The figure of the head: the same top.
    recompute(s);
    ASSERT_TRUE(apply(s, action::SelectHead{head}));
    EXPECT_EQ(heatmapFigure(s, {.where = "heatmap"}).clipQuantile, whole);
}
