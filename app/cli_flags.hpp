// Inside the command line (cli.cpp): the flags as parsed, what reads them into a request, and
// what carries out a request without a window (cli_exports.cpp).
#pragma once

#include "app/state/launch.hpp"
#include "core/models/retrieval.hpp"

#include <CLI/CLI.hpp>

#include <iosfwd>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace attnviz::app::cli {

struct Flags {
    std::string scenarioPath, preset;  // scenarioPath: --scenario FILE or the positional FILE
    std::string sentence, pair, tokenizer, embedding, positional, title;
    std::string tokens;
    std::vector<std::string> swaps;
    int dModel = 0, heads = 0, dk = 0, dv = 0, kvHeads = 0, window = 0;
    // Numbers that are floats are read as text by parseFloat, so that an error quotes what was given
    // (CLI11 reads 3.5e38 into a float as inf).
    std::string ropeBase;
    std::string seed;
    std::string temperature;
    bool causal = false, unscaled = false;
    std::string exportJson, exportNpy, exportCsv, colormap = "viridis", colourScale = "auto", pairFilter = "all";
    std::map<std::string_view, std::string> figures;  // by view id: its figure's --export-… OUT ("" = not asked for); every view with one
    int cellSize = 0;
    int head = 0;
    std::string maxTokens, maxMemoryMiB, keepMapsMiB;  // read whole by parseWhole: CLI11 saturates a long long
    bool listPresets = false, version = false, fresh = false, bench = false;
    int length = 0;
    std::string benchSeconds = "2";
    std::string screenshot, panel, size, theme;
    std::string scale, uiScale;
    bool presenter = false;
    std::string lab, lesson;
    int query = 0, stage = 0, lessonStep = 0, trainSteps = 0;
    bool smallMultiples = false, measure = false;
    std::string zoom, zoomAt;                                             // --zoom Z, --zoom-at Q,K: the window's heatmap zoomed in
    std::string modelViewSort, modelViewRank, modelViewPooling = "mean";  // --export-model-view's order
    std::string model;                                                    // --model DIR
    std::string attention, tokensFile;                                    // --attention FILE, --tokens-file FILE
    std::string layer;                                                    // --layer N, read whole by parseWhole
    std::string exportStats, sinkEpsilon;                                 // --export-stats OUT.csv|OUT.json, --sink-epsilon E
    bool inductionTest = false, skipFirstKey = false;                     // --induction-test, --skip-first-key
    std::string firstTokens;                                              // --first-tokens K
    std::string target;                                                   // --target TOKEN|A-B
    std::string lensColour, lensTarget;                                   // --lens-colour, --lens-target
    std::string generate, sampleSeed, topK, sampleTemperature;            // --generate N and its sampling ("": not given)
    bool retrievalTest = false;                                           // --retrieval-test
    std::string retrievalLengths, retrievalDepths, retrievalSegment;      // its settings ("": the defaults)
    bool rollout = false;                         // --rollout: attention rollout in the window and the JSON / .npy exports
    std::string rolloutHeads = "mean";            // --rollout-heads mean|max
    std::string compare;                          // --compare TEXT: another sentence beside this one
    std::vector<std::string> ablate, ablateMean;  // --ablate L.H, --ablate-mean L.H (repeatable): a model's what-if
    std::vector<std::string> hideTokens;          // --hide-token I (repeatable)
};

// Declares every flag on `app`, reading into `f`.
void defineFlags(CLI::App& app, Flags& f);
// Refuses an empty value and flags that cannot go together, before anything is read.
void checkFlags(const Flags& f, const CLI::App& app);
// The scenario (file or preset, with the flags over it) and the view the flags ask for.
GuiRequest requestFrom(const Flags& f, const CLI::App& app);
// A float flag's value, read whole as CLI11 read it (strtold: "2.5e-1", "0x1p-2", "inf"); an error
// quotes the text given, clipped: "got '3.5e38', which is beyond the float range", a value that
// would round to 0, or not a number at all. The caller checks the range its flag needs.
float parseFloat(const char* flag, const std::string& text);
// The retrieval test's settings from --retrieval-lengths, --retrieval-depths and
// --retrieval-segment; without --retrieval-lengths, the default lengths up to `longest` tokens
// (the model's positions and --max-tokens), or `longest` alone when none is that short. Throws
// InputError naming the flag for an item that is not a number, or a length over `longest`.
core::RetrievalSettings retrievalSettings(const Flags& f, int longest);
// The model view's order, statistic and pooling from --model-view-sort, --model-view-rank and
// --model-view-pooling (a sorted view is tinted by its statistic); InputError for an unknown one.
ModelViewOptions modelViewOptions(const Flags& f);
// Any of --export, --export-npy, --export-csv, --export-stats and the views' figure exports.
bool exporting(const Flags& f);

// Before any work: outputs that clash (the same file twice under any names, two on standard
// output, an input of the run: the scenario, the lesson, the model's files, the imported file and
// its tokens), a figure's extension, the benchmark's seconds.
void checkExports(const Flags& f, const GuiRequest& request);
// --bench: times the request's model and prints one JSON line. `doing` names the work under way
// (for an out-of-memory message).
void runBench(const Flags& f, const GuiRequest& request, std::ostream& out, const char*& doing);
// Every export asked for, all or nothing: temporaries first, then standard output, then renamed
// into place together.
void runExports(const Flags& f, const CLI::App& app, const GuiRequest& request, std::ostream& out, const char*& doing);

}  // namespace attnviz::app::cli
