// Actions: every change the user can make, as small structs. apply() changes the state and
// marks only what the change invalidates; a change that does not build is rejected with a
// message and the previous state stays.
#pragma once

#include "app/state/app_state.hpp"

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace attnviz::app {

namespace action {
// Model changes: rebuild X and weights, recompute every stage.
struct SetSentence {
    std::string text;
};
struct SetTokens {
    std::vector<std::string> tokens;
};
// An encoder's second sentence ("" = none): the sentence pair [CLS] A [SEP] B [SEP].
struct SetPair {
    std::string text;
};
struct SetTokenizer {
    core::Tokenizer kind;
};
struct SetDModel {
    int value;
};
struct SetHeads {
    int value;
};  // d_k follows as d_model / heads unless set explicitly
struct SetDk {
    int value;
};
struct SetSeed {
    std::uint64_t value;
};
struct SetEmbedding {
    core::EmbeddingKind kind;
};
struct SetPositional {
    core::Positional kind;
};
struct SetKvHeads {
    int value;
};  // key/value heads shared by the query heads; 0 = one per query head
struct SetWindow {
    int value;
};  // sliding window of keys; 0 = none
// A model's layer: its attention becomes the scenario's (the model's pass is kept, not rerun).
struct SelectLayer {
    int layer;
};
struct StepLayer {
    int delta;
};
// A scenario from a preset, a file or the model dialog. With `background`, a scenario naming a
// model folder other than the one open is opened on a worker thread (the window's dialogs): the
// state stays as it is until adoptOpenedModel takes the new one. Any other load cancels an
// opening under way. `path`: the file it was read from; its errors are named within it, as the
// command line's are.
struct LoadScenario {
    core::Scenario scenario;
    std::string presetId;
    std::string path;
    bool background = false;
};
// Stops the model being opened in the background; the state on screen stays.
struct CancelOpening {};
// Token order.
struct SwapTokens {
    int a;
    int b;
};
struct ResetSwaps {};
struct Shuffle {
    std::uint64_t seed;
};
// Softmax changes: new weights and outputs, never new scores.
struct SetTemperature {
    float value;
};
struct SetScaled {
    bool value;
};
struct SetCausal {
    bool value;
};
struct ToggleCausal {};
// View changes: nothing is recomputed.
struct SelectHead {
    int head;
};  // -1 = mean over heads
struct StepHead {
    int delta;
};
struct SelectQuery {
    int query;
};
struct StepQuery {
    int delta;
};
struct StepStage {
    int delta;
};
struct SetShift {
    int value;
};  // the positional panel's shift of the sentence, 0 … kMaxShift
struct SetNextTemperature {
    float value;
};  // the next-token distribution's temperature (the attention's is SetTemperature)
struct SetColormap {
    core::ColormapKind value;
};
struct SetTheme {
    Theme value;
};
struct SetUiScale {
    float value;
};
struct SetPresenter {
    bool value;
};
struct SetSmallMultiples {
    bool value;
};
// Leave the first key out of the head statistics and the mean views (ViewState::skipFirstKey).
struct SetSkipFirstKey {
    bool value;
};
// How weights become colours in every map of attention (core::ColourScale).
struct SetColourScale {
    core::ColourScale scale;
};
// The heatmap and bars show attention rollout (true) or the selected head; how rollout fuses heads.
struct SetRollout {
    bool value;
};
struct SetRolloutHeads {
    core::RolloutHeads heads;
};
// Which block of a sentence pair's maps the views show (BertViz's filter): all, A → A, A → B, …
struct SetPairFilter {
    PairFilter filter;
};
// Run the same model or scenario over another sentence beside this one ("" = stop comparing).
struct SetCompare {
    std::string text;
};
struct SetPreviewHead {
    int head;
    int layer = -1;  // a model's layer (the model view); -1 = the shown layer
};                   // -2 = none
struct SetHeatmapPooling {
    int factor;
};  // what the heatmap draws the shown head with (>= 1)
struct SetZoomRegion {
    ZoomRegion region;
};  // the heatmap's zoomed region to make finer (rows 0: none)
struct PickSwapChip {
    int position;
};  // first click remembers, second click swaps
// The head view and the neuron view.
struct SelectCell {
    int query;
    int key;
};  // a heatmap cell: the selected query and the neuron view's key
struct ToggleViewHead {
    int head;
};  // on or off in the head view (the last one on stays on)
struct SetViewHeads {
    std::vector<int> heads;
};  // empty: back to the default (the selected head)
struct PickViewToken {
    int query;  // -1 without add: none picked
    bool add;   // shift-click: add or remove it; else it alone (or none, when it was alone)
};
struct SetView {
    float zoom;
    float panX;
    float panY;
};
// Labs: which one is shown, its view, and its jobs (started and stopped here, read as
// snapshots: trainSnapshot, costSnapshot).
struct SetLab {
    Lab value;
};
struct SetFlashStep {
    int step;
};  // -1 = the walk done
struct SetFlashTiles {
    core::FlashTiles tiles;
};  // each 1 … kMaxFlashTokens; the walk starts again
struct SetFastWeightSteps {
    int steps;
};  // -1 = every token
struct SetMemoryWall {
    core::MemoryWall value;
};
struct SetKvCache {
    core::KvCacheConfig value;
};  // kept as typed: the cost lab says what is wrong with it (core::checkKvCache)
struct SetTrainSettings {
    TrainSettings value;
};  // rejected while a run goes on
struct StartTraining {
    TrainSettings value;
};  // becomes the lab's settings; stops a run first
struct StopTraining {};
struct StartCostSweep {};  // stops a sweep first
struct StopCostSweep {};
// Lessons: open one at its first step, go to a step (loads its scenario, panels and lab),
// answer the step's quick check, close.
struct OpenLesson {
    core::Lesson lesson;
};
struct GoToLessonStep {
    int step;
};
struct StepLesson {
    int delta;
};
struct AnswerCheck {
    double value;
};
struct CloseLesson {};
struct ClearError {};
// Views of every head (the model view, the head statistics).
struct SelectLayerHead {
    int layer;
    int head;
};  // one step: a model's layer and one of its heads (a scenario: layer 0)
struct SetModelView {
    ModelViewOptions options;
};
struct SetSinkEpsilon {
    float value;
};  // 0 … 1
struct SetFirstTokens {
    int k;
};  // the head statistics' first k tokens: 1 … kMaxFirstTokens
struct SetGenerated {
    std::vector<int> ids;  // the tokens after the sentence's (a model's; an encoder's: refused)
};                         // the pass over them: typing's (one more row per token)
struct StartGenerating {
    int count;  // tokens to write, one a frame
    core::decoder::Sampling sampling;
};  // a decoder's pass without what-if edits; a generation under way is replaced
struct StopGenerating {};
struct SetGenerateSampled {
    bool sampled;
    int topK = 0;            // among the k most likely (0: every token)
    std::uint64_t seed = 0;  // the draws' seed
};                           // the window's Generate: sampled at the next-token temperature, else greedy
struct SetAttribution {
    int query;           // -1: the last position
    std::string target;  // "": the token the model ranks first there
};                       // a model's: a target that is not one token (or two joined by "-") is refused
struct SetLensColour {
    LensColour colour;
    LensTarget target;
};  // the logit lens's cells coloured by the top token or a target (the lens is made again for a new target)
struct StartInductionTest {
    core::InductionSettings settings;
};  // a model only; stops a test under way first
struct StopInductionTest {};
struct StartRetrievalTest {
    core::RetrievalSettings settings;
};  // a model only; stops a test under way first
struct StopRetrievalTest {};
struct StopHeadSweep {};    // the sweep over every map made on demand (refreshHeadSummary): stays stopped
struct ResumeHeadSweep {};  // until resumed
struct HoverToken {
    int token;         // -1 = none
    bool key = false;  // a key (the heatmap's column), else a query (its row)
};                     // a token under the mouse in the query–key map
// A model's what-if (what_if.hpp): each change reruns the pass from the first layer it changes,
// and can be undone.
struct AblateHead {
    int layer;
    int head;
    bool mean;  // its output replaced by its mean over positions; false: zeroed
};              // the same head ablated the other way: replaced; the same way: no change
struct HideToken {
    int token;
};  // a token already hidden: no change
struct RemoveWhatIfEdit {
    int index;  // in the list's order: ablations, then hidden tokens
};
struct UndoWhatIf {};
struct RedoWhatIf {};
struct ClearWhatIf {};
}  // namespace action

using Action =
    std::variant<action::SetSentence, action::SetTokens, action::SetPair, action::SetPairFilter, action::SetTokenizer, action::SetDModel,
                 action::SetHeads, action::SetDk, action::SetSeed, action::SetEmbedding, action::SetPositional, action::SetKvHeads,
                 action::SetWindow, action::SetShift, action::SelectLayer, action::StepLayer, action::LoadScenario, action::CancelOpening,
                 action::SwapTokens, action::ResetSwaps, action::Shuffle, action::SetTemperature, action::SetScaled, action::SetCausal,
                 action::ToggleCausal, action::SelectHead, action::StepHead, action::SelectQuery, action::StepQuery, action::StepStage,
                 action::SetNextTemperature, action::SetColormap, action::SetTheme, action::SetUiScale, action::SetPresenter,
                 action::SetSmallMultiples, action::SetSkipFirstKey, action::SetColourScale, action::SetRollout, action::SetRolloutHeads,
                 action::SetCompare, action::SetPreviewHead, action::SetHeatmapPooling, action::SetZoomRegion, action::PickSwapChip,
                 action::SelectCell, action::ToggleViewHead, action::SetViewHeads, action::PickViewToken, action::SetView, action::SetLab,
                 action::SetFlashStep, action::SetFlashTiles, action::SetFastWeightSteps, action::SetMemoryWall, action::SetKvCache,
                 action::SetTrainSettings, action::StartTraining, action::StopTraining, action::StartCostSweep, action::StopCostSweep,
                 action::OpenLesson, action::GoToLessonStep, action::StepLesson, action::AnswerCheck, action::CloseLesson,
                 action::ClearError, action::SelectLayerHead, action::SetModelView, action::SetSinkEpsilon, action::SetFirstTokens,
                 action::SetAttribution, action::SetLensColour, action::SetGenerated, action::StartGenerating, action::StopGenerating,
                 action::SetGenerateSampled, action::StartInductionTest, action::StopInductionTest, action::StartRetrievalTest,
                 action::StopRetrievalTest, action::StopHeadSweep, action::ResumeHeadSweep, action::HoverToken, action::AblateHead,
                 action::HideToken, action::RemoveWhatIfEdit, action::UndoWhatIf, action::RedoWhatIf, action::ClearWhatIf>;

// Returns false (and sets state.error) when the change was rejected.
bool apply(AppState& state, const Action& action);

// Takes the model opened in the background once it is ready: its state replaces this one (the
// view, labs and lesson carried over, as LoadScenario does), or its error is kept in
// state.error and the state stays. Returns true when either happened. The app calls it every
// frame; a model change started meanwhile by another action is replaced, as if it came later.
bool adoptOpenedModel(AppState& state);

// The live value a quick check asks for, from the numbers on screen (computed as needed);
// throws core::InputError naming the check's field when it does not apply (a head or
// position the current model does not have).
double liveCheckValue(AppState& state, const core::QuickCheck& check);

// The shift control's range (positions), in a lecture's units: a sentence moved along a document.
inline constexpr int kMaxShift = 4096;

// Temperature slider range (log scale) and UI scale range.
inline constexpr float kMinTemperature = 0.01f;
inline constexpr float kMaxTemperature = 100.0f;
inline constexpr float kMinUiScale = 0.5f;
inline constexpr float kMaxUiScale = 4.0f;
inline constexpr int kStageCount = 9;
inline constexpr int kMaxFirstTokens =
    1024;  // the most first tokens the head statistics' first-k mass counts  // X, Q, K, V, Q Kᵀ, scaled, masked, A, A V

// Why an edit of the input, sizes, weights or softmax is refused while the maps are imported.
inline constexpr const char* kImportedMapsFixed =
    "the maps were computed elsewhere and are fixed; this edit needs a model (open a checkpoint with --model)";

// Collects actions emitted by panels during a frame; the app applies them after drawing.
class Actions {
public:
    void emit(Action a) { m_queue.push_back(std::move(a)); }
    std::vector<Action> take() { return std::exchange(m_queue, {}); }
    bool empty() const { return m_queue.empty(); }

private:
    std::vector<Action> m_queue;
};

}  // namespace attnviz::app
