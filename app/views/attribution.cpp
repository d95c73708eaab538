#include "app/views/attribution.hpp"

#include "app/render/attribution_image.hpp"
#include "app/state/source.hpp"
#include "core/base/error.hpp"
#include "core/base/files.hpp"
#include "core/base/format.hpp"
#include "core/base/json_text.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <new>

namespace attnviz::app {
namespace {

bool isCsv(const std::string& path) { return core::lowerExtension(path) == ".csv"; }
bool isJson(const std::string& path) { return core::lowerExtension(path) == ".json"; }

AttributionKey keyOf(const AppState& state) {
    PassKey pass = passKey(state);
    pass.skipFirstKey = false;
    pass.firstTokens = 0;
    return {pass, state.view.attributionQuery, state.view.attributionTarget};
}

std::string number(double v) { return core::formatNumber(v); }

core::decoder::AttributionTarget targetOf(const core::decoder::Checkpoint& model, const std::string& text) {
    return core::decoder::parseTarget(model, text, "--target");
}

}  // namespace

AttributionData makeAttribution(const AppState& state, const std::string& where) {
    const core::LoadedModel* pass = checkpointPass(state);
    if (pass == nullptr)
        throw core::InputError(where, "direct logit attribution reads a checkpoint's heads and unembedding: open a model (--model)");
    const core::decoder::Checkpoint& model = *pass->checkpoint;
    const core::decoder::Run& run = *pass->run;
    const Eigen::Index position = state.view.attributionQuery >= 0 ? state.view.attributionQuery : run.tokens() - 1;
    if (position >= run.tokens())
        throw core::InputError(where,
                               "position " + std::to_string(position) + " is outside the " + std::to_string(run.tokens()) + " tokens");
    AttributionData data;
    try {
        const core::Vec logits = core::decoder::positionLogits(model, run, position);
        core::decoder::AttributionTarget target;
        if (state.view.attributionTarget.empty()) {
            Eigen::Index top = 0;
            logits.maxCoeff(&top);
            target.target = static_cast<int>(top);
            data.defaultTarget = true;
        } else {
            target = targetOf(model, state.view.attributionTarget);
        }
        data.terms = core::decoder::logitAttribution(model, run, position, target.target, target.minus);
        data.probability =
            core::decoder::probabilities(logits, {core::decoder::NextToken{target.target, logits[target.target], 0.0f}}, 1.0f)[0];
    } catch (const core::InputError& e) {
        if (e.where() == "--target") throw;  // names the flag itself
        throw core::InputError(where, e.what());
    }
    data.position = static_cast<std::size_t>(position) < pass->labels.size() ? pass->labels[static_cast<std::size_t>(position)] : "";
    data.target = core::decoder::tokenLabel(model, data.terms.target);
    if (data.terms.minus >= 0) data.minus = core::decoder::tokenLabel(model, data.terms.minus);
    data.capped = model.config().logitSoftcap > 0.0f;
    return data;
}

bool refreshAttribution(AppState& state) {
    AttributionView& view = state.derived.get<AttributionView>();
    const AttributionKey key = keyOf(state);
    if (view.current(key)) return true;
    if (checkpointPass(state) == nullptr && capabilities(state).rerun) return false;  // the pass is not ready yet
    AttributionData& made = view.remake(key);
    try {
        made = makeAttribution(state, "attribution");
    } catch (const core::InputError& e) {
        view.value = {};
        view.why = e.message();
    } catch (const std::bad_alloc&) {
        view.value = {};
        view.why = "out of memory while attributing the logit";
    }
    return true;
}

const AttributionView* shownAttribution(const AppState& state) {
    const AttributionView* view = state.derived.find<AttributionView>();
    return view && view->current(keyOf(state)) ? view : nullptr;
}

std::string attributionCheck(const core::decoder::LogitAttribution& t) {
    char gap[32];
    std::snprintf(gap, sizeof gap, "%.2g", t.total() - t.logit);
    return "sum " + core::formatFixed(t.total(), 4) + " · the pass's logit" + (t.minus >= 0 ? " difference " : " ") +
           core::formatFixed(t.logit, 4) + " · they differ by " + gap;
}

std::string attributionSubject(const AttributionData& d) {
    return "logit of " + d.target + (d.minus.empty() ? "" : " − " + d.minus) + " at position " + std::to_string(d.terms.position + 1) +
           " (" + d.position + ")" + (d.capped ? ", before the soft-cap" : "");
}

std::string writeAttribution(AppState& state, const std::string& path, const FigureRequest& request) {
    const AttributionData data = makeAttribution(state, request.where);
    const core::decoder::LogitAttribution& t = data.terms;
    if (isCsv(path)) {
        std::string out = "component,layer,head,term\nembeddings,,," + number(t.embeddings) + "\n";
        for (int l = 0; l < t.layers; ++l) {
            for (int h = 0; h < t.heads; ++h)
                out += "head," + std::to_string(l) + "," + std::to_string(h) + "," + number(t.head(l, h)) + "\n";
            out += "attention_bias," + std::to_string(l) + ",," + number(t.outBias[static_cast<std::size_t>(l)]) + "\n";
            out += "mlp," + std::to_string(l) + ",," + number(t.mlpTerms[static_cast<std::size_t>(l)]) + "\n";
        }
        out += "final_norm_bias,,," + number(t.finalBias) + "\n";
        out += "sum,,," + number(t.total()) + "\n";
        out += "logit,,," + number(t.logit) + "\n";
        return out;
    }
    if (isJson(path)) {
        nlohmann::json j = nlohmann::json::object();
        j["source"] = sourceName(state, state.scenario.name);
        j["rule"] =
            "each component of the residual stream at the position through the final norm with its divisor frozen at the pass's "
            "value, onto the target's unembedding row (minus the other's); the terms and the final norm's bias add up to the logit";
        j["position"] = t.position;
        core::putText(j, "token", data.position);
        nlohmann::json target = {{"id", t.target}, {"probability", data.probability}, {"ranked_first", data.defaultTarget}};
        core::putText(target, "text", data.target);
        j["target"] = std::move(target);
        if (t.minus >= 0) {
            nlohmann::json minus = {{"id", t.minus}};
            core::putText(minus, "text", data.minus);
            j["minus"] = std::move(minus);
        }
        j["before_softcap"] = data.capped;
        j["final_norm_divisor"] = t.scale;
        j["embeddings"] = t.embeddings;
        nlohmann::json heads = nlohmann::json::array(), layers = nlohmann::json::array();
        for (int l = 0; l < t.layers; ++l) {
            for (int h = 0; h < t.heads; ++h) heads.push_back({{"layer", l}, {"head", h}, {"term", t.head(l, h)}});
            layers.push_back({{"layer", l},
                              {"attention_bias", t.outBias[static_cast<std::size_t>(l)]},
                              {"mlp", t.mlpTerms[static_cast<std::size_t>(l)]}});
        }
        j["heads"] = std::move(heads);
        j["layers"] = std::move(layers);
        j["final_norm_bias"] = t.finalBias;
        j["sum"] = t.total();
        j["logit"] = t.logit;
        return core::dumpJson(j);
    }
    render::AttributionFigure figure;
    figure.terms = t;
    figure.title = "Direct logit attribution · " + figureTitle(state, "every head", true);
    figure.subtitle = attributionSubject(data) + " · " + attributionCheck(t);
    return render::encodeAttribution(path, figure);
}

void checkAttributionPath(const std::string& path) {
    if (isCsv(path) || isJson(path)) return;
    const std::string ext = core::lowerExtension(path);
    if (ext != ".png" && ext != ".svg") throw core::InputError(path, "unknown type; use .png, .svg, .csv or .json");
}

}  // namespace attnviz::app
