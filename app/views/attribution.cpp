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

std::string number(double v) { return core::formatNumber(v); }

}  // namespace

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
