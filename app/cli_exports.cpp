// What the command line does without a window: the benchmark and the exports.
#include "app/cli.hpp"
#include "app/cli_flags.hpp"

#include "app/render/bars_image.hpp"
#include "app/render/compare_image.hpp"
#include "app/render/head_view_image.hpp"
#include "app/render/heads_image.hpp"
#include "app/render/heatmap_image.hpp"
#include "app/render/model_view_image.hpp"
#include "app/render/qk_map_image.hpp"
#include "app/state/compare_view.hpp"
#include "app/state/head_summary.hpp"
#include "app/state/model_view.hpp"
#include "core/attention/kernels.hpp"
#include "core/base/error.hpp"
#include "core/base/files.hpp"
#include "core/base/format.hpp"
#include "core/base/json_text.hpp"
#include "core/io/export.hpp"
#include "core/io/imported_attention.hpp"
#include "core/io/stats_export.hpp"
#include "core/models/induction.hpp"
#include "core/models/model_bench.hpp"
#include "core/models/pass_maps.hpp"
#include "core/models/query_key_of_run.hpp"
#include "core/models/run_maps.hpp"
#include "core/scenario/bench.hpp"
#include "core/text/tokenizer.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
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

struct Built {
    core::LoadedModel loaded;  // when the scenario names a model
    core::Model model;
    core::Settings settings;
    std::shared_ptr<const core::ImportedAttention> imported;  // when it names attention computed elsewhere
    core::Forward forward;                                    // then: the shown layer's maps
};

// Every map of an import checked (what the exports of every layer read); errors name the file.
void checkEveryMap(const Built& built, const char*& doing) {
    doing = "checking the imported maps";
    built.imported->checkAll();
}

// The import's maps as the views of many heads read them, labelled as drawn.
core::AttentionMaps everyImportedMap(const Built& built) {
    std::vector<std::string> labels;
    for (const std::string& label : built.imported->labels()) labels.push_back(core::visibleToken(label));
    return core::importedMaps(built.imported, std::move(labels));
}

// The request's model and its softmax settings; errors name where the scenario came from.
Built buildFor(const GuiRequest& request, const char*& doing) {
    Built built;
    doing = "building the model";
    if (request.scenario.attention) {  // the shown layer only: the exports of every layer check the rest; errors name the file
        doing = "opening the imported attention";
        built.imported = core::ImportedAttention::open(*request.scenario.attention,
                                                       {.tokensFile = request.scenario.tokensFile.value_or("")}, request.limits);
        core::ImportedLayer layer = [&] {
            try {
                return core::importedLayer(*built.imported, request.scenario.layer, request.limits);
            } catch (const core::InputError& e) {
                if (e.where() == "layer") throw e.within(request.source);  // --attention's, or the scenario file's field
                throw;
            }
        }();
        built.model = std::move(layer.model);
        built.forward = std::move(layer.forward);
        built.settings = layer.settings;
        return built;
    }
    try {
        if (request.scenario.model) doing = "opening and running the model";
        built.loaded = core::loadModel(request.scenario, nullptr, request.limits);
        built.model = core::buildModel(request.scenario, built.loaded, true, request.limits);
        built.settings = core::buildSettings(request.scenario, built.model);
    } catch (const core::InputError& e) {
        throw e.within(request.source);
    }
    return built;
}

