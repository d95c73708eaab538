// Query–key map figures: one layout (the plot's square, the captions, the labels of the selected
// query and its strongest keys) drawn by the raster and SVG back ends; JSON writes the numbers.
#include "app/render/qk_map_image.hpp"

#include "app/render/figure_parts.hpp"
#include "core/base/error.hpp"
#include "core/base/format.hpp"
#include "core/base/json_text.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>

namespace attnviz::render {

core::Rgb qkMapColour(bool key, long long position, long long count) {
    const core::Rgb light = key ? core::Rgb{158, 202, 225} : core::Rgb{253, 174, 107};
    const core::Rgb deep = key ? core::Rgb{33, 113, 181} : core::Rgb{217, 72, 1};
    const float t = count > 1 ? static_cast<float>(position) / static_cast<float>(count - 1) : 1.0f;
    const auto mix = [t](std::uint8_t a, std::uint8_t b) {
        return static_cast<std::uint8_t>(std::lround(static_cast<float>(a) + t * (static_cast<float>(b) - static_cast<float>(a))));
    };
    return {mix(light.r, deep.r), mix(light.g, deep.g), mix(light.b, deep.b)};
}

namespace {

using figure::Anchor;
using figure::TextItem;

// ---- 1. Sizes and style -----------------------------------------------------------------------

constexpr int kPlot = 640;      // the plot's square side
constexpr int kWidth = 880;     // the plot centred; room for the title and the notes
constexpr float kLabelPx = 12;  // tokens named in the plot
constexpr float kMaxLabelWidth = 140;
constexpr int kHalf = 3;  // a point's half side (a key's square; a query's diamond reaches 4)

void validate(const QkMapFigure& f) {
    const core::QueryKeyMap& m = f.map;
    if (m.points.rows() == 0 || m.points.cols() != 2) throw core::InputError("points", "no points; nothing to draw");
    if (m.points.rows() != m.queries + m.keys)
        throw core::InputError(
            "points", "expected " + std::to_string(m.queries + m.keys) + " (queries and keys), got " + std::to_string(m.points.rows()));
    if (m.points.rows() > kMaxQkMapPoints)
        throw core::InputError(
            "points", std::to_string(m.points.rows()) + " are too many for one figure (at most " + std::to_string(kMaxQkMapPoints) + ")");
    if (!f.queryLabels.empty() && static_cast<Eigen::Index>(f.queryLabels.size()) != m.queries)
        throw core::InputError("labels",
                               "expected " + std::to_string(m.queries) + " query labels, got " + std::to_string(f.queryLabels.size()));
    if (!f.keyLabels.empty() && static_cast<Eigen::Index>(f.keyLabels.size()) != m.keys)
        throw core::InputError("labels", "expected " + std::to_string(m.keys) + " key labels, got " + std::to_string(f.keyLabels.size()));
    if (f.query >= m.queries) throw core::InputError("query", "no query " + std::to_string(f.query + 1));
    if (f.strongest.size() != f.strongestWeights.size()) throw core::InputError("lines", "a weight for every key joined");
    for (const int j : f.strongest)
        if (j < 0 || j >= m.keys || f.query < 0) throw core::InputError("lines", "no key " + std::to_string(j + 1) + " to join");
}

struct Layout {
    int height = 0, plotX = 0, plotY = 0;
    float unit = 1, mx = 0, my = 0;
    std::vector<TextItem> texts, labels;
    std::vector<figure::Line> frame;
    float x(float pc1) const { return static_cast<float>(plotX) + kPlot * 0.5f + (pc1 - mx) * unit; }
    float y(float pc2) const { return static_cast<float>(plotY) + kPlot * 0.5f - (pc2 - my) * unit; }  // PC2 up
};

std::string percent(double share) { return core::formatFixed(100.0 * share, 1) + " %"; }

Layout layOut(const QkMapFigure& f, const figure::FigureFonts& fonts) {
    Layout L;
    const core::QueryKeyMap& m = f.map;
    const Font& font = fonts.regular;
    const float textW = static_cast<float>(kWidth - 2 * figure::kMargin);
    int y = figure::kMargin;
    figure::titleText(L.texts, fonts, f.title, textW, y);
    const std::vector<std::string> notes = {
        "◆ queries, ■ keys, lighter = earlier",
        "keys + (mean q − mean k), then q·a and k/a with a = " + core::formatFixed(m.scale, 3) + " (equal mean norms; softmax unchanged)",
        "the first two principal components of queries and keys together · " + std::to_string(m.queries) + " queries, " +
            std::to_string(m.keys) + " keys",
        f.query >= 0 ? "query " + std::to_string(f.query + 1) + " ringed, joined to its " + std::to_string(f.strongest.size()) +
                           " strongest keys (line width and darkness = weight)"
                     : std::string()};
    for (const std::string& n : notes) {
        if (n.empty()) continue;
        y += figure::ceilPx(figure::kSubtitlePx) + 4;
        L.texts.push_back({font.ellipsize(n, figure::kSubtitlePx, textW), static_cast<float>(figure::kMargin), static_cast<float>(y),
                           figure::kSubtitlePx, Anchor::Start, figure::kCaption});
    }
    y += 14 + figure::ceilPx(figure::kTickPx);
    // the PC2 caption above the plot's left edge, the PC1 caption under its right edge
    L.plotX = (kWidth - kPlot) / 2;
    L.texts.push_back({"↑ PC2 (" + percent(m.explained[1]) + ")", static_cast<float>(L.plotX), static_cast<float>(y - 4), figure::kTickPx,
                       Anchor::Start, figure::kCaption});
    L.plotY = y;
    L.texts.push_back({"PC1 (" + percent(m.explained[0]) + " of the variance) →", static_cast<float>(L.plotX + kPlot),
                       static_cast<float>(L.plotY + kPlot + 6 + figure::ceilPx(figure::kTickPx)), figure::kTickPx, Anchor::End,
                       figure::kCaption});
    L.height = L.plotY + kPlot + 12 + figure::ceilPx(figure::kTickPx) + figure::kMargin;
    figure::frameBox(L.frame, L.plotX, L.plotY, kPlot, kPlot, figure::kFrame);
    // equal units on both axes: the points' extent fills 94 % of the square
    const Eigen::Vector2f lo = m.points.colwise().minCoeff(), hi = m.points.colwise().maxCoeff();
    const float span = std::max({hi.x() - lo.x(), hi.y() - lo.y(), 1e-12f});
    L.unit = kPlot * 0.94f / span;
    L.mx = (lo.x() + hi.x()) * 0.5f;
    L.my = (lo.y() + hi.y()) * 0.5f;
    // the selected query and its strongest keys named beside their points
    const auto name = [&](bool key, int index) {
        const std::string text = figure::labelText(key ? f.keyLabels : f.queryLabels, index, font, kLabelPx, kMaxLabelWidth);
        const Eigen::Index row = key ? m.queries + index : index;
        L.labels.push_back({text, L.x(m.points(row, 0)) + 7.0f, L.y(m.points(row, 1)) - 5.0f, kLabelPx, Anchor::Start,
                            key ? core::Rgb{8, 69, 148} : core::Rgb{166, 54, 3}, false, !key});
    };
    if (f.query >= 0) name(false, f.query);
    for (const int j : f.strongest) name(true, j);
    return L;
}

// ---- 2. PNG -----------------------------------------------------------------------------------

std::string drawPng(const QkMapFigure& f, const Layout& L, const figure::FigureFonts& fonts) {
    const core::QueryKeyMap& m = f.map;
    Canvas canvas(kWidth, L.height);
    figure::drawLines(canvas, L.frame);
    const core::Rgb line{60, 60, 60};
    for (std::size_t n = 0; n < f.strongest.size(); ++n) {
        const Eigen::Index k = m.queries + f.strongest[n];
        const float w = std::clamp(f.strongestWeights[n], 0.0f, 1.0f);
        canvas.blendLine(L.x(m.points(f.query, 0)), L.y(m.points(f.query, 1)), L.x(m.points(k, 0)), L.y(m.points(k, 1)), line,
                         0.3f + 0.7f * w, 1.0f + 2.5f * w);
    }
    for (Eigen::Index j = 0; j < m.keys; ++j) {
        const auto px = static_cast<int>(std::floor(L.x(m.points(m.queries + j, 0)))),
                   py = static_cast<int>(std::floor(L.y(m.points(m.queries + j, 1))));
        canvas.fillRect(px - kHalf, py - kHalf, 2 * kHalf + 1, 2 * kHalf + 1, qkMapColour(true, j, m.keys));
    }
    for (Eigen::Index i = 0; i < m.queries; ++i) {
        const auto px = static_cast<int>(std::floor(L.x(m.points(i, 0)))), py = static_cast<int>(std::floor(L.y(m.points(i, 1))));
        const core::Rgb c = qkMapColour(false, i, m.queries);
        for (int dy = -kHalf - 1; dy <= kHalf + 1; ++dy) {
            const int half = kHalf + 1 - std::abs(dy);
            canvas.fillRect(px - half, py + dy, 2 * half + 1, 1, c);
        }
    }
    if (f.query >= 0) {  // a ring: 24 short segments
        const float cx = L.x(m.points(f.query, 0)), cy = L.y(m.points(f.query, 1)), r = 9;
        for (int s = 0; s < 24; ++s) {
            const double a0 = s * 2 * M_PI / 24, a1 = (s + 1) * 2 * M_PI / 24;
            canvas.blendLine(cx + r * static_cast<float>(std::cos(a0)), cy + r * static_cast<float>(std::sin(a0)),
                             cx + r * static_cast<float>(std::cos(a1)), cy + r * static_cast<float>(std::sin(a1)), figure::kText, 1.0f,
                             1.5f);
        }
    }
    figure::drawTexts(canvas, L.texts, fonts);
    figure::drawTexts(canvas, L.labels, fonts);
    return canvas.encodePng();
}

// ---- 3. SVG -----------------------------------------------------------------------------------

std::string drawSvg(const QkMapFigure& f, const Layout& L) {
    const core::QueryKeyMap& m = f.map;
    std::string s = figure::svgOpen(kWidth, L.height);
    s.reserve(static_cast<std::size_t>(m.points.rows()) * 90 + 8192);
    figure::appendLinesSvg(s, L.frame, "frame");
    s += "<g id=\"lines\" stroke=\"#3c3c3c\" stroke-linecap=\"round\">\n";
    for (std::size_t n = 0; n < f.strongest.size(); ++n) {
        const Eigen::Index k = m.queries + f.strongest[n];
        const float w = std::clamp(f.strongestWeights[n], 0.0f, 1.0f);
        s += "<line x1=\"" + figure::num(L.x(m.points(f.query, 0))) + "\" y1=\"" + figure::num(L.y(m.points(f.query, 1))) + "\" x2=\"" +
             figure::num(L.x(m.points(k, 0))) + "\" y2=\"" + figure::num(L.y(m.points(k, 1))) + "\" stroke-width=\"" +
             figure::num(1.0 + 2.5 * w) + "\" stroke-opacity=\"" + core::formatFixed(0.3 + 0.7 * w, 3) + "\"/>\n";
    }
    s += "</g>\n<g id=\"keys\">\n";
    for (Eigen::Index j = 0; j < m.keys; ++j)
        s += "<rect x=\"" + figure::num(L.x(m.points(m.queries + j, 0)) - kHalf) + "\" y=\"" +
             figure::num(L.y(m.points(m.queries + j, 1)) - kHalf) + "\" width=\"" + std::to_string(2 * kHalf) + "\" height=\"" +
             std::to_string(2 * kHalf) + "\" fill=\"" + figure::hex(qkMapColour(true, j, m.keys)) + "\"/>\n";
    s += "</g>\n<g id=\"queries\">\n";
    for (Eigen::Index i = 0; i < m.queries; ++i) {
        const float x = L.x(m.points(i, 0)), y = L.y(m.points(i, 1)), d = kHalf + 1;
        s += "<polygon points=\"" + figure::num(x) + "," + figure::num(y - d) + " " + figure::num(x + d) + "," + figure::num(y) + " " +
             figure::num(x) + "," + figure::num(y + d) + " " + figure::num(x - d) + "," + figure::num(y) + "\" fill=\"" +
             figure::hex(qkMapColour(false, i, m.queries)) + "\"/>\n";
    }
    s += "</g>\n";
    if (f.query >= 0)
        s += "<circle cx=\"" + figure::num(L.x(m.points(f.query, 0))) + "\" cy=\"" + figure::num(L.y(m.points(f.query, 1))) +
             "\" r=\"9\" fill=\"none\" stroke=\"#222222\" stroke-width=\"1.5\"/>\n";
    figure::appendTextsSvg(s, L.labels, "tokens");
    return s;
}

constexpr figure::Drawing<QkMapFigure, Layout> kDrawing{validate, layOut, drawPng, drawSvg};

}  // namespace

void checkQkMapPath(const std::string& path) { static_cast<void>(figure::fileType(path, true)); }

std::string renderQkMapPng(const QkMapFigure& f) { return kDrawing.draw(f, figure::FileType::Png); }

std::string renderQkMapSvg(const QkMapFigure& f) { return kDrawing.draw(f, figure::FileType::Svg); }

std::string renderQkMapJson(const QkMapFigure& f) {
    validate(f);
    const core::QueryKeyMap& m = f.map;
    nlohmann::json j;
    j["scale"] = m.scale;
    j["mean_norm"] = m.meanNorm;
    j["explained"] = {m.explained[0], m.explained[1]};
    j["shift"] = std::vector<float>(m.shift.data(), m.shift.data() + m.shift.size());
    j["centre"] = std::vector<double>(m.centre.data(), m.centre.data() + m.centre.size());
    nlohmann::json components = nlohmann::json::array();
    for (Eigen::Index r = 0; r < m.components.rows(); ++r) components.push_back({m.components(r, 0), m.components(r, 1)});
    j["components"] = components;
    const auto side = [&](bool key) {
        nlohmann::json points = nlohmann::json::array();
        const Eigen::Index count = key ? m.keys : m.queries, first = key ? m.queries : 0;
        const auto& labels = key ? f.keyLabels : f.queryLabels;
        for (Eigen::Index i = 0; i < count; ++i) {
            nlohmann::json p = {{"position", i}, {"pc1", m.points(first + i, 0)}, {"pc2", m.points(first + i, 1)}};
            if (!labels.empty()) core::putText(p, "token", labels[static_cast<std::size_t>(i)]);
            points.push_back(std::move(p));
        }
        return points;
    };
    j["queries"] = side(false);
    j["keys"] = side(true);
    j["query"] = f.query;
    j["strongest"] = f.strongest;
    return core::dumpJson(j) + "\n";
}

std::string encodeQkMap(const std::string& path, const QkMapFigure& f) {
    return figure::encodeAs(
        path, [&](figure::FileType type) { return type == figure::FileType::Json ? renderQkMapJson(f) : kDrawing.draw(f, type); }, true);
}

}  // namespace attnviz::render
