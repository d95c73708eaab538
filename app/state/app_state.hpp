// AppState: everything the app shows, as plain data. The scenario is the single source of
// truth; the model, softmax settings and forward pass are derived from it and recomputed
// lazily, stage by stage. The labs' jobs and maps live here too (labs.hpp).
#pragma once

#include "app/state/derived.hpp"
#include "app/state/labs.hpp"
#include "app/state/model_opening.hpp"
#include "app/state/model_test_job.hpp"
#include "app/state/what_if.hpp"
#include "core/attention/colormap.hpp"
#include "core/attention/compare.hpp"
#include "core/attention/head_order.hpp"
#include "core/attention/head_profile.hpp"
#include "core/attention/head_stats.hpp"
#include "core/attention/permutation.hpp"
#include "core/attention/query_key_map.hpp"
#include "core/attention/rollout.hpp"
#include "core/io/imported_attention.hpp"
#include "core/io/lesson.hpp"
#include "core/labs/cost.hpp"
#include "core/models/decoder/generate.hpp"
#include "core/models/loaded_model.hpp"
#include "core/scenario/model.hpp"
#include "core/scenario/scenario.hpp"
#include "core/scenario/shift.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace attnviz::app {

// How far back a head's cached tensors are stale (each stage implies the ones after it).
enum class Stage : std::uint8_t { Fresh = 0, Outputs, Weights, Scores, Projections };

// Counts of work done, so tests can prove what a change did not recompute.
struct WorkCounters {
    long long modelBuilds = 0;
    long long projections = 0;  // per head
    long long scores = 0;       // per head: Q Kᵀ
    long long softmaxes = 0;    // per head
    long long outputs = 0;      // per head: A V
    long long linearMaps = 0;   // the linear lab's map and recurrent check (LinearMaps)
    long long fastWeights = 0;  // its fast-weight matrix
    long long hopfieldSteps = 0;
    long long referencePasses = 0;     // the permutation reference's whole forward pass (swapped order)
    long long referenceSoftmaxes = 0;  // its softmax and A·V again, from its kept scores
    long long rollouts = 0;            // attention rollouts made (refreshRollout)
    long long compares = 0;            // comparisons with another input made (refreshCompare)
    long long queryKeyMaps = 0;        // query–key maps made (refreshQueryKeyMap)
};

enum class Theme : std::uint8_t { Dark, Light, HighContrast };

// The model view's tiles: block means or maxima, in head order or sorted by a statistic (which
// then tints them too).
struct ModelViewOptions {
    core::BlockPooling pooling = core::BlockPooling::Mean;
    core::TileOrder order = core::TileOrder::Natural;
    core::HeadScore score = core::HeadScore::Previous;  // what tiles are sorted and tinted by
    bool tint = false;                                  // a frame whose strength is the head's score
    bool operator==(const ModelViewOptions&) const = default;
};

// What colours the logit lens's cells: the top token's probability, or a target token's
// probability or rank there (core::decoder::LogitLens); the target is the token the last layer
// ranks first at that position (what the model finally predicts) or the next input token (what
// the text says comes next).
enum class LensColour : std::uint8_t { Top, TargetProbability, TargetRank };
enum class LensTarget : std::uint8_t { Final, NextInput };

// Which block of a sentence pair's maps the views show, BertViz's filter: every query and key, or
// the queries of one sentence reading the keys of one (A → B: A's queries, B's keys). A sentence
// holds its own [CLS] / [SEP] tokens: A is [CLS] A [SEP], B is B [SEP].
enum class PairFilter : std::uint8_t { All, AtoA, AtoB, BtoA, BtoB };

// What the user looks at; changes here never recompute anything.
// Cells of the heatmap's map made at a finer pooling than the whole map's: a zoomed view of a map
// read from a model's pass (rows 0: none).
struct ZoomRegion {
    Eigen::Index firstRow = 0, rows = 0, firstCol = 0, cols = 0;
    int factor = 1;  // cells per texel side
    bool operator==(const ZoomRegion&) const = default;
};

