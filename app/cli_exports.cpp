// What the command line does without a window: the benchmark and the exports.
#include "app/cli.hpp"
#include "app/cli_flags.hpp"

#include "app/state/compare_view.hpp"
#include "app/state/generation.hpp"
#include "app/state/head_summary.hpp"
#include "app/state/model_test_job.hpp"
#include "app/state/source.hpp"
#include "app/views/view_table.hpp"
#include "core/attention/kernels.hpp"
#include "core/base/error.hpp"
#include "core/base/files.hpp"
#include "core/base/format.hpp"
#include "core/base/json_text.hpp"
#include "core/io/export.hpp"
#include "core/io/imported_attention.hpp"
#include "core/io/stats_export.hpp"
#include "core/models/decoder/decoder.hpp"
#include "core/models/induction.hpp"
#include "core/models/loaded_model.hpp"
#include "core/models/model_bench.hpp"
#include "core/models/retrieval.hpp"
#include "core/scenario/bench.hpp"
#include "core/text/tokenizer.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <ostream>
#include <string_view>
#include <utility>

#include <sys/stat.h>

namespace attnviz::app {
namespace {

// Standard output as a sink: a full disk (/dev/full), a closed descriptor or a reader that went
// away is an error (exit 2), never data lost with exit 0.
class StreamSink : public core::ByteSink {
public:
    explicit StreamSink(std::ostream& out) : m_out(out) {}
    void write(std::string_view bytes) override {
        m_out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        check();
    }
    void finish() {
        m_out.flush();
        check();
    }

private:
    void check() const {
        if (!m_out) throw core::InputError("standard output", "write failed (closed, full, or nothing reading it)");
    }
    std::ostream& m_out;
};

// What this run reads, each with what it is for messages: the scenario, the lesson, the model
// folder's files, the imported file and its tokens. No output may be one of them.
std::vector<std::pair<std::string, std::string>> runInputs(const cli::Flags& f, const GuiRequest& request) {
    std::vector<std::pair<std::string, std::string>> inputs = sourceInputs(request.scenario);
    if (!f.scenarioPath.empty()) inputs.emplace_back(f.scenarioPath, "the scenario being read");
    if (!f.lesson.empty()) inputs.emplace_back(f.lesson, "the lesson being read");
    return inputs;
}

// Outputs are checked before anything is computed, by what they name rather than how (links,
// `..`, a file not made yet): the same file twice, two outputs on standard output, or an
// output that is one of the run's inputs are refused.
void checkOutputs(const std::vector<std::pair<const char*, std::string>>& outputs,
                  const std::vector<std::pair<std::string, std::string>>& inputs) {
    std::vector<core::FileIdentity> ids(outputs.size());
    for (std::size_t i = 0; i < outputs.size(); ++i) {
        const auto& [flag, path] = outputs[i];
        if (path.empty()) continue;  // not asked for
        if (path != "-") ids[i] = core::fileIdentity(path);
        for (const auto& [input, what] : inputs) {
            struct stat st {};
            if (path != "-" && ::stat(input.c_str(), &st) == 0 && core::sameFile(path, input))
                throw core::InputError(std::string(flag) + " " + core::clipPlace(path, 120), "is " + what + "; write elsewhere");
        }
        for (std::size_t k = 0; k < i; ++k) {
            const auto& [other, otherPath] = outputs[k];
            if (otherPath.empty()) continue;
            if (path == "-" && otherPath == "-") throw core::InputError(flag, std::string("standard output is already taken by ") + other);
            if (path != "-" && otherPath != "-" && ids[i] == ids[k]) throw core::InputError(flag, std::string("the same file as ") + other);
        }
    }
}

// --export-stats: ".json" writes JSON; ".csv" or "-" (standard output) CSV.
bool statsAsJson(const std::string& path) {
    const std::string ext = core::lowerExtension(path);
    if (path == "-" || ext == ".csv") return false;
    if (ext == ".json") return true;
    throw core::InputError("--export-stats " + path, "expected a .csv or .json file, or '-' for CSV on standard output");
}

// The sink share's ε: 0 < E < 1 (default 0.3).
double sinkEpsilon(const cli::Flags& f) {
    if (f.sinkEpsilon.empty()) return 0.3;
    cli::parseFloat("--sink-epsilon", f.sinkEpsilon);              // a number: read again as a double, 0.2 exactly
    const double e = std::strtod(f.sinkEpsilon.c_str(), nullptr);  // (as the JSON writes it back)
    if (!(e > 0.0 && e < 1.0))
        throw core::InputError("--sink-epsilon", "expected a weight between 0 and 1 (exclusive), got " + core::quoteValue(f.sinkEpsilon));
    return e;
}

// Every head's statistics as --export-stats writes them: a model's every layer × head of its
// own pass (and the induction test when asked), an import's every map, or a scenario's heads as
// one layer.
std::string statsText(const cli::Flags& f, const GuiRequest& request, const AppState& state, const char*& doing) {
    const core::HeadStatsOptions options{.skipFirstKey = f.skipFirstKey, .firstTokens = state.view.firstTokens};
    const core::AttentionMaps maps = attentionMaps(state);
    if (!maps) throw core::InputError("--export-stats", "the heads' weights are not ready");
    doing = "computing the head statistics";
    core::StatsTable table = core::statsTable(maps, options, sinkEpsilon(f), sourceName(state, request.source));
    if (f.inductionTest) {  // a model: checked before anything was computed
        doing = "running the induction test";
        const core::decoder::Checkpoint& model = *checkpointOf(state);
        const int bos = core::bosOffset(model);
        const core::InductionSettings settings = inductionUpTo({}, model);  // a short context repeats fewer
        if (settings.repeat < 2)
            throw core::InputError("--induction-test", "the model reads " + std::to_string(model.config().nPositions) +
                                                           " positions; the test needs " + std::to_string(4 + bos) +
                                                           " or more (2 random tokens, twice" + (bos ? ", after the BOS)" : ")"));
        table.inductionTest = core::inductionScores(model, settings);
        table.induction = settings;
    }
    if (f.retrievalTest) {  // a model: its flags were read before anything was computed
        doing = "running the retrieval test";
        const core::decoder::Checkpoint& model = *checkpointOf(state);
        table.retrieval = core::retrievalScores(model, cli::retrievalSettings(f, longestTestInput(model, request.limits.maxTokens)));
    }
    return statsAsJson(f.exportStats) ? core::statsJson(table) : core::statsCsv(table);
}

}  // namespace

namespace cli {

void checkExports(const Flags& f, const GuiRequest& request) {
    std::vector<std::pair<const char*, std::string>> outputs = {
        {"--export", f.exportJson}, {"--export-npy", f.exportNpy}, {"--export-csv", f.exportCsv}};
    for (const ViewInfo& view : viewTable())
        if (view.figure) outputs.emplace_back(view.figure.flag, f.figures.at(view.id));
    outputs.emplace_back("--export-stats", f.exportStats);
    checkOutputs(outputs, runInputs(f, request));
    for (const ViewInfo& view : viewTable())  // a bad extension before any work
        if (view.figure && !f.figures.at(view.id).empty()) view.figure.checkPath(f.figures.at(view.id));
    if (!f.exportStats.empty()) {  // a bad extension or ε before any work
        static_cast<void>(statsAsJson(f.exportStats));
        static_cast<void>(sinkEpsilon(f));
    }
    if (f.bench) {
        const float seconds = parseFloat("--bench-seconds", f.benchSeconds);
        if (seconds <= 0.0f || seconds > 600.0f)
            throw core::InputError("--bench-seconds", "expected 0 to 600 seconds, got " + core::quoteValue(f.benchSeconds));
    }
}

namespace {

// How the products ran: the blocking derived from this CPU's caches (core/attention/blocking.hpp).
nlohmann::json blockingJson() {
    const core::KernelBlocking b = core::kernelBlocking();
    const core::CpuCaches& c = core::kernelCaches();
    return {{"depth", b.depth},       {"columns", b.columns},   {"keys", b.keys},         {"narrow_depth", b.narrowDepth},
            {"l1_bytes", c.l1.bytes}, {"l1_ways", c.l1.ways},   {"l2_bytes", c.l2.bytes}, {"l2_ways", c.l2.ways},
            {"l3_bytes", c.l3.bytes}, {"caches_from", c.source}};
}

}  // namespace

namespace {

// The request's scenario built as the window builds it; errors name where the scenario came from,
// an import's own its file.
AppState requestedState(const GuiRequest& request, const char*& doing) {
    const core::Scenario& scenario = request.scenario;
    doing = scenario.attention ? "opening the imported attention" : scenario.model ? "opening and running the model" : "building the model";
    AppState state = [&] {
        try {
            return makeState(scenario, request.limits);
        } catch (const core::InputError& e) {
            if (scenario.attention && e.where() != "layer") throw;  // the file's own errors name it
            throw e.within(request.source);                         // --attention's, or the scenario file's field
        }
    }();
    if (request.generate > 0) {
        doing = "generating";
        if (const std::string why = generateTokens(state, request.generate, request.sampling); !why.empty())
            throw core::InputError("--generate", why.substr(why.find(": ") == std::string::npos ? 0 : why.find(": ") + 2));
    }
    return state;
}

// The state the exports read: the view as the flags set it (the window's view of the same flags,
// and what only the exports ask: the head view's heads and query, the model view's order).
AppState exportState(const Flags& f, const CLI::App& app, const GuiRequest& request, const char*& doing) {
    AppState state = requestedState(request, doing);
    ViewState& view = state.view;
    view = requestedView(request, ViewState{});
    view.selectedHead = f.head;
    view.selectedQuery = f.query;
    const bool given = app.get_option("--head")->count() > 0 && f.head >= 0;  // -1: the mean, so every head
    for (int h = 0; h < state.model.heads; ++h)
        if (!given || h == f.head) view.viewHeads.push_back(h);
    if (app.get_option("--query")->count() > 0) view.viewTokens = {f.query};
    view.attributionQuery = app.get_option("--query")->count() > 0 ? f.query : -1;  // the last position unless asked
    return state;
}

}  // namespace

void runBench(const Flags& f, const GuiRequest& request, std::ostream& out, const char*& doing) {
    const double seconds = parseFloat("--bench-seconds", f.benchSeconds);     // in range: checkExports
    const AppState state = requestedState(request, doing);                    // --bench refuses --attention (checkFlags)
    if (const core::decoder::Checkpoint* checkpoint = checkpointOf(state)) {  // the whole pass, every layer and head, and an appended token
        doing = "timing the model's forward pass";
        const std::vector<int> ids = passIds(state);
        const core::decoder::PassMaps maps = core::passMapsWithin(checkpoint->config(), static_cast<long long>(ids.size()), request.limits);
        const core::ModelBenchResult r = core::benchmarkModel(*checkpoint, ids, seconds, maps);
        const core::decoder::Config& c = checkpoint->config();
        const nlohmann::json j = {{"model", checkpoint->name()},
                                  {"family", c.family},
                                  {"T", r.tokens},
                                  {"layers", r.layers},
                                  {"heads", r.heads},
                                  {"kv_heads", c.nKvHead},
                                  {"d_model", r.dModel},
                                  {"forward_ms", r.forwardMs},
                                  {"append_ms", r.appendMs},
                                  {"gflops", r.gflops},
                                  {"runs", r.runs},
                                  {"kernels", core::kernelIsaName(core::kernelIsa())},
                                  {"blocking", blockingJson()},
                                  {"maps", core::decoder::passMapsName(r.maps)},
                                  {"attention", core::decoder::attentionStrategyName(c, r.maps, r.tokens)},
                                  {"sweep_ms", r.sweepMs},
                                  {"pool_ms", r.poolMs},
                                  {"zoom_ms", r.zoomMs},
                                  {"kept_mib", static_cast<double>(r.keptBytes) / (1024.0 * 1024.0)},
                                  {"file_mib", static_cast<double>(checkpoint->fileBytes()) / (1024.0 * 1024.0)}};
        out << core::dumpJson(j) << "\n";
        return;
    }

    doing = "timing the forward pass";
    const core::BenchResult r = core::benchmark(state.model, state.settings, seconds);
    nlohmann::json j = {{"T", r.tq},
                        {"T_k", r.tk},
                        {"heads", r.heads},
                        {"d_model", r.dModel},
                        {"forward_ms", r.forwardMs},
                        {"softmax_ms", r.softmaxMs},
                        {"visible_softmax_ms", r.visibleSoftmaxMs},
                        {"gflops", r.gflops},
                        {"sgemm_gflops", r.sgemmGflops},
                        {"runs", r.runs},
                        {"kernels", core::kernelIsaName(core::kernelIsa())},
                        {"blocking", blockingJson()},
                        {"kept_mib", static_cast<double>(r.keptBytes) / (1024.0 * 1024.0)}};
    out << core::dumpJson(j) << "\n";
}

namespace {

std::string queryRange(int query, long long queries) {
    return "expected 0 to " + std::to_string(queries - 1) + " (" + std::to_string(queries) + " queries), got " + std::to_string(query);
}

// What the flags ask of the figures that the window never lacks: a head and a query in range, one
// head for the query–key map, another sentence that can be run, a cell size in range.
void checkFigureFlags(const Flags& f, const CLI::App& app, const GuiRequest& request, const AppState& state) {
    const auto wanted = [&](std::string_view id) { return !f.figures.at(id).empty(); };
    const bool headGiven = app.get_option("--head")->count() > 0, queryGiven = app.get_option("--query")->count() > 0;
    // A --head the model lacks is refused whatever is exported, as the window refuses it.
    if (request.head || headGiven || !f.exportCsv.empty() || wanted(panel_id::kHeatmap) || wanted(panel_id::kBars))
        if (const std::string why = headOutOfRange(f.head, state.model.heads); !why.empty()) throw core::InputError("--head", why);
    if ((queryGiven || wanted(panel_id::kBars)) && (f.query < 0 || f.query >= state.model.tq()))
        throw core::InputError("--query", queryRange(f.query, state.model.tq()));
    // A spreadsheet reads at most 16,384 columns, and a map past that is gigabytes of text.
    if (constexpr Eigen::Index kCsvMostKeys = 16384; !f.exportCsv.empty() && state.model.tk() > kCsvMostKeys) {
        const auto cells = static_cast<std::uint64_t>(state.model.tq()) * static_cast<std::uint64_t>(state.model.tk());
        throw core::InputError("--export-csv", "a map of " + std::to_string(state.model.tk()) +
                                                   " keys has more columns than a spreadsheet reads (16384) and would be about " +
                                                   core::formatBytes(cells * 12) +
                                                   " of text; --export-npy DIR --layer L --head H writes one head's map in binary");
    }
    if (wanted(panel_id::kQkMap) && (!headGiven || f.head < 0))
        throw core::InputError("--export-qk-map", "maps one head's queries and keys; give --head N (the mean over heads has none)");
    if (wanted(panel_id::kCompare) || state.view.modelView.score == core::HeadScore::Moved)
        static_cast<void>(compareScenario(request.scenario, f.compare, "--compare"));
    if (app.get_option("--cell-size")->count() && (f.cellSize < 1 || f.cellSize > 256))
        throw core::InputError("--cell-size", "expected 1 to 256 pixels, got " + std::to_string(f.cellSize));
}

// What --export-npy writes of a checkpoint's pass or of attention computed elsewhere: one head's
// map when --head names one (of the shown layer), else every map. Every map made here (a pass's,
// or a file's of queries and keys), there or in --export's JSON, is refused past --max-memory,
// with the flags that select one head.
std::optional<core::OneMap> mapsToWrite(const Flags& f, const CLI::App& app, const GuiRequest& request, const AppState& state) {
    const core::decoder::Checkpoint* checkpoint = checkpointOf(state);
    const core::ImportedAttention* file = mapsFile(state);
    if ((!checkpoint && !file) || (f.exportNpy.empty() && f.exportJson.empty())) return std::nullopt;
    std::optional<core::OneMap> one;
    if (!f.exportNpy.empty() && app.get_option("--head")->count() > 0 && f.head >= 0) one = core::OneMap{shownMapLayer(state), f.head};
    const long long layers = checkpoint ? checkpoint->config().nLayer : file->layers();
    const long long heads = checkpoint ? checkpoint->config().nHead : file->heads();
    const auto t = checkpoint ? static_cast<long long>(passIds(state).size()) : static_cast<long long>(file->keys());
    const std::uint64_t every =
        4ULL * static_cast<std::uint64_t>(layers * heads) * static_cast<std::uint64_t>(t) * static_cast<std::uint64_t>(t);
    // a file of maps is written back as it lies, a map at a time: it is never refused
    const bool made = checkpoint || file->queriesAndKeys();
    if (made && (!f.exportJson.empty() || !one) && every > request.limits.maxBytes)
        throw core::InputError(f.exportJson.empty() ? "--export-npy" : "--export",
                               "every map of every layer is " + core::formatBytes(every) + " (" + std::to_string(layers) + " layers x " +
                                   std::to_string(heads) + " heads x " + std::to_string(t) + " x " + std::to_string(t) +
                                   " floats), over the limit of " + core::formatBytes(request.limits.maxBytes) +
                                   " (--max-memory); --export-npy DIR --layer L --head H writes one head's");
    return one;
}

void exportAll(const Flags& f, const CLI::App& app, const GuiRequest& request, AppState& state, std::ostream& out, const char*& doing) {
    checkFigureFlags(f, app, request, state);
    doing = "computing the forward pass";
    try {
        recompute(state);
    } catch (const core::InputError& e) {
        throw e.within(request.source);
    }
    const std::optional<core::OneMap> one = mapsToWrite(f, app, request, state);
    // The exports of every layer read every map: all are checked before anything is written.
    bool everyLayer = f.rollout || !f.exportNpy.empty() || !f.exportStats.empty();
    for (const ViewInfo& view : viewTable())
        if (view.figure && view.figure.everyLayer && !f.figures.at(view.id).empty()) everyLayer = true;
    if (everyLayer) {
        doing = "checking the imported maps";
        checkEveryMap(state);
    }
    // --rollout: R up to the selected layer (a model's or an import's) or the scenario's one layer,
    // for the JSON and .npy exports, leaving out the first key with --skip-first-key.
    std::optional<core::RolloutExport> rollout;
    if (f.rollout && (!f.exportJson.empty() || !f.exportNpy.empty())) {
        doing = "rolling out the attention";
        rollout.emplace();
        rollout->options = {.heads = request.rolloutHeads, .skipFirstKey = f.skipFirstKey};
        rollout->layer = shownMapLayer(state);
        try {
            rollout->matrix = core::attentionRollout(attentionMaps(state), rollout->layer, rollout->options);
        } catch (const core::InputError& e) {
            throw core::InputError("--rollout", e.what());
        }
    }
    const core::RolloutExport* rolled = rollout ? &*rollout : nullptr;
    // Every output is written to its temporary first; standard output next; then all are
    // renamed into place together. A failure anywhere leaves every old file as it was.
    doing = "writing the exports";
    core::FileBatch batch;
    for (auto& [input, what] : runInputs(f, request)) batch.protect(input, std::move(what));
    StreamSink stdoutSink(out);
    if (!f.exportJson.empty() && f.exportJson != "-") writeSourceJson(batch.open(f.exportJson), state, rolled);
    if (!f.exportNpy.empty()) exportSourceNpy(batch, f.exportNpy, state, rolled, one ? &*one : nullptr);
    // Each figure as the window's Export makes it, from the same state.
    for (const ViewInfo& view : viewTable()) {
        const std::string& path = view.figure ? f.figures.at(view.id) : std::string();
        if (path.empty()) continue;
        doing = "drawing the figures";
        const FigureRequest figure{.where = view.figure.flag, .cellSize = f.cellSize, .markQuery = app.get_option("--query")->count() > 0};
        batch.add(path, view.figure.write(state, path, figure));
    }
    const auto csv = [&] { return core::weightsCsv(state.model, visibleWeights(state)); };
    if (!f.exportCsv.empty() && f.exportCsv != "-") batch.add(f.exportCsv, csv());
    const std::string stats = f.exportStats.empty() ? std::string() : statsText(f, request, state, doing);
    if (!f.exportStats.empty() && f.exportStats != "-") batch.add(f.exportStats, stats);
    // Whatever was read of an import is trusted only if the file did not change meanwhile.
    checkSourceUnchanged(state);
    doing = "writing the exports";
    if (f.exportJson == "-") writeSourceJson(stdoutSink, state, rolled);
    if (f.exportCsv == "-") stdoutSink.write(csv());
    if (f.exportStats == "-") stdoutSink.write(stats);
    stdoutSink.finish();
    batch.commit();
}

}  // namespace

void runExports(const Flags& f, const CLI::App& app, const GuiRequest& request, std::ostream& out, const char*& doing) {
    for (const auto& [test, name] : {std::pair{f.inductionTest, "--induction-test"}, std::pair{f.retrievalTest, "--retrieval-test"}})
        if (test && !request.scenario.model)
            throw core::InputError(name,
                                   "runs a checkpoint on random token ids; a scenario has no vocabulary to draw from (give --model DIR)");
    AppState state = exportState(f, app, request, doing);
    try {
        exportAll(f, app, request, state, out, doing);
    } catch (const core::InputError&) {
        // An import that changed while it was read makes any later failure (a write from its
        // pages that the system refused, values read as zeros): that is what is reported.
        checkSourceUnchanged(state);
        throw;
    }
}

}  // namespace cli
}  // namespace attnviz::app
