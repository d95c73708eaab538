// Lessons through the action layer: stepping loads each step's scenario, panels and lab; the
// quick checks are answered against the live numbers (seed 004's three).
#include "app/state/actions.hpp"
#include "core/scenario/presets.hpp"

#include <gtest/gtest.h>

#include <cmath>

using namespace attnviz;
using namespace attnviz::app;

namespace {

AppState withLesson() {
    AppState s = makeState(core::loadPreset("default"));
    recompute(s);
    EXPECT_TRUE(apply(s, action::OpenLesson{core::loadLesson("attention")}));
    return s;
}

}  // namespace

TEST(Lessons, OpenAndStepThrough) {
    AppState s = withLesson();
    ASSERT_TRUE(s.lesson);
    EXPECT_EQ(s.lesson->step, 0);
    EXPECT_EQ(s.presetId, "seed000-three-tokens");
    EXPECT_EQ(s.model.tq(), 3);
    EXPECT_TRUE(apply(s, action::StepLesson{+1}));
    EXPECT_EQ(s.lesson->step, 1);
    EXPECT_EQ(s.model.tq(), 4);  // the inline T = 4 scenario
    EXPECT_EQ(s.model.dk, 4);
    EXPECT_TRUE(apply(s, action::StepLesson{-5}));  // clamped at the first step
    EXPECT_EQ(s.lesson->step, 0);
    EXPECT_TRUE(apply(s, action::GoToLessonStep{7}));
    EXPECT_EQ(s.view.lab, Lab::Linear);  // the step's lab
    EXPECT_TRUE(apply(s, action::StepLesson{+10}));
    EXPECT_EQ(s.lesson->step, 8);
    EXPECT_EQ(s.view.lab, Lab::Cost);
    EXPECT_TRUE(apply(s, action::SetTemperature{0.5f}));  // ordinary changes keep the lesson
    EXPECT_EQ(s.lesson->step, 8);
    EXPECT_TRUE(apply(s, action::CloseLesson{}));
    EXPECT_FALSE(s.lesson);
    EXPECT_FALSE(apply(s, action::StepLesson{+1}));
    EXPECT_EQ(s.error, "lesson: no lesson is open");
}

TEST(Lessons, QuickChecksUseTheLiveNumbers) {
    AppState s = withLesson();
    // Step 2: Q Kᵀ at T = 4 has 16 entries.
    apply(s, action::GoToLessonStep{1});
    EXPECT_TRUE(apply(s, action::AnswerCheck{15}));
    EXPECT_FALSE(s.lesson->result->correct);
    EXPECT_EQ(s.lesson->result->live, 16.0);
    EXPECT_TRUE(apply(s, action::AnswerCheck{16}));
    EXPECT_TRUE(s.lesson->result->correct);
    // The check follows the model on screen, not the file: six tokens make 36.
    apply(s, action::SetTokens{{"a", "b", "c", "d", "e", "f"}});
    apply(s, action::AnswerCheck{16});
    EXPECT_FALSE(s.lesson->result->correct);
    EXPECT_EQ(s.lesson->result->live, 36.0);

    // Step 4: α₂,₃ under the causal mask is exactly 0; without the mask it is not.
    apply(s, action::GoToLessonStep{3});
    EXPECT_FALSE(s.lesson->result);  // a new step starts unanswered
    apply(s, action::AnswerCheck{0});
    EXPECT_TRUE(s.lesson->result->correct);
    EXPECT_EQ(s.lesson->result->live, 0.0);
    apply(s, action::SetCausal{false});
    apply(s, action::AnswerCheck{0});
    EXPECT_FALSE(s.lesson->result->correct);
    EXPECT_GT(s.lesson->result->live, 0.01);

    // Step 5: ‖Y′ − P·Y‖ ≈ 0 with positional encoding off; far from 0 with it on.
    apply(s, action::GoToLessonStep{4});
    ASSERT_TRUE(s.swapped());
    apply(s, action::AnswerCheck{0});
    EXPECT_TRUE(s.lesson->result->correct);
    EXPECT_LT(s.lesson->result->live, 1e-5);
    apply(s, action::SetPositional{core::Positional::Sinusoidal});
    apply(s, action::AnswerCheck{0});
    EXPECT_FALSE(s.lesson->result->correct);
    EXPECT_GT(s.lesson->result->live, 1e-2);
}

TEST(Lessons, ChecksRefuseWhatTheyCannotAnswer) {
    AppState s = withLesson();
    EXPECT_FALSE(apply(s, action::AnswerCheck{1}));  // step 1 has no check
    EXPECT_EQ(s.error, "lesson: this step has no quick check");
    apply(s, action::GoToLessonStep{3});
    EXPECT_FALSE(apply(s, action::AnswerCheck{std::nan("")}));
    EXPECT_EQ(s.error, "answer: not a number");
    apply(s, action::SetTokens{{"a", "b"}});  // α₂,₃ needs three keys
    EXPECT_FALSE(apply(s, action::AnswerCheck{0}));
    EXPECT_EQ(s.error, "check: α_2,3 is outside the 2 x 2 map");
    apply(s, action::SetHeads{1});
    apply(s, action::GoToLessonStep{3});
    apply(s, action::SetHeads{2});
    EXPECT_TRUE(apply(s, action::AnswerCheck{0}));  // head 1 exists with 2 heads too
}