struct ViewState {
    int selectedHead = 0;  // -1 = mean over heads
    int selectedQuery = 0;
    int stage = 0;  // shape-passport step (0 = X … last = A V)
    core::ColormapKind colormap = core::ColormapKind::Viridis;
    Theme theme = Theme::Dark;
    float uiScale = 1.0f;
    bool presenter = false;
    bool smallMultiples = false;
    core::ColourScale colourScale = core::ColourScale::Auto;  // how weights become colours in every map of them
    int previewHead = -2;                                     // head under the mouse in the head grid (-2 = none)
    int previewLayer = -1;  // with previewHead: a model's other layer under the mouse in the model view (-1 = the shown layer)
    ModelViewOptions modelView;
    float sinkEpsilon = 0.3f;  // the head statistics' sink share: heads whose first-token mass exceeds this
    int firstTokens = 4;       // k of the head statistics' mass on the first k tokens (--first-tokens)
    // Direct logit attribution's position (-1: the last) and target: one token's text, "#ID", or two
    // joined by "-" for their difference (core::decoder::parseTarget); "": the token ranked first there.
    int attributionQuery = -1;
    std::string attributionTarget;
    LensColour lensColour = LensColour::Top;
    LensTarget lensTarget = LensTarget::Final;
    bool generateSampled = false;    // the window's Generate samples at the next-token temperature (else greedy)
    int generateTopK = 0;            // … among this many most likely tokens (0: every token)
    std::uint64_t generateSeed = 0;  // … with the draws of this seed
    int heatmapPooling = 0;          // cells per texel side the heatmap draws the shown head with (0: not drawn;
                                     // the softmax pools the shown head's texels for it in the same pass)
    int pendingSwap = -1;            // first chip clicked in the token-swap panel (-1 = none)
    ZoomRegion zoomRegion;           // a map read from the pass: the zoomed region made finer (shown_map.hpp)
    float zoom = 1.0f;               // heatmap zoom (1 = whole matrix)
    float panX = 0.5f, panY = 0.5f;  // heatmap view centre, as fractions of keys / queries
    Lab lab = Lab::None;
    int fastWeightSteps = -1;      // tokens written into the fast-weight matrix shown (-1 = all)
    float nextTemperature = 1.0f;  // a model's next-token distribution: softmax(logits / this)
    core::MemoryWall wall;         // the memory-wall calculator's B, h, L and bytes per value
    core::KvCacheConfig kvCache;   // the KV-cache calculator's L, h, kv, d, bytes per value and T
    int shift = 7;                 // the positional panel's shift of the whole sentence (relative positions)
    int flashStep = -1;            // the flash lab's step shown (0 … steps − 1; -1 = the walk done)
    core::FlashTiles flashTiles;   // its tile sizes
    bool skipFirstKey = false;     // the head statistics and the mean views read each row over keys j >= 1, renormalised
                                   // (core::HeadStatsOptions; --skip-first-key)
    int selectedKey = 0;           // the neuron view's key (a heatmap cell sets it with the query)
    std::vector<int> viewHeads;    // the head view's heads switched on, ascending; empty: the selected head (every head for the mean)
    std::vector<int> viewTokens;   // query tokens picked in the head view, ascending (their attention summed); empty: none
    bool rollout = false;          // the heatmap and bars show attention rollout up to the selected layer, not a head
    core::RolloutHeads rolloutHeads = core::RolloutHeads::Mean;  // how rollout fuses a layer's heads
    std::string compareText;                                     // another input the compare view runs beside this one ("" = none)
    int hoverToken = -1;    // a token under the mouse in the query–key map (-1 = none): the heatmap outlines its row or column
    bool hoverKey = false;  // with hoverToken: a key (a column), else a query (a row)
    PairFilter pairFilter = PairFilter::All;  // a sentence pair's block the views show
};

// The shift check of the positional panel: the scores at positions 0 … and at view.shift …,
// for the model and scaling it was made with.
struct ShiftCheck {
    long long build = -1;  // work.modelBuilds it was made for
    int shift = -1;
    bool scaled = true;
    std::optional<core::ShiftReport> report;  // empty: not applicable, `why`
    std::string why;
};

// A quick check answered: what was typed, and the live number it was compared with.
struct CheckResult {
    double answer = 0, live = 0;
    bool correct = false;
};

// The lesson being taught, if any: its steps and where we are.
struct LessonState {
    core::Lesson lesson;
    int step = 0;
    std::optional<CheckResult> result;  // of the current step's check, once answered
};