// --export-stats: ".json" writes JSON; ".csv" or "-" (standard output) CSV.
bool statsAsJson(const std::string& path) {
    const std::string ext = [&] {
        std::string e = std::filesystem::path(path).extension().string();
        std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        return e;
    }();
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
// own pass (and the induction test when asked), or a scenario's heads as one layer.
std::string statsText(const cli::Flags& f, const GuiRequest& request, const Built& built, const core::Forward& forward,
                      const char*& doing) {
    const core::HeadStatsOptions options{.skipFirstKey = f.skipFirstKey};
    core::AttentionMaps maps;
    std::string source;
    if (built.loaded) {
        maps = core::runMaps(*built.loaded.run, built.loaded.checkpoint->config());
        source = built.loaded.checkpoint->name();
    } else if (built.imported) {
        checkEveryMap(built, doing);
        maps = everyImportedMap(built);
        source = request.scenario.name;
    } else {
        maps.layers = 1;
        maps.heads = static_cast<int>(forward.heads.size());
        maps.queries = built.model.tq();
        maps.keys = built.model.tk();
        maps.ids = core::idsOfLabels(built.model.keyTokens);
        maps.settings = {built.settings};
        if (built.model.kvHeads > 0)
            for (int h = 0; h < maps.heads; ++h) maps.kvHead.push_back(built.model.kvHeadOf(h));
        maps.weights = [&forward](int, int head) { return core::MatRef(forward.heads[static_cast<std::size_t>(head)].weights); };
        source = request.scenario.name.empty() ? request.source : request.scenario.name;
    }
    doing = "computing the head statistics";
    core::StatsTable table = core::statsTable(maps, options, sinkEpsilon(f), source);
    if (f.inductionTest) {  // a model: checked before anything was computed
        doing = "running the induction test";
        const core::decoder::Checkpoint& model = *built.loaded.checkpoint;
        const int bos = model.tokenizer().bosId() ? 1 : 0;
        core::InductionSettings settings;
        settings.repeat = std::min(settings.repeat, (model.config().nPositions - bos) / 2);  // a short context repeats fewer
        if (settings.repeat < 2)
            throw core::InputError("--induction-test", "the model reads " + std::to_string(model.config().nPositions) +
                                                           " positions; the test needs " + std::to_string(4 + bos) +
                                                           " or more (2 random tokens, twice" + (bos ? ", after the BOS)" : ")"));
        table.inductionTest = core::inductionScores(model, settings);
        table.induction = settings;
    }
    return statsAsJson(f.exportStats) ? core::statsJson(table) : core::statsCsv(table);
}

}  // namespace

namespace {

std::string figureTitle(const core::Scenario& scenario, const core::Settings& settings, const std::string& heads) {
    std::string title = scenario.name.empty() ? std::string() : scenario.name + " · ";
    title += heads;
    if (scenario.attention) return title + (settings.causal ? " · imported maps · causal (detected)" : " · imported maps");
    title += " · τ = " + core::formatFixed(settings.temperature, 2);
    if (!settings.scaled) title += " · unscaled";
    if (settings.causal) title += " · causal";
    else if (scenario.model) title += " · bidirectional (the model reads causally)";
    return title;
}

}  // namespace

std::string heatmapTitle(const core::Scenario& scenario, const core::Model& model, const core::Settings& settings, int head) {
    return figureTitle(scenario, settings, core::headName(scenario, head, model.heads));
}

std::string headsTitle(const core::Scenario& scenario, const core::Model& model, const core::Settings& settings) {
    const std::string layer = scenario.model || scenario.attention ? "layer " + std::to_string(scenario.layer + 1) + " · " : "";
    return figureTitle(scenario, settings, layer + "all " + std::to_string(model.heads) + (model.heads == 1 ? " head" : " heads"));
}

