#include "app/views/head_profile_view.hpp"

#include "app/state/head_summary.hpp"
#include "app/state/source.hpp"
#include "core/attention/head_lines.hpp"
#include "core/base/error.hpp"
#include "core/base/files.hpp"
#include "core/base/format.hpp"
#include "core/base/json_text.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

namespace attnviz::app {
namespace {

constexpr core::Rgb kSelected{79, 70, 229};  // the window's indigo
constexpr core::Rgb kOthers{150, 150, 165}, kUniform{60, 60, 60};
constexpr std::size_t kDottedPoints = 96;  // the selected head's points dotted up to this many

// Where a distance bin [from, to) stands on a log axis: its one distance, or the geometric middle
// of its first and last.
double binDistance(Eigen::Index from, Eigen::Index to) {
    return to - from <= 1 ? static_cast<double>(from) : std::sqrt(static_cast<double>(from) * static_cast<double>(to - 1));
}
double binPosition(Eigen::Index from, Eigen::Index to) { return 0.5 * static_cast<double>(from + to - 1) + 1; }  // counted from 1

bool isCsv(const std::string& path) { return core::lowerExtension(path) == ".csv"; }
bool isJson(const std::string& path) { return core::lowerExtension(path) == ".json"; }

std::string headsName(const AppState& state, const HeadSummary& s, int layer, int head) {
    std::string name = layerCount(state) > 0 ? "layer " + std::to_string(s.firstLayer + layer + 1) + " · " : std::string();
    return name + (head >= 0 ? "head " + std::to_string(head + 1) + " of " + std::to_string(s.heads)
                             : "all " + std::to_string(s.heads) + " heads");
}

}  // namespace

std::string profileHeads(const AppState& state) {
    const HeadSummary& s = state.headSummary;
    const int head = state.view.selectedHead >= 0 && state.view.selectedHead < s.heads ? state.view.selectedHead : -1;
    return headsName(state, s, profileLayer(state), head);
}

int profileLayer(const AppState& state) {
    const HeadSummary& s = state.headSummary;
    const int layer = layerCount(state) > 0 ? state.scenario.layer - s.firstLayer : 0;
    return std::clamp(layer, 0, std::max(0, s.layers - 1));
}

render::LinePlotsFigure profileFigure(AppState& state, const FigureRequest& request) {
    if (!summarizeHeads(state)) throw core::InputError(request.where, "the heads are still being computed; try again in a moment");
    const HeadSummary& s = state.headSummary;
    if (s.profiles.empty() || s.bins.distanceBins() < 1) throw core::InputError(request.where, "no head to profile");
    return profilePlots(state);
}

render::LinePlotsFigure profilePlots(const AppState& state) {
    const HeadSummary& s = state.headSummary;
    const int layer = profileLayer(state);
    const int head = state.view.selectedHead >= 0 && state.view.selectedHead < s.heads ? state.view.selectedHead : -1;
    const core::ProfileBins& bins = s.bins;
    const auto profile = [&](int h) -> const core::HeadProfile& {
        return s.profiles[static_cast<std::size_t>(layer) * static_cast<std::size_t>(s.heads) + static_cast<std::size_t>(h)];
    };

    // By distance, from distance 1 (0 has no place on a log axis; the note gives it).
    render::LinePlot byDistance;
    byDistance.title = "Attention by distance";
    byDistance.x = {"distance |i − j| (log)", true, 1, 10};
    byDistance.y = {"mean weight (log)", true, 0.1, 1};
    const Eigen::Index longest = bins.distance.back() - 1;
    while (byDistance.x.hi < static_cast<double>(longest)) byDistance.x.hi *= 10;
    double smallest = 1, largest = 0;
    const auto distanceCurve = [&](const std::vector<double>& values) {
        render::PlotCurve c;
        for (int b = 1; b < bins.distanceBins(); ++b) {
            c.x.push_back(binDistance(bins.distance[static_cast<std::size_t>(b)], bins.distance[static_cast<std::size_t>(b) + 1]));
            c.y.push_back(values[static_cast<std::size_t>(b)]);
        }
        return c;
    };
    // By position, the mass on the first k keys.
    render::LinePlot firstK;
    const int k = bins.firstTokens;
    firstK.title = "Mass on the first " + (k == 1 ? std::string("token") : std::to_string(k) + " tokens");
    firstK.x = {"query position", false, 0, static_cast<double>(std::max<Eigen::Index>(s.queries, 1))};
    firstK.y = {k == 1 ? "weight on token 1" : "mass on tokens 1 … " + std::to_string(k), false, 0, 1};
    const auto positionCurve = [&](const core::HeadProfile& p) {
        render::PlotCurve c;
        for (int q = 0; q < bins.positionBins(); ++q) {
            const auto at = static_cast<std::size_t>(q);
            c.x.push_back(binPosition(bins.positions[at], bins.positions[at + 1]));
            c.y.push_back(p.rows[at] > 0 ? p.firstKAt[at] : std::nan(""));  // queries before the first k: no point
        }
        return c;
    };

    render::LinePlotsFigure figure;
    for (int h = 0; h < s.heads; ++h) {
        if (h == head) continue;
        const core::HeadProfile& p = profile(h);
        render::PlotCurve d = distanceCurve(p.byDistance), f = positionCurve(p);
        const core::Rgb colour = head >= 0 ? kOthers : core::headColour(h);
        const float width = head >= 0 ? 1.0f : 1.5f, opacity = head >= 0 ? 0.55f : 0.9f;
        for (render::PlotCurve* c : {&d, &f}) c->colour = colour, c->width = width, c->opacity = opacity;
        for (const double v : d.y)
            if (v > 0) smallest = std::min(smallest, v), largest = std::max(largest, v);
        byDistance.curves.push_back(std::move(d));
        firstK.curves.push_back(std::move(f));
    }
    render::PlotCurve uniform = distanceCurve(profile(0).uniform);
    uniform.colour = kUniform, uniform.width = 1.5f, uniform.dashed = true;
    for (const double v : uniform.y)
        if (v > 0) smallest = std::min(smallest, v), largest = std::max(largest, v);
    byDistance.curves.push_back(std::move(uniform));
    if (head >= 0) {
        const core::HeadProfile& p = profile(head);
        render::PlotCurve d = distanceCurve(p.byDistance), f = positionCurve(p);
        for (render::PlotCurve* c : {&d, &f}) c->colour = kSelected, c->width = 2.5f, c->dots = c->x.size() <= kDottedPoints;
        for (const double v : d.y)
            if (v > 0) smallest = std::min(smallest, v), largest = std::max(largest, v);
        byDistance.curves.push_back(std::move(d));
        firstK.curves.push_back(std::move(f));
    }
    // whole decades around the curves, at most up to 1
    byDistance.y.lo = std::pow(10.0, std::floor(std::log10(std::max(smallest, 1e-12))));
    if (byDistance.y.lo >= 1) byDistance.y.lo = 0.1;
    byDistance.y.hi = std::min(1.0, std::pow(10.0, std::ceil(std::log10(std::max(largest, byDistance.y.lo * 10)))));
    if (byDistance.y.hi <= byDistance.y.lo) byDistance.y.hi = byDistance.y.lo * 10;
    const core::AttentionMaps maps = attentionMaps(state);
    if (maps && layer < maps.layers) {
        const int window = maps.layerSettings(layer).window;
        if (window > 0) {
            byDistance.markers.push_back({static_cast<double>(window), "window " + std::to_string(window)});
            firstK.markers.push_back({static_cast<double>(window + k), "window + k"});
        }
    }

    const Capabilities can = capabilities(state);
    std::string title = state.scenario.name.empty() ? std::string() : state.scenario.name + " · ";
    title += headsName(state, s, layer, head);
    title += can.ownPass     ? " · the model's pass (" + ownSoftmaxNote(state) + ")"
             : can.givenMaps ? " · " + givenMapsName(state)
                             : " · τ = " + core::formatFixed(state.settings.temperature, 2);
    figure.title = title;
    std::string subtitle = std::to_string(s.queries) + " tokens";
    if (head >= 0) {
        const core::HeadProfile& p = profile(head);
        subtitle +=
            " · distance 0 (itself): " + core::formatFixed(p.byDistance[0], 3) + " (uniform " + core::formatFixed(p.uniform[0], 3) + ")";
    }
    figure.subtitle = subtitle;
    figure.plots = {std::move(byDistance), std::move(firstK)};
    if (head >= 0) {
        figure.legend.push_back({"head " + std::to_string(head + 1), kSelected, 2.5f});
        if (s.heads > 1) figure.legend.push_back({"other heads", kOthers, 1.0f, 0.55f});
    } else {
        for (int h = 0; h < std::min(s.heads, 12); ++h)
            figure.legend.push_back({"head " + std::to_string(h + 1), core::headColour(h), 1.5f});
        if (s.heads > 12) figure.legend.push_back({"… colours repeat every 12 heads", kOthers, 1.0f});
    }
    figure.legend.push_back({"uniform attention (the reference)", kUniform, 1.5f, 1.0f, true});
    figure.note = core::headProfileRule(bins);
    return figure;
}

std::string profilesCsv(const HeadSummary& s) {
    std::string out = "layer,head,curve,from,to,value,count\n";
    const core::ProfileBins& bins = s.bins;
    for (int l = 0; l < s.layers; ++l)
        for (int h = 0; h < s.heads; ++h) {
            const core::HeadProfile& p =
                s.profiles[static_cast<std::size_t>(l) * static_cast<std::size_t>(s.heads) + static_cast<std::size_t>(h)];
            const std::string who = std::to_string(s.firstLayer + l) + "," + std::to_string(h) + ",";
            for (const char* curve : {"distance", "uniform"})
                for (int b = 0; b < bins.distanceBins(); ++b) {
                    const auto at = static_cast<std::size_t>(b);
                    const double v = std::string_view(curve) == "distance" ? p.byDistance[at] : p.uniform[at];
                    out += who + curve + "," + std::to_string(bins.distance[at]) + "," + std::to_string(bins.distance[at + 1] - 1) + "," +
                           core::formatNumber(v) + "," + std::to_string(p.pairs[at]) + "\n";
                }
            for (int q = 0; q < bins.positionBins(); ++q) {
                const auto at = static_cast<std::size_t>(q);
                out += who + "first_k," + std::to_string(bins.positions[at]) + "," + std::to_string(bins.positions[at + 1] - 1) + "," +
                       core::formatNumber(p.firstKAt[at]) + "," + std::to_string(p.rows[at]) + "\n";
            }
        }
    return out;
}

std::string profilesJson(const HeadSummary& s, const std::string& source) {
    const core::ProfileBins& bins = s.bins;
    nlohmann::json j = nlohmann::json::object();
    j["source"] = source;
    j["tokens"] = s.queries;
    j["layer_count"] = s.layers;
    j["head_count"] = s.heads;
    j["first_k"] = {{"k", bins.firstTokens}};
    j["rule"] = core::headProfileRule(bins);
    nlohmann::json distance = nlohmann::json::array(), positions = nlohmann::json::array(), heads = nlohmann::json::array();
    for (int b = 0; b < bins.distanceBins(); ++b)
        distance.push_back({bins.distance[static_cast<std::size_t>(b)], bins.distance[static_cast<std::size_t>(b) + 1] - 1});
    for (int q = 0; q < bins.positionBins(); ++q)
        positions.push_back({bins.positions[static_cast<std::size_t>(q)], bins.positions[static_cast<std::size_t>(q) + 1] - 1});
    j["distance_bins"] = std::move(distance);
    j["position_bins"] = std::move(positions);
    for (int l = 0; l < s.layers; ++l)
        for (int h = 0; h < s.heads; ++h) {
            const core::HeadProfile& p =
                s.profiles[static_cast<std::size_t>(l) * static_cast<std::size_t>(s.heads) + static_cast<std::size_t>(h)];
            heads.push_back({{"layer", s.firstLayer + l},
                             {"head", h},
                             {"by_distance", p.byDistance},
                             {"uniform", p.uniform},
                             {"pairs", p.pairs},
                             {"first_k", p.firstKAt},
                             {"rows", p.rows}});
        }
    j["heads"] = std::move(heads);
    return core::dumpJson(j);
}

std::string writeProfiles(AppState& state, const std::string& path, const FigureRequest& request) {
    if (!isCsv(path) && !isJson(path)) return render::encodeLinePlots(path, profileFigure(state, request));
    if (!summarizeHeads(state)) throw core::InputError(request.where, "the heads are still being computed; try again in a moment");
    if (isCsv(path)) return profilesCsv(state.headSummary);
    return profilesJson(state.headSummary, sourceName(state, state.scenario.name));
}

void checkProfilesPath(const std::string& path) {
    if (isCsv(path) || isJson(path)) return;
    const std::string ext = core::lowerExtension(path);
    if (ext != ".png" && ext != ".svg") throw core::InputError(path, "unknown type; use .png, .svg, .csv or .json");
}

}  // namespace attnviz::app
