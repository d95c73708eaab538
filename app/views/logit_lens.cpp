#include "app/views/logit_lens.hpp"

#include "app/render/logit_lens_image.hpp"
#include "app/state/background_job.hpp"
#include "app/state/generation.hpp"
#include "app/state/source.hpp"
#include "core/base/error.hpp"
#include "core/base/files.hpp"
#include "core/base/format.hpp"
#include "core/base/json_text.hpp"
#include "core/base/utf8.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <new>
#include <optional>

namespace attnviz::app {
namespace {

bool isCsv(const std::string& path) { return core::lowerExtension(path) == ".csv"; }
bool isJson(const std::string& path) { return core::lowerExtension(path) == ".json"; }

// The lens of a pass over [first, first + count), with the labels of its tokens.
LensData makeLens(const core::decoder::Checkpoint& model, const core::decoder::Run& run, Eigen::Index first, Eigen::Index count,
                  LensTarget target, core::Progress* progress) {
    LensData data;
    data.target = target;
    data.vocab = model.config().vocabSize;
    std::vector<int> targets;  // empty: the last layer's top token
    if (target == LensTarget::NextInput) {
        targets.assign(static_cast<std::size_t>(std::max<Eigen::Index>(count, 0)), -1);
        for (Eigen::Index p = 0; p < count && first + p + 1 < run.tokens(); ++p)
            targets[static_cast<std::size_t>(p)] = run.ids[static_cast<std::size_t>(first + p + 1)];
    }
    data.lens = core::decoder::logitLens(model, run, first, count, kLensTop, targets, progress);
    data.topLabels.reserve(data.lens.top.size());
    for (const core::decoder::LensToken& t : data.lens.top) data.topLabels.push_back(core::decoder::tokenLabel(model, t.id));
    for (const int t : data.lens.targets) data.targetLabels.push_back(t >= 0 ? core::decoder::tokenLabel(model, t) : std::string());
    return data;
}

// The window's lens on a worker: one at a time, the last asked for; a newer key cancels an older.
class LensJob {
public:
    LensJob() = default;
    LensJob(const LensJob&) = delete;
    LensJob& operator=(const LensJob&) = delete;
    ~LensJob() { stop(); }