// The visible head's weights pooled for the heatmap, made in the same pass as its softmax
// (core::softmaxPooled) when the heatmap's pooling is known: the frame after a change then reads
// the T x T weights once. Current while `version` is still headVersions[head].
struct PooledWeights {
    int head = -1;
    std::uint64_t version = 0;
    int factor = 0;
    std::vector<float> texels;  // ⌈T_q/factor⌉ × ⌈T_k/factor⌉, row-major, as core::poolTexels makes them
    // Of the shown head's whole map: the quantile Auto's bar tops at (core::referenceQuantile),
    // made once per version of its weights whatever the scale (recomputeStep), so that the bar
    // stays where it is whatever the heatmap's pooling. quantileHead −1: none yet.
    int quantileHead = -1;
    std::uint64_t quantileVersion = 0;
    float referenceQuantile = 0.0f;
};

// What the views of many heads read, made once per pass (summarizeHeads, head_summary.hpp), never
// per frame: every head's statistics and its map pooled to a thumbnail. Current while `key` is
// the pass's (headSummaryKey).
struct PassKey {
    const void* run = nullptr;  // a model's pass (LoadedModel::run), an import, or null for a scenario's forward pass
    std::uint64_t data = 0;     // the scenario's dataVersion (0 for a model's pass)
    bool skipFirstKey = false;  // the statistics' rule (ViewState::skipFirstKey)
    int firstTokens = 0;        // and their k (ViewState::firstTokens; 0 where unused)
    bool operator==(const PassKey&) const = default;
};
struct HeadSummary : DerivedOf<PassKey> {
    using Key = PassKey;
    int layers = 0, heads = 0, firstLayer = 0;
    Eigen::Index queries = 0, keys = 0;
    std::vector<core::HeadStats> stats;       // [layers × heads], layer-major, under the key's rule
    std::vector<core::HeadStats> everyKey;    // the same over every key when the rule leaves the first out (else empty)
    int factor = 1;                           // cells per thumbnail texel side
    Eigen::Index side = 0, sideKeys = 0;      // a thumbnail's texels: ⌈queries/factor⌉ × ⌈keys/factor⌉
    std::vector<float> means, maxima;         // [layers × heads] thumbnails, each side × sideKeys (core::poolBlocks)
    float largestMean = 0, largestMax = 0;    // over every readable texel of every thumbnail
    core::ProfileBins bins;                   // the profiles' distance and position bins (k = the key's firstTokens)
    std::vector<core::HeadProfile> profiles;  // [layers × heads]: by distance, the first k tokens across positions

    // What the sink share reads: the statistics over every key (the first token is what it measures).
    const std::vector<core::HeadStats>& sinkStats() const { return everyKey.empty() ? stats : everyKey; }
    const float* thumbnail(int index, core::BlockPooling pooling) const {
        const auto size = static_cast<std::size_t>(side * sideKeys);
        return (pooling == core::BlockPooling::Mean ? means : maxima).data() + static_cast<std::size_t>(index) * size;
    }
};

// Attention rollout of the pass up to the selected layer (core/attention/rollout.hpp), made by
// refreshRollout (rollout_view.hpp) once per pass, layer and rule, never per frame. Current while
// `key` is rolloutKey(state).
struct RolloutKey {
    PassKey pass;
    int layer = 0;  // the last layer multiplied in, counted in the pass's maps
    core::RolloutOptions options;
    bool operator==(const RolloutKey&) const = default;
};
struct RolloutView : DerivedOf<RolloutKey> {
    using Key = RolloutKey;
    core::Mat matrix;  // R [T, T]; empty when it cannot be made (`why`)
};

// The state's pass beside another input's (ViewState::compareText): the same model or scenario
// over the other sentence, its tokens lined up with the state's, and how far each head's map moved
// (core/attention/compare.hpp). Made by refreshCompare (compare_view.hpp) once per pass and text.
struct CompareKey {
    PassKey pass;      // the state's pass (skipFirstKey unused)
    std::string text;  // the other input
    bool operator==(const CompareKey&) const = default;
};
struct CompareView : DerivedOf<CompareKey> {
    using Key = CompareKey;
    core::Scenario scenario;   // the other input's scenario
    core::LoadedModel loaded;  // a model's pass over the other input (sharing the state's checkpoint)
    core::Model model;         // a scenario's other input: its model, settings and forward pass
    core::Settings settings;
    core::Forward forward;
    std::vector<std::string> labels;  // the other input's key tokens as drawn
    core::TokenAlignment alignment;   // the state's positions lined up with the other's
    std::vector<double> moved;        // [layers × heads] layer-major: core::mapMoved of each head
    bool ready() const { return why.empty() && !moved.empty(); }
};