namespace {

// The head view of the layer shown: --head one head (default every head of the layer), --query
// one query (default every query), the lines under core::HeadLineRule.
render::HeadViewFigure headViewFigure(const cli::Flags& f, const CLI::App& app, const GuiRequest& request, const core::Model& model,
                                      const core::Settings& settings, const core::Forward& forward) {
    render::HeadViewFigure figure;
    const bool oneHead = app.get_option("--head")->count() > 0 && f.head >= 0;  // -1: the mean, so every head
    if (oneHead) figure.heads = {f.head};
    else
        for (int h = 0; h < model.heads; ++h) figure.heads.push_back(h);
    std::vector<int> queries;
    if (app.get_option("--query")->count() > 0) {
        if (f.query < 0 || f.query >= model.tq())
            throw core::InputError("--query", "expected 0 to " + std::to_string(model.tq() - 1) + " (" + std::to_string(model.tq()) +
                                                  " queries), got " + std::to_string(f.query));
        queries = {f.query};
        figure.query = f.query;
    }
    if (model.tq() != model.tk())
        throw core::InputError("--export-head-view", "needs queries that are the keys (self-attention); this scenario has " +
                                                         std::to_string(model.tq()) + " queries and " + std::to_string(model.tk()) +
                                                         " keys");
    if (model.tq() > render::kMaxHeadViewTokens)
        throw core::InputError("--export-head-view", std::to_string(model.tq()) + " tokens are too many for the figure (at most " +
                                                         std::to_string(render::kMaxHeadViewTokens) + ")");
    core::AttentionMaps maps;
    maps.layers = 1;
    maps.heads = model.heads;
    maps.queries = model.tq();
    maps.keys = model.tk();
    maps.settings = {settings};
    maps.weights = [&forward](int, int h) { return core::MatRef(forward.heads[static_cast<std::size_t>(h)].weights); };
    const core::HeadLineRule rule;
    const core::HeadLines lines = core::headLines(maps, 0, figure.heads, queries, rule);
    if (lines.lines.size() > static_cast<std::size_t>(render::kMaxHeadViewLines))
        throw core::InputError("--export-head-view", std::to_string(lines.lines.size()) + " lines are too many for one figure (at most " +
                                                         std::to_string(render::kMaxHeadViewLines) + "): pick a --head or a --query");
    figure.tokens = static_cast<int>(model.tq());
    figure.labels = model.queryTokens;
    figure.lines = lines.lines;
    figure.readable = lines.readable;
    figure.rule = rule.describe(model.tk());
    const std::string layer =
        request.scenario.model || request.scenario.attention ? "layer " + std::to_string(request.scenario.layer + 1) + " · " : "";
    const std::string heads = oneHead ? core::headName(request.scenario, f.head, model.heads)
                                      : layer + "all " + std::to_string(model.heads) + (model.heads == 1 ? " head" : " heads");
    figure.title = "Head view · " + figureTitle(request.scenario, settings, heads);
    return figure;
}

// The query-key map of --head (one head; a model's from its pass's kept q and k), --query joined
// to its strongest keys.
render::QkMapFigure qkMapFigure(const cli::Flags& f, const CLI::App& app, const GuiRequest& request, const Built& built,
                                const core::Forward& forward) {
    const core::LoadedModel& loaded = built.loaded;
    const core::Model& model = built.model;
    const core::Settings& settings = built.settings;
    if (built.imported)
        throw core::InputError("--export-qk-map", "imported attention has no model behind it: the map needs the head's queries and keys");
    if (app.get_option("--head")->count() == 0 || f.head < 0)
        throw core::InputError("--export-qk-map", "maps one head's queries and keys; give --head N (the mean over heads has none)");
    render::QkMapFigure figure;
    if (loaded) figure.map = core::runQueryKeyMap(*loaded.run, loaded.checkpoint->config(), request.scenario.layer, f.head);
    else
        figure.map =
            core::queryKeyMap(forward.heads[static_cast<std::size_t>(f.head)].q, forward.heads[static_cast<std::size_t>(f.head)].k);
    if (figure.map.points.rows() > render::kMaxQkMapPoints)
        throw core::InputError("--export-qk-map", std::to_string(figure.map.points.rows()) +
                                                      " points are too many for one figure (at most " +
                                                      std::to_string(render::kMaxQkMapPoints) + ")");
    figure.queryLabels = model.queryTokens;
    figure.keyLabels = model.keyTokens;
    if (app.get_option("--query")->count() > 0) {
        if (f.query < 0 || f.query >= figure.map.queries)
            throw core::InputError("--query", "expected 0 to " + std::to_string(figure.map.queries - 1) + " (" +
                                                  std::to_string(figure.map.queries) + " queries), got " + std::to_string(f.query));
        figure.query = f.query;
        const core::RowVec row = loaded ? core::RowVec(loaded.run->weights(request.scenario.layer, f.head).row(f.query))
                                        : core::RowVec(forward.heads[static_cast<std::size_t>(f.head)].weights.row(f.query));
        figure.strongest = core::strongestKeys(row, 8);
        for (const int j : figure.strongest) figure.strongestWeights.push_back(row(j));
    }
    figure.title = "Query–key map · " + figureTitle(request.scenario, settings, core::headName(request.scenario, f.head, model.heads));
    return figure;
}

}  // namespace