    void start(const LensKey& key, std::shared_ptr<const core::decoder::Checkpoint> model, std::shared_ptr<const core::decoder::Run> run) {
        stop();
        auto progress = std::make_shared<core::Progress>();
        {
            const std::lock_guard<std::mutex> lock(m_mutex);
            m_asked = key;
            m_progress = progress;
            m_done.reset();
        }
        m_job.start([this, key, model = std::move(model), run = std::move(run), progress](const std::atomic<bool>&) {
            Result result{.key = key, .data = {}, .why = {}};
            try {
                result.data = makeLens(*model, *run, key.first, key.count, key.target, progress.get());
            } catch (const core::Cancelled&) {
                return;
            } catch (const core::InputError& e) {
                result.why = e.what();
            } catch (const std::bad_alloc&) {
                result.why = "out of memory while reading the vocabulary";
            }
            const std::lock_guard<std::mutex> lock(m_mutex);
            m_done = std::move(result);
        });
    }
    void stop() {
        {
            const std::lock_guard<std::mutex> lock(m_mutex);
            if (m_progress) m_progress->cancel();
        }
        m_job.stop();
    }
    bool running() const { return m_job.running(); }
    std::optional<LensKey> asked() const {
        const std::lock_guard<std::mutex> lock(m_mutex);
        return m_asked;
    }
    double fraction() const {
        const std::lock_guard<std::mutex> lock(m_mutex);
        return m_progress ? m_progress->fraction() : 0.0;
    }
    struct Result {
        LensKey key;
        LensData data;
        std::string why;
    };
    // The finished lens, once (null while none is waiting).
    std::optional<Result> take() {
        const std::lock_guard<std::mutex> lock(m_mutex);
        std::optional<Result> r = std::move(m_done);
        m_done.reset();
        return r;
    }

private:
    mutable std::mutex m_mutex;
    std::optional<LensKey> m_asked;
    std::shared_ptr<core::Progress> m_progress;
    std::optional<Result> m_done;
    BackgroundJob m_job;  // last: stopped before the rest goes
};

std::string csvText(const std::string& text) {
    std::string out = "\"";
    for (const char c : core::sanitizeUtf8(text)) {
        if (c == '"') out += '"';
        out += c;
    }
    return out + "\"";
}

}  // namespace

LensKey windowLensKey(const AppState& state) {
    LensKey key{.pass = passKey(state), .target = state.view.lensTarget};
    const core::LoadedModel* pass = checkpointPass(state);
    if (pass == nullptr) return key;
    const Eigen::Index t = pass->run->tokens();
    key.count = std::min(t, kLensWindowPositions);
    const Eigen::Index query = state.view.selectedQuery >= 0 && state.view.selectedQuery < t ? state.view.selectedQuery : t - 1;
    key.first = std::clamp<Eigen::Index>(query - key.count + 1, 0, t - key.count);
    return key;
}

bool refreshLogitLens(AppState& state) {
    LensView& view = state.derived.get<LensView>();
    LensJob& job = state.derived.get<LensJob>();
    const LensKey key = windowLensKey(state);
    // Read before take(): the worker stores its result before it stops running, so a job seen
    // stopped here has left what it made for take() to find (and is not started again for it).
    const bool running = job.running();
    if (std::optional<LensJob::Result> done = job.take(); done && done->key == key) {
        view.remake(key);
        view.value = std::move(done->data);
        view.why = std::move(done->why);
    }
    if (view.current(key)) return true;
    const core::LoadedModel* pass = checkpointPass(state);
    if (pass == nullptr) {
        if (!capabilities(state).rerun) {  // nothing will ever come: say why
            view.remake(key);
            view.why = "The logit lens reads a checkpoint's residual stream through its unembedding: open a model (--model).";
            return true;
        }
        return false;  // the pass is not ready yet
    }
    if (!running || job.asked() != key) job.start(key, pass->checkpoint, pass->run);
    return false;
}

const LensView* shownLogitLens(const AppState& state) {
    const LensView* view = state.derived.find<LensView>();
    return view && view->current(windowLensKey(state)) ? view : nullptr;
}

bool lensRunning(const AppState& state) {
    const LensJob* job = state.derived.find<LensJob>();
    return job != nullptr && job->running();
}

double lensProgress(const AppState& state) {
    const LensJob* job = state.derived.find<LensJob>();
    return job != nullptr ? job->fraction() : 0.0;
}

LensData wholeLogitLens(const AppState& state, const std::string& where) {
    const core::LoadedModel* pass = checkpointPass(state);
    if (pass == nullptr)
        throw core::InputError(where,
                               "the logit lens reads a checkpoint's residual stream through its unembedding: open a model (--model)");
    try {
        return makeLens(*pass->checkpoint, *pass->run, 0, pass->run->tokens(), state.view.lensTarget, nullptr);
    } catch (const core::InputError& e) {
        throw core::InputError(where, e.what());
    }
}

const char* lensTargetName(LensTarget target) {
    return target == LensTarget::NextInput ? "the next input token" : "the model's final choice";
}

float lensShade(const LensData& data, LensColour colour, int layer, Eigen::Index p) {
    const core::decoder::LogitLens& lens = data.lens;
    if (colour == LensColour::Top) return lens.cell(layer, p)[0].prob;
    if (lens.targets[static_cast<std::size_t>(p)] < 0) return -1.0f;
    if (colour == LensColour::TargetProbability) return lens.targetProb[lens.at(layer, p)];
    const int rank = lens.targetRank[lens.at(layer, p)];
    if (rank <= 1 || data.vocab <= 1) return 1.0f;
    return std::clamp(1.0f - static_cast<float>(std::log(static_cast<double>(rank)) / std::log(static_cast<double>(data.vocab))), 0.0f,
                      1.0f);
}

LensScale lensScale(const LensData& data, LensColour colour) {
    LensScale out;
    if (colour != LensColour::TargetRank) {
        for (int k = 0; k <= 4; ++k) out.ticks.emplace_back(static_cast<float>(k) / 4.0f, core::formatFixed(k / 4.0, 2));
        if (colour == LensColour::Top) {
            out.caption = "probability of the top token";
            out.words = "its probability";
        } else {
            out.caption = std::string("probability of ") + lensTargetName(data.target);
            out.words = "the probability of " + std::string(lensTargetName(data.target)) + " there";
        }
        return out;
    }
    // ranks 1, 10, 100, … and the vocabulary's last, on the log scale lensShade uses
    const long long last = std::max(2, data.vocab);
    const double span = std::log(static_cast<double>(last));
    for (long long r = 1; r < last; r *= 10) {
        const double at = std::log(static_cast<double>(r)) / span;
        if (r > 1 && 1.0 - at < 0.08) break;  // too close to the last's label
        out.ticks.emplace_back(static_cast<float>(1.0 - at), "#" + core::groupedNumber(r));
    }
    out.ticks.emplace_back(0.0f, "#" + core::groupedNumber(last));
    out.caption = std::string("rank of ") + lensTargetName(data.target) + " (log scale)";
    out.words = "the rank of " + std::string(lensTargetName(data.target)) + " there (log scale)";
    return out;
}

std::string lensCsv(const LensData& data, const std::vector<std::string>& tokens) {
    const core::decoder::LogitLens& lens = data.lens;
    std::string out = "layer,position,token,rank,id,text,prob,target_id,target_text,target_prob,target_rank\n";
    for (int l = 0; l < lens.layers; ++l)
        for (Eigen::Index p = 0; p < lens.positions; ++p) {
            const Eigen::Index position = lens.first + p;
            const std::size_t cell = lens.at(l, p);
            const int target = lens.targets[static_cast<std::size_t>(p)];
            const std::string who =
                std::to_string(l) + "," + std::to_string(position) + "," +
                csvText(static_cast<std::size_t>(position) < tokens.size() ? tokens[static_cast<std::size_t>(position)] : "") + ",";
            const std::string targetPart =
                target < 0 ? ",,,"
                           : std::to_string(target) + "," + csvText(data.targetLabels[static_cast<std::size_t>(p)]) + "," +
                                 core::formatNumber(lens.targetProb[cell]) + "," + std::to_string(lens.targetRank[cell]);
            for (int j = 0; j < lens.k; ++j) {
                const std::size_t at = cell * static_cast<std::size_t>(lens.k) + static_cast<std::size_t>(j);
                out += who;
                out += std::to_string(j + 1) + "," + std::to_string(lens.top[at].id) + "," + csvText(data.topLabels[at]) + ",";
                out += core::formatNumber(lens.top[at].prob) + ",";
                out += targetPart;
                out += "\n";
            }
        }
    return out;
}

std::string lensJson(const LensData& data, const std::vector<std::string>& tokens, const std::string& source) {
    const core::decoder::LogitLens& lens = data.lens;
    nlohmann::json j = nlohmann::json::object();
    j["source"] = source;
    j["rule"] =
        "each layer's residual stream (layer 0: the embeddings; layer l: after block l) through the model's final norm and "
        "unembedding, softmax over the vocabulary at temperature 1; the target is " +
        std::string(data.target == LensTarget::NextInput ? "the next input token (none at the last position)"
                                                         : "the token the last layer ranks first there");
    j["layers"] = lens.layers;
    j["first_position"] = lens.first;
    j["positions"] = lens.positions;
    core::putTexts(j, "tokens", tokens);
    nlohmann::json records = nlohmann::json::array();
    for (int l = 0; l < lens.layers; ++l)
        for (Eigen::Index p = 0; p < lens.positions; ++p) {
            const Eigen::Index position = lens.first + p;
            const std::size_t cell = lens.at(l, p);
            nlohmann::json top = nlohmann::json::array();
            for (int j2 = 0; j2 < lens.k; ++j2) {
                const std::size_t at = cell * static_cast<std::size_t>(lens.k) + static_cast<std::size_t>(j2);
                nlohmann::json t = {{"id", lens.top[at].id}, {"prob", lens.top[at].prob}};
                core::putText(t, "text", data.topLabels[at]);
                top.push_back(std::move(t));
            }
            nlohmann::json r = {{"layer", l}, {"position", position}, {"top", std::move(top)}};
            if (static_cast<std::size_t>(position) < tokens.size()) core::putText(r, "token", tokens[static_cast<std::size_t>(position)]);
            if (const int target = lens.targets[static_cast<std::size_t>(p)]; target >= 0) {
                nlohmann::json t = {{"id", target}, {"prob", lens.targetProb[cell]}, {"rank", lens.targetRank[cell]}};
                core::putText(t, "text", data.targetLabels[static_cast<std::size_t>(p)]);
                r["target"] = std::move(t);
            }
            records.push_back(std::move(r));
        }
    j["records"] = std::move(records);
    return core::dumpJson(j);
}

std::string writeLogitLens(AppState& state, const std::string& path, const FigureRequest& request) {
    const LensData data = wholeLogitLens(state, request.where);
    const core::LoadedModel* pass = checkpointPass(state);
    if (isCsv(path)) return lensCsv(data, pass->labels);
    if (isJson(path)) return lensJson(data, pass->labels, sourceName(state, state.scenario.name));
    render::LogitLensFigure figure;
    figure.lens = &data.lens;
    figure.topLabels = &data.topLabels;
    figure.tokens = pass->labels;
    figure.title = "Logit lens · " + figureTitle(state, "every layer", true);
    figure.colormap = state.view.colormap;
    figure.generatedFrom = generatedFrom(state);
    if (state.view.lensColour != LensColour::Top) {
        const LensScale scale = lensScale(data, state.view.lensColour);
        for (int l = 0; l < data.lens.layers; ++l)
            for (Eigen::Index p = 0; p < data.lens.positions; ++p) figure.shades.push_back(lensShade(data, state.view.lensColour, l, p));
        if (state.view.lensColour == LensColour::TargetRank) figure.ticks = scale.ticks;  // a probability: the figure's own ticks
        figure.caption = scale.caption;
        figure.words = scale.words;
    }
    return render::encodeLogitLens(path, figure);
}

void checkLogitLensPath(const std::string& path) {
    if (isCsv(path) || isJson(path)) return;
    const std::string ext = core::lowerExtension(path);
    if (ext != ".png" && ext != ".svg") throw core::InputError(path, "unknown type; use .png, .svg, .csv or .json");
}

}  // namespace attnviz::app