// The selected head's query–key map (core/attention/query_key_map.hpp), made by refreshQueryKeyMap
// (query_key_view.hpp) once per pass, layer and head, never per frame. Current while `key` is
// queryKeyKey(state).
struct QueryKeyKey {
    PassKey pass;
    int layer = 0, head = 0;
    bool operator==(const QueryKeyKey&) const = default;
};
struct QueryKeyView : DerivedOf<QueryKeyKey> {
    using Key = QueryKeyKey;
    core::QueryKeyMap map;  // no points when it cannot be made (`why`)
};

// Movable, not copyable (it owns the labs' worker threads).
struct AppState {
    core::Scenario scenario;  // what to compute (the current swaps included)
    std::string presetId;     // the preset it came from, if any ("" otherwise)
    std::string sourcePath;   // the file it came from, if any

    // A scenario naming a model: the checkpoint and its own pass over the sentence (every layer);
    // `model` is then the selected layer's attention. Empty otherwise.
    core::LoadedModel loaded;
    // A scenario naming attention computed elsewhere (scenario.attention): the mapped file, the
    // shown layer's maps checked and the rest being checked in the background (checkStatus); `model` and `forward` are then the shown layer's maps with no model behind them
    // (no X, no weights, nothing to recompute). Null otherwise.
    std::shared_ptr<const core::ImportedAttention> imported;
    std::vector<float> nextProbs;                     // loaded.next's probabilities at view.nextTemperature (deriveNextTokens)
    core::Model model;                                // current token order
    std::vector<std::string> queryLabels, keyLabels;  // the tokens as drawn (␣ for a space)
    core::Model baseModel;                            // before the swaps (the permutation reference); only when swapped
    // Derived from the scenario: its masks when the model is built, its temperature, scaling and
    // causal flag when recomputing (see recompute); no action writes it.
    core::Settings settings;
    core::Forward forward;
    core::Forward baseForward;  // only when swapped; see referenceForward()
    core::EquivarianceReport equivariance;
    ShiftCheck shiftCheck;  // see checkShift(AppState&)

    std::vector<Stage> stale;                 // per head of `forward`
    std::uint64_t dataVersion = 1;            // changes whenever any computed number changes
    std::vector<std::uint64_t> headVersions;  // per head: changes when that head's weights change
    Stage baseStage = Stage::Projections;     // what baseForward must redo (the reference keeps its scores)
    bool equivarianceStale = true;            // equivariance, compared after any head changed
    bool combineStale = true;                 // forward.concat and forward.output
    PooledWeights pooled;
    HeadSummary headSummary;  // see summarizeHeads
    // The sweep that makes it on a worker thread when the maps are made on demand (head_summary.hpp);
    // null until the first one.
    std::shared_ptr<class HeadSweepJob> headSweep;
    // The induction and retrieval tests of a model's heads on worker threads; never null in a live state.
    std::unique_ptr<InductionJob> induction = std::make_unique<InductionJob>(core::inductionScores, "induction test");
    std::unique_ptr<RetrievalJob> retrieval = std::make_unique<RetrievalJob>(core::retrievalScores, "retrieval test");
    RolloutView rollout;    // see refreshRollout
    CompareView compare;    // see refreshCompare
    QueryKeyView queryKey;  // see refreshQueryKeyMap
    WhatIfState whatIf;     // a model's what-if history and the heads it moved (what_if.hpp)
    // A generation under way in the window: tokens still to write (one a frame), and how each is
    // chosen (app/state/generation.hpp).
    struct Generation {
        int left = 0;
        core::decoder::Sampling sampling;
    } generation;
    DerivedStore derived;  // what a view derives of its own, one of each type (derived.hpp)
    ViewState view;
    Labs labs;  // the labs' settings, jobs and derived maps
    // A model folder being opened on a worker thread (LoadScenario with `background`); never null
    // in a live state, carried over when the state is rebuilt.
    std::unique_ptr<ModelOpening> opening = std::make_unique<ModelOpening>();
    std::optional<LessonState> lesson;
    std::string error;  // the last rejected change, shown to the user; "" when none
    WorkCounters work;
    core::Limits limits;

