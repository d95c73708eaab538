// What the command line does without a window: the benchmark and the exports.
#include "app/cli.hpp"
#include "app/cli_flags.hpp"

#include "app/render/bars_image.hpp"
#include "app/render/heads_image.hpp"
#include "app/render/heatmap_image.hpp"
#include "core/attention/kernels.hpp"
#include "core/base/error.hpp"
#include "core/base/files.hpp"
#include "core/base/format.hpp"
#include "core/base/json_text.hpp"
#include "core/io/export.hpp"
#include "core/models/model_bench.hpp"
#include "core/models/pass_maps.hpp"
#include "core/scenario/bench.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>
#include <ostream>
#include <string_view>
#include <utility>

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

// Outputs are checked before anything is computed: the same file twice, two outputs on
// standard output, or an output that is the scenario being read are refused.
void checkOutputs(const std::vector<std::pair<const char*, std::string>>& outputs, const std::string& input) {
    namespace fs = std::filesystem;
    for (std::size_t i = 0; i < outputs.size(); ++i) {
        const auto& [flag, path] = outputs[i];
        if (path.empty()) continue;  // not asked for
        std::error_code ec;
        if (!input.empty() && path != "-" && fs::equivalent(path, input, ec))
            throw core::InputError(std::string(flag) + " " + path, "is the scenario being read; write elsewhere");
        for (std::size_t k = 0; k < i; ++k) {
            const auto& [other, otherPath] = outputs[k];
            if (otherPath.empty()) continue;
            if (path == "-" && otherPath == "-") throw core::InputError(flag, std::string("standard output is already taken by ") + other);
            if (path != "-" && (path == otherPath || fs::equivalent(path, otherPath, ec)))
                throw core::InputError(flag, std::string("the same file as ") + other);
        }
    }
}

struct Built {
    core::LoadedModel loaded;  // when the scenario names a model
    core::Model model;
    core::Settings settings;
};

// The request's model and its softmax settings; errors name where the scenario came from.
Built buildFor(const GuiRequest& request, const char*& doing) {
    Built built;
    doing = "building the model";
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

}  // namespace

namespace {

std::string figureTitle(const core::Scenario& scenario, const core::Settings& settings, const std::string& heads) {
    std::string title = scenario.name.empty() ? std::string() : scenario.name + " · ";
    title += heads;
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
    const std::string layer = scenario.model ? "layer " + std::to_string(scenario.layer + 1) + " · " : "";
    return figureTitle(scenario, settings, layer + "all " + std::to_string(model.heads) + (model.heads == 1 ? " head" : " heads"));
}

namespace cli {

void checkExports(const Flags& f) {
    checkOutputs({{"--export", f.exportJson},
                  {"--export-csv", f.exportCsv},
                  {"--export-heatmap", f.exportHeatmap},
                  {"--export-bars", f.exportBars},
                  {"--export-heads", f.exportHeads}},
                 f.scenarioPath);
    for (const std::string* figure : {&f.exportHeatmap, &f.exportBars, &f.exportHeads})  // a bad extension before any work
        if (!figure->empty()) render::heatmapIsPng(*figure);
    if (f.bench) {
        const float seconds = parseFloat("--bench-seconds", f.benchSeconds);
        if (seconds <= 0.0f || seconds > 600.0f)
            throw core::InputError("--bench-seconds", "expected 0 to 600 seconds, got " + core::quoteValue(f.benchSeconds));
    }
}

void runBench(const Flags& f, const GuiRequest& request, std::ostream& out, const char*& doing) {
    const double seconds = parseFloat("--bench-seconds", f.benchSeconds);  // in range: checkExports
    const auto [loaded, model, settings] = buildFor(request, doing);
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
                        {"kept_mib", static_cast<double>(r.keptBytes) / (1024.0 * 1024.0)}};
    out << core::dumpJson(j) << "\n";
}

void runExports(const Flags& f, const CLI::App& app, const GuiRequest& request, std::ostream& out, const char*& doing) {
    const auto [loaded, model, settings] = buildFor(request, doing);
    // A --head the model lacks is refused whatever is exported, as the window refuses it.
    if (request.head || !f.exportCsv.empty() || !f.exportHeatmap.empty() || !f.exportBars.empty())
        if (const std::string why = headOutOfRange(f.head, model.heads); !why.empty()) throw core::InputError("--head", why);
    core::Forward forward;
    doing = "computing the forward pass";
    try {
        forward = core::runForward(model, settings);
    } catch (const core::InputError& e) {
        throw e.within(request.source);
    }
    // The head --export-csv and --export-heatmap show (-1: the mean over heads).
    const auto headWeights = [&]() -> core::Mat {
        return f.head < 0 ? core::meanWeights(forward) : forward.heads[static_cast<std::size_t>(f.head)].weights;
    };
    // --rollout: R up to the selected layer (a model's) or the scenario's one layer, for the
    // JSON and .npy exports. skipFirstKey stays false: no flag asks for it yet.
    std::optional<core::RolloutExport> rollout;
    if (f.rollout && (!f.exportJson.empty() || !f.exportNpy.empty())) {
        doing = "rolling out the attention";
        rollout.emplace();
        rollout->options = {.heads = request.rolloutHeads, .skipFirstKey = false};
        rollout->layer = loaded ? request.scenario.layer : 0;
        const core::AttentionMaps maps = loaded ? core::passMaps(loaded) : core::forwardMaps(model, forward, settings, model.keyTokens);
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
    StreamSink stdoutSink(out);
    // A model's JSON and .npy exports hold every layer's every head; the others follow the view.
    const auto writeJson = [&](core::ByteSink& sink) {
        if (loaded) core::writeModelExportJson(sink, request.scenario, loaded, rolled);
        else core::writeExportJson(sink, model, forward, rolled);
    };
    if (!f.exportJson.empty() && f.exportJson != "-") writeJson(batch.open(f.exportJson));
    if (!f.exportNpy.empty()) {
        if (loaded) core::exportModelNpyDir(batch, f.exportNpy, loaded, rolled);
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
    if (!f.exportCsv.empty() && f.exportCsv != "-") batch.add(f.exportCsv, core::weightsCsv(model, headWeights()));
    if (f.exportJson == "-") writeJson(stdoutSink);
    if (f.exportCsv == "-") stdoutSink.write(core::weightsCsv(model, headWeights()));
    stdoutSink.finish();
    batch.commit();
}

}  // namespace cli
}  // namespace attnviz::app