namespace cli {
namespace {

// The model view's order and pooling from --model-view-sort, --model-view-rank and
// --model-view-pooling (a sorted view is tinted by its statistic).
ModelViewOptions modelViewOptions(const Flags& f) {
    ModelViewOptions options;
    if (f.modelViewPooling == "max") options.pooling = core::BlockPooling::Max;
    else if (f.modelViewPooling != "mean")
        throw core::InputError("--model-view-pooling", "expected mean or max, got " + core::quoteValue(f.modelViewPooling));
    const std::string& by = f.modelViewSort.empty() ? f.modelViewRank : f.modelViewSort;
    const char* flag = f.modelViewSort.empty() ? "--model-view-rank" : "--model-view-sort";
    if (by.empty()) return options;
    options.score = core::parseHeadScore(by, flag);
    if (options.score == core::HeadScore::InductionTest)
        throw core::InputError(flag, "the induction test runs its own sequences (the window's head statistics); sort by one of the others");
    options.order = f.modelViewSort.empty() ? core::TileOrder::Ranked : core::TileOrder::WithinLayer;
    options.tint = true;
    return options;
}

// Every layer × head of the request's pass, summarized as the window's model view shows it.
render::ModelViewFigure modelViewFigure(const Flags& f, const GuiRequest& request, const core::LoadedModel& loaded,
                                        std::shared_ptr<const core::ImportedAttention> imported) {
    AppState state = makeState(request.scenario, request.limits, loaded ? &loaded : nullptr, nullptr, std::move(imported));
    recompute(state);
    if (!summarizeHeads(state)) throw core::InputError("--export-model-view", "the heads' weights are not ready");
    const ModelViewOptions options = modelViewOptions(f);
    if (options.score == core::HeadScore::Moved) {
        (void)compareScenario(request.scenario, f.compare, "--compare");
        state.view.compareText = f.compare;
        refreshCompare(state);
        if (!state.compare.why.empty()) throw core::InputError("", state.compare.why);
    }
    const TileLayout layout = modelViewLayout(state, options);
    const HeadSummary& s = state.headSummary;
    render::ModelViewFigure figure;
    figure.layers = s.layers;
    figure.heads = s.heads;
    figure.firstLayer = s.firstLayer;
    figure.side = static_cast<int>(s.side);
    figure.sideKeys = static_cast<int>(s.sideKeys);
    figure.thumbnails = options.pooling == core::BlockPooling::Mean ? s.means : s.maxima;
    figure.order = layout.scores ? options.order : core::TileOrder::Natural;
    figure.slots = layout.order;
    if (layout.scores && options.tint) figure.tint = *layout.scores;
    figure.rule = layout.rule;
    if (s.factor > 1)
        figure.pooling = std::string(options.pooling == core::BlockPooling::Mean ? "mean" : "largest") + " of a block of " +
                         std::to_string(s.factor) + " × " + std::to_string(s.factor) + " weights";
    figure.keys = s.keys;
    if (options.score == core::HeadScore::Moved && layout.scores)
        figure.rule += " · " + std::string(core::movedRule()) + " · B: " + core::quoteValue(f.compare);
    std::string title = request.scenario.name.empty() ? std::string() : request.scenario.name + " · ";
    title += loaded           ? "every layer × head · the model's pass (causal, τ = 1)"
             : state.imported ? "every layer × head · imported maps"
                              : "every head · τ = " + core::formatFixed(state.settings.temperature, 2);
    figure.title = title;
    figure.colormap = request.colormap;
    figure.scale = request.colourScale;
    return figure;
}

// The head (--head, -1 = the mean) over the request's sentence and --compare's, and B − A.
render::CompareFigure compareFigure(const Flags& f, const GuiRequest& request, const core::LoadedModel& loaded) {
    (void)compareScenario(request.scenario, f.compare, "--compare");
    AppState state = makeState(request.scenario, request.limits, loaded ? &loaded : nullptr);
    recompute(state);
    state.view.compareText = f.compare;
    refreshCompare(state);
    if (!state.compare.why.empty()) throw core::InputError("", state.compare.why);
    const core::AttentionMaps a = attentionMaps(state), b = compareMaps(state);
    if (!a || !b) throw core::InputError("--export-compare", "the heads' weights are not ready");
    const int layer = compareLayer(state);
    if (f.head < -1 || f.head >= a.heads) throw core::InputError("--head", headOutOfRange(f.head, a.heads));
    const auto headMap = [&](const core::AttentionMaps& maps) -> core::Mat {
        if (f.head >= 0) return maps.weights(layer, f.head);
        core::Mat sum = core::Mat::Zero(maps.queries, maps.keys);
        for (int h = 0; h < maps.heads; ++h) sum += maps.weights(layer, h);
        return sum / static_cast<float>(maps.heads);
    };
    render::CompareFigure figure;
    figure.a = headMap(a);
    figure.b = headMap(b);
    if (core::hasMask(a.layerSettings(layer))) figure.aBlocked = core::blockedMatrix(a.layerSettings(layer), a.queries, a.keys);
    if (core::hasMask(b.layerSettings(layer))) figure.bBlocked = core::blockedMatrix(b.layerSettings(layer), b.queries, b.keys);
    figure.difference = core::alignedDifference(figure.a, figure.b, state.compare.alignment, figure.lined);
    figure.aLabels = state.keyLabels;
    if (loaded) figure.aLabels = a.labels;
    figure.bLabels = state.compare.labels;
    std::string sentence = request.scenario.sentence.value_or("");
    if (sentence.empty())
        for (const std::string& t : state.model.keyTokens) sentence += (sentence.empty() ? "" : " ") + t;
    figure.aCaption = "A: " + core::sanitizeUtf8(sentence);
    figure.bCaption = "B: " + core::sanitizeUtf8(f.compare);
    figure.subtitle = core::alignmentText(state.compare.alignment, static_cast<int>(state.compare.labels.size())) + " · moved " +
                      core::formatFixed(core::mapMoved(figure.a, figure.b, state.compare.alignment), 3) +
                      " (mean over lined-up queries of ½ Σ|B − A|) · rows: queries, columns: keys";
    const std::string head = (loaded ? "layer " + std::to_string(layer + 1) + " · " : std::string()) +
                             (f.head >= 0 ? "head " + std::to_string(f.head + 1) : "mean over heads");
    figure.title = "Compare · " + (request.scenario.name.empty() ? std::string() : request.scenario.name + " · ") + head +
                   (loaded ? " · the model's pass (causal, τ = 1)" : "");
    figure.colormap = request.colormap;
    return figure;
}

}  // namespace

void checkExports(const Flags& f, const GuiRequest& request) {
    checkOutputs({{"--export", f.exportJson},
                  {"--export-npy", f.exportNpy},
                  {"--export-csv", f.exportCsv},
                  {"--export-heatmap", f.exportHeatmap},
                  {"--export-bars", f.exportBars},
                  {"--export-heads", f.exportHeads},
                  {"--export-stats", f.exportStats},
                  {"--export-model-view", f.exportModelView},
                  {"--export-head-view", f.exportHeadView},
                  {"--export-compare", f.exportCompare},
                  {"--export-qk-map", f.exportQkMap}},
                 runInputs(f, request));
    for (const std::string* figure : {&f.exportHeatmap, &f.exportBars, &f.exportHeads, &f.exportModelView, &f.exportHeadView,
                                      &f.exportCompare})  // a bad extension before any work
        if (!figure->empty()) render::heatmapIsPng(*figure);
    if (!f.exportQkMap.empty()) render::checkQkMapPath(f.exportQkMap);
    if (!f.exportStats.empty()) {  // a bad extension or ε before any work
        static_cast<void>(statsAsJson(f.exportStats));
        static_cast<void>(sinkEpsilon(f));
    }
    if (!f.exportModelView.empty()) modelViewOptions(f);  // a bad statistic before any work
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

void runBench(const Flags& f, const GuiRequest& request, std::ostream& out, const char*& doing) {
    const double seconds = parseFloat("--bench-seconds", f.benchSeconds);  // in range: checkExports
    const Built built = buildFor(request, doing);
    const auto& [loaded, model, settings, imported, shownLayer] = built;
    if (loaded) {  // the model's whole pass, every layer and head, and an appended token
        doing = "timing the model's forward pass";
        const core::ModelBenchResult r = core::benchmarkModel(*loaded.checkpoint, loaded.run->ids, seconds);
        const core::decoder::Config& c = loaded.checkpoint->config();
        const nlohmann::json j = {{"model", loaded.checkpoint->name()},
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
                                  {"kept_mib", static_cast<double>(r.keptBytes) / (1024.0 * 1024.0)},
                                  {"file_mib", static_cast<double>(loaded.checkpoint->fileBytes()) / (1024.0 * 1024.0)}};
        out << core::dumpJson(j) << "\n";
        return;
    }

    doing = "timing the forward pass";
    const core::BenchResult r = core::benchmark(model, settings, seconds);
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

void exportAll(const Flags& f, const CLI::App& app, const GuiRequest& request, const Built& built, std::ostream& out, const char*& doing) {
    const auto& [loaded, model, settings, imported, shownLayer] = built;
    // A --head the model lacks is refused whatever is exported, as the window refuses it.
    if (request.head || !f.exportCsv.empty() || !f.exportHeatmap.empty() || !f.exportBars.empty())
        if (const std::string why = headOutOfRange(f.head, model.heads); !why.empty()) throw core::InputError("--head", why);
    core::Forward computed;  // an import's layer is read as it is, not copied again
    const core::Forward& forward = built.imported ? built.forward : computed;
    doing = "computing the forward pass";
    try {
        if (!built.imported) computed = core::runForward(model, settings);
    } catch (const core::InputError& e) {
        throw e.within(request.source);
    }
    // The exports of every layer read every map: all are checked before anything is written.
    if (built.imported && (f.rollout || !f.exportNpy.empty() || !f.exportStats.empty() || !f.exportModelView.empty()))
        checkEveryMap(built, doing);
    // The head --export-csv and --export-heatmap show (-1: the mean over heads).
    const auto headWeights = [&]() -> core::Mat {
        return f.head < 0 ? core::meanWeights(forward, {.skipFirstKey = f.skipFirstKey})
                          : forward.heads[static_cast<std::size_t>(f.head)].weights;
    };
    // --rollout: R up to the selected layer (a model's) or the scenario's one layer, for the
    // JSON and .npy exports, leaving out the first key with --skip-first-key.
    std::optional<core::RolloutExport> rollout;
    if (f.rollout && (!f.exportJson.empty() || !f.exportNpy.empty())) {
        doing = "rolling out the attention";
        rollout.emplace();
        rollout->options = {.heads = request.rolloutHeads, .skipFirstKey = f.skipFirstKey};
        rollout->layer = loaded || built.imported ? request.scenario.layer : 0;
        const core::AttentionMaps maps = loaded           ? core::passMaps(loaded)
                                         : built.imported ? everyImportedMap(built)
                                                          : core::forwardMaps(model, forward, settings, model.keyTokens);
        try {
            rollout->matrix = core::attentionRollout(maps, rollout->layer, rollout->options);
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
    // A model's JSON and .npy exports hold every layer's every head; the others follow the view.
    const auto writeJson = [&](core::ByteSink& sink) {
        if (loaded) core::writeModelExportJson(sink, request.scenario, loaded, rolled);
        else core::writeExportJson(sink, model, forward, rolled);
    };
    if (!f.exportJson.empty() && f.exportJson != "-") writeJson(batch.open(f.exportJson));
    if (!f.exportNpy.empty()) {
        if (loaded) core::exportModelNpyDir(batch, f.exportNpy, loaded, rolled);
        else if (built.imported) core::exportImportedNpyDir(batch, f.exportNpy, *built.imported, rolled);
        else core::exportNpyDir(batch, f.exportNpy, model, forward, rolled);
    }
    if (!f.exportHeatmap.empty()) {
        if (app.get_option("--cell-size")->count() && (f.cellSize < 1 || f.cellSize > 256))
            throw core::InputError("--cell-size", "expected 1 to 256 pixels, got " + std::to_string(f.cellSize));
        render::HeatmapFigure figure;
        figure.rowLabels = model.queryTokens;
        figure.colLabels = model.keyTokens;
        figure.weights = headWeights();
        if (core::hasMask(settings)) figure.blocked = core::blockedMatrix(settings, model.tq(), model.tk());
        figure.title = heatmapTitle(request.scenario, model, settings, f.head);
        if (f.head < 0 && f.skipFirstKey) figure.title += " · first key left out";
        figure.colormap = request.colormap;
        figure.scale = request.colourScale;
        figure.cellSize = f.cellSize;
        batch.add(f.exportHeatmap, render::encodeHeatmap(f.exportHeatmap, figure));
    }
    if (!f.exportBars.empty()) {
        if (f.query < 0 || f.query >= model.tq())
            throw core::InputError("--query", "expected 0 to " + std::to_string(model.tq() - 1) + " (" + std::to_string(model.tq()) +
                                                  " queries), got " + std::to_string(f.query));
        const core::Mat weights = headWeights();
        render::BarsFigure figure;
        figure.keyLabels = model.keyTokens;
        figure.weights.assign(weights.row(f.query).data(), weights.row(f.query).data() + weights.cols());
        if (core::hasMask(settings)) {
            const core::MaskMat blocked = core::blockedMatrix(settings, model.tq(), model.tk());
            for (Eigen::Index j = 0; j < blocked.cols(); ++j) figure.blocked.push_back(blocked(f.query, j));
        }
        figure.query = f.query;
        figure.queryLabel = model.queryTokens[static_cast<std::size_t>(f.query)];
        figure.title = heatmapTitle(request.scenario, model, settings, f.head);
        if (f.head < 0 && f.skipFirstKey) figure.title += " · first key left out";
        figure.logScale = request.colourScale == core::ColourScale::Log;
        batch.add(f.exportBars, render::encodeBars(f.exportBars, figure));
    }
    if (!f.exportHeads.empty()) {
        render::HeadsFigure figure;
        for (const core::HeadTensors& h : forward.heads) figure.heads.push_back(h.weights);
        if (core::hasMask(settings)) figure.blocked = core::blockedMatrix(settings, model.tq(), model.tk());
        figure.title = headsTitle(request.scenario, model, settings);
        figure.colormap = request.colormap;
        figure.scale = request.colourScale;
        batch.add(f.exportHeads, render::encodeHeads(f.exportHeads, figure));
    }
    if (!f.exportModelView.empty()) {
        doing = "summarizing every head";
        batch.add(f.exportModelView, render::encodeModelView(f.exportModelView, modelViewFigure(f, request, loaded, built.imported)));
    }
    if (!f.exportHeadView.empty())
        batch.add(f.exportHeadView, render::encodeHeadView(f.exportHeadView, headViewFigure(f, app, request, model, settings, forward)));
    if (!f.exportCompare.empty()) {
        doing = "running the other sentence";
        batch.add(f.exportCompare, render::encodeCompare(f.exportCompare, compareFigure(f, request, loaded)));
    }
    if (!f.exportQkMap.empty()) {
        doing = "making the query-key map";
        batch.add(f.exportQkMap, render::encodeQkMap(f.exportQkMap, qkMapFigure(f, app, request, built, forward)));
    }
    if (!f.exportCsv.empty() && f.exportCsv != "-") batch.add(f.exportCsv, core::weightsCsv(model, headWeights()));
    const std::string stats = f.exportStats.empty() ? std::string() : statsText(f, request, built, forward, doing);
    if (!f.exportStats.empty() && f.exportStats != "-") batch.add(f.exportStats, stats);
    // Whatever was read of an import is trusted only if the file did not change meanwhile.
    if (built.imported) built.imported->checkUnchanged();
    doing = "writing the exports";
    if (f.exportJson == "-") writeJson(stdoutSink);
    if (f.exportCsv == "-") stdoutSink.write(core::weightsCsv(model, headWeights()));
    if (f.exportStats == "-") stdoutSink.write(stats);
    stdoutSink.finish();
    batch.commit();
}

}  // namespace

void runExports(const Flags& f, const CLI::App& app, const GuiRequest& request, std::ostream& out, const char*& doing) {
    if (f.inductionTest && !request.scenario.model)
        throw core::InputError("--induction-test",
                               "runs a checkpoint on random token ids; a scenario has no vocabulary to draw from (give --model DIR)");
    const Built built = buildFor(request, doing);
    try {
        exportAll(f, app, request, built, out, doing);
    } catch (const core::InputError&) {
        // An import that changed while it was read makes any later failure (a write from its
        // pages that the system refused, values read as zeros): that is what is reported.
        if (built.imported) built.imported->checkUnchanged();
        throw;
    }
}

}  // namespace cli
}  // namespace attnviz::app