    bool swapped() const { return !core::isIdentity(model.perm); }
};

// The head the heatmap, bars and stages show: the one under the mouse in the head grid, else the
// selected one (also while the model view previews another layer's head, which only the heatmap
// shows: previewLayer).
int shownHead(const AppState& state);

// A state showing `scenario`; throws core::InputError when it does not build. Nothing is
// computed yet: every head is stale (see recompute, recomputeStep). `progress` counts the opening
// of a checkpoint and may stop it (core::Cancelled). `previous`: a state made before, whose source
// is reused where it still holds: its checkpoint and pass, or its imported file (not mapped and
// checked again) when the scenario names the same one. Defined with the source (source.cpp).
AppState makeState(const core::Scenario& scenario, const core::Limits& limits = {}, core::Progress* progress = nullptr,
                   const AppState* previous = nullptr);
// The files a scenario's source reads, each with what it is for messages: a model folder's files
// (core::modelInputFiles) and an imported file with its tokens (the file named, or tokens.txt
// beside it). What no export may write over; a path not there protects nothing.
std::vector<std::pair<std::string, std::string>> sourceInputs(const core::Scenario& scenario);
// An export from the window (a figure, a CSV, a .npy), all or nothing like every file attnviz
// writes, and never over one of the state's inputs under any name: the model's files, the
// imported file and its tokens. Throws InputError(path, …). (Saving the scenario over the file
// it was opened from is not an export and stays allowed.)
void writeExport(const AppState& state, const std::string& path, std::string_view bytes);
// state.nextProbs from the loaded model's next tokens and view.nextTemperature.
void deriveNextTokens(AppState& state);

// The shift check for the current model and view.shift, made when one of them changed (two
// forward passes); not made for a model's checkpoint or a model too large to check live.
const ShiftCheck& checkShift(AppState& state);
// Whether state.shiftCheck is that of the current model, shift and scaling.
bool shiftCheckCurrent(const AppState& state);

// Every recompute below first takes the softmax settings from the scenario, and after its
// heads brings the shown lab's maps up to date (refreshLabMaps).
// Brings every stale stage up to date (all heads, then the permutation reference).
void recompute(AppState& state);
// Brings one head up to date: every stale stage, scores to A·V by blocks of rows.
void recomputeHead(AppState& state, int head);
// One frame's share of the work. When the visible head's weights are stale (-1 = every head's,
// for the mean), only they are computed: the frame after a change shows the new heatmap at once.
// Otherwise at most `moreHeads` heads are finished: the visible head's A·V first, then the other
// stale heads. The combined output and the permutation reference follow once every head is
// fresh. With `pooling` >= 1 the visible head's texels, pooled by that factor, are made with its
// weights (state.pooled). Returns true when everything is up to date.
bool recomputeStep(AppState& state, int visibleHead, int moreHeads, int pooling = 0);
// state.pooled's referenceQuantile of `head`'s map once its weights are fresh (made again only for
// a new version of them). recomputeStep calls it for the visible head.
void refreshShownQuantile(AppState& state, int head);
bool isFresh(const AppState& state);
// Whether a head's numbers are up to date (-1: every head, as the mean needs).
bool headFresh(const AppState& state, int head);
// Whether a head's weights are, though its A·V may still be stale (-1: every head's).
bool weightsFresh(const AppState& state, int head);

// The model before the swaps (the model itself when nothing is swapped).
const core::Model& referenceModel(const AppState& state);
// The forward pass before the swaps (the forward pass itself when nothing is swapped).
const core::Forward& referenceForward(const AppState& state);

// How the mean over heads reads the heads: the view's first-key switch.
inline core::MeanOptions meanOptions(const AppState& state) { return {.skipFirstKey = state.view.skipFirstKey}; }
// The weights on screen: the selected head's, or the mean over heads when selectedHead is -1
// (meanOptions).
core::Mat visibleWeights(const AppState& state);

}  // namespace attnviz::app
