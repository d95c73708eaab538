// apply()'s halves, one overload per action, grouped by family in their own files:
// actions_scenario.cpp (the model and the softmax), actions_view.cpp, actions_lesson.cpp,
// actions_labs.cpp, actions_heads.cpp. apply() (actions.cpp) dispatches; a missing overload does not compile.
// Internal to the state library.
#pragma once

#include "app/state/actions.hpp"
#include "app/state/source.hpp"

#include <string>

namespace attnviz::app::detail {

// Shared by the families (actions.cpp).
void clampSelection(AppState& state);
// Builds a state for `next` in place of this one (the view, labs and lesson carried over); on
// failure the state stays and the error is kept (actions_scenario.cpp).
bool rebuildScenario(AppState& state, const core::Scenario& next);
// Sets state.error to "where: what" and returns false.
bool reject(AppState& state, const std::string& where, const std::string& what);

// Scenario: a new model (or only new weights, for the softmax settings).
bool applyAction(AppState& state, const action::SetSentence& a);
bool applyAction(AppState& state, const action::SetPair& a);
bool applyAction(AppState& state, const action::SetPairFilter& a);
bool applyAction(AppState& state, const action::SetGenerated& a);
bool applyAction(AppState& state, const action::StartGenerating& a);
bool applyAction(AppState& state, const action::StopGenerating& a);
bool applyAction(AppState& state, const action::SetGenerateSampled& a);
bool applyAction(AppState& state, const action::SetTokens& a);
bool applyAction(AppState& state, const action::SetTokenizer& a);
bool applyAction(AppState& state, const action::SetDModel& a);
bool applyAction(AppState& state, const action::SetHeads& a);
bool applyAction(AppState& state, const action::SetDk& a);
bool applyAction(AppState& state, const action::SetSeed& a);
bool applyAction(AppState& state, const action::SetEmbedding& a);
bool applyAction(AppState& state, const action::SetPositional& a);
bool applyAction(AppState& state, const action::SetKvHeads& a);
bool applyAction(AppState& state, const action::SetWindow& a);
bool applyAction(AppState& state, const action::SelectLayer& a);
bool applyAction(AppState& state, const action::StepLayer& a);
bool applyAction(AppState& state, const action::LoadScenario& a);
bool applyAction(AppState& state, const action::CancelOpening& a);
bool applyAction(AppState& state, const action::SwapTokens& a);
bool applyAction(AppState& state, const action::ResetSwaps& a);
bool applyAction(AppState& state, const action::Shuffle& a);
bool applyAction(AppState& state, const action::SetTemperature& a);
bool applyAction(AppState& state, const action::SetScaled& a);
bool applyAction(AppState& state, const action::SetCausal& a);
bool applyAction(AppState& state, const action::ToggleCausal& a);

// View: nothing is recomputed.
bool applyAction(AppState& state, const action::SelectHead& a);
bool applyAction(AppState& state, const action::StepHead& a);
bool applyAction(AppState& state, const action::SelectQuery& a);
bool applyAction(AppState& state, const action::StepQuery& a);
bool applyAction(AppState& state, const action::StepStage& a);
bool applyAction(AppState& state, const action::SetShift& a);
bool applyAction(AppState& state, const action::SetNextTemperature& a);
bool applyAction(AppState& state, const action::SetColormap& a);
bool applyAction(AppState& state, const action::SetTheme& a);
bool applyAction(AppState& state, const action::SetUiScale& a);
bool applyAction(AppState& state, const action::SetPresenter& a);
bool applyAction(AppState& state, const action::SetSmallMultiples& a);
bool applyAction(AppState& state, const action::SetSkipFirstKey& a);
bool applyAction(AppState& state, const action::SetColourScale& a);
bool applyAction(AppState& state, const action::SetRollout& a);
bool applyAction(AppState& state, const action::SetRolloutHeads& a);
bool applyAction(AppState& state, const action::SetCompare& a);
bool applyAction(AppState& state, const action::SetPreviewHead& a);
bool applyAction(AppState& state, const action::SetHeatmapPooling& a);
bool applyAction(AppState& state, const action::SetZoomRegion& a);
bool applyAction(AppState& state, const action::PickSwapChip& a);
bool applyAction(AppState& state, const action::SelectCell& a);
bool applyAction(AppState& state, const action::ToggleViewHead& a);
bool applyAction(AppState& state, const action::SetViewHeads& a);
bool applyAction(AppState& state, const action::PickViewToken& a);
bool applyAction(AppState& state, const action::SetView& a);
bool applyAction(AppState& state, const action::HoverToken& a);
bool applyAction(AppState& state, const action::ClearError& a);

// Labs: the lab shown, its view, its jobs.
bool applyAction(AppState& state, const action::SetLab& a);
bool applyAction(AppState& state, const action::SetFlashStep& a);
bool applyAction(AppState& state, const action::SetFlashTiles& a);
bool applyAction(AppState& state, const action::SetFastWeightSteps& a);
bool applyAction(AppState& state, const action::SetMemoryWall& a);
bool applyAction(AppState& state, const action::SetKvCache& a);
bool applyAction(AppState& state, const action::SetTrainSettings& a);
bool applyAction(AppState& state, const action::StartTraining& a);
bool applyAction(AppState& state, const action::StopTraining& a);
bool applyAction(AppState& state, const action::StartCostSweep& a);
bool applyAction(AppState& state, const action::StopCostSweep& a);

// Views of every head: actions_heads.cpp.
bool applyAction(AppState& state, const action::SelectLayerHead& a);
bool applyAction(AppState& state, const action::SetModelView& a);
bool applyAction(AppState& state, const action::SetSinkEpsilon& a);
bool applyAction(AppState& state, const action::SetFirstTokens& a);
bool applyAction(AppState& state, const action::SetAttribution& a);
bool applyAction(AppState& state, const action::SetLensColour& a);
bool applyAction(AppState& state, const action::StartInductionTest& a);
bool applyAction(AppState& state, const action::StopInductionTest& a);
bool applyAction(AppState& state, const action::StartRetrievalTest& a);
bool applyAction(AppState& state, const action::StopRetrievalTest& a);
bool applyAction(AppState& state, const action::StopHeadSweep& a);
bool applyAction(AppState& state, const action::ResumeHeadSweep& a);

// Lessons.
bool applyAction(AppState& state, const action::OpenLesson& a);
bool applyAction(AppState& state, const action::GoToLessonStep& a);
bool applyAction(AppState& state, const action::StepLesson& a);
bool applyAction(AppState& state, const action::AnswerCheck& a);
bool applyAction(AppState& state, const action::CloseLesson& a);

// What-if: a model's edits, with undo (actions_what_if.cpp).
bool applyAction(AppState& state, const action::AblateHead& a);
bool applyAction(AppState& state, const action::HideToken& a);
bool applyAction(AppState& state, const action::RemoveWhatIfEdit& a);
bool applyAction(AppState& state, const action::UndoWhatIf& a);
bool applyAction(AppState& state, const action::RedoWhatIf& a);
bool applyAction(AppState& state, const action::ClearWhatIf& a);

}  // namespace attnviz::app::detail
