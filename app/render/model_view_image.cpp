// The model view's figure: the thumbnails are placed in their slots and coloured once, in one
// scale decided over all of them, then the raster (PNG) and SVG back ends draw the same boxes.
#include "app/render/model_view_image.hpp"

#include "app/render/figure_parts.hpp"
#include "app/render/heatmap_image.hpp"
#include "core/attention/attention.hpp"
#include "core/attention/head_order.hpp"
#include "core/base/error.hpp"
#include "core/text/tokenizer.hpp"

#include <algorithm>
#include <cmath>

namespace attnviz::render {
namespace {

using figure::Anchor;
using figure::Line;
using figure::TextItem;

// ---- 1. Sizes and style -----------------------------------------------------------------------

constexpr int kGridWidth = 1500;  // the tiles' row aims at about this many pixels
constexpr int kMinTileTarget = 24, kMaxTileTarget = 160;
constexpr int kMaxCell = 16, kGap = 3, kBarW = 16;
constexpr float kLabelPx = 13, kNamePx = 11;
constexpr core::Rgb kTint{255, 140, 0};          // a score, or a signed one's positive side
constexpr core::Rgb kTintAgainst{59, 130, 246};  // a signed score's negative side
core::Rgb tintColour(double strength) { return strength < 0 ? kTintAgainst : kTint; }

struct Layout {
    int cell = 1, tileW = 0, tileH = 0, nameH = 0, tintH = 0;  // tintH: the score's bar under each tile, with its gap
    int gridX = 0, gridY = 0, pitchX = 0, pitchY = 0;
    int width = 0, height = 0;
    int barX = 0, barY = 0, barH = 0, stripe = 2;
    std::vector<float> positions;  // the thumbnails as colour-bar positions 0 … 1 (or kMaskedTexel), layer-major
    std::vector<TextItem> texts;
    std::vector<Line> lines;
};

std::size_t tileSize(const ModelViewFigure& f) { return static_cast<std::size_t>(f.side) * static_cast<std::size_t>(f.sideKeys); }
int count(const ModelViewFigure& f) { return f.layers * f.heads; }
int slotIndex(const ModelViewFigure& f, int slot) { return f.slots.empty() ? slot : f.slots[static_cast<std::size_t>(slot)]; }
bool named(const ModelViewFigure& f) { return f.order != core::TileOrder::Natural; }

// ---- 2. Validation ----------------------------------------------------------------------------

void validate(const ModelViewFigure& f) {
    if (f.layers < 1 || f.heads < 1)
        throw core::InputError("model view", "no heads (" + std::to_string(f.layers) + " layers × " + std::to_string(f.heads) + " heads)");
    if (f.side < 1 || f.sideKeys < 1) throw core::InputError("model view", "empty thumbnails; nothing to draw");
    const std::size_t want = tileSize(f) * static_cast<std::size_t>(count(f));
    if (f.thumbnails.size() != want)
        throw core::InputError("model view",
                               "expected " + std::to_string(want) + " thumbnail texels, got " + std::to_string(f.thumbnails.size()));
    for (const float v : f.thumbnails)
        if (!core::isMaskedTexel(v) && !std::isfinite(v)) throw core::InputError("model view", "has a weight that is not a finite number");
    if (!f.slots.empty()) {
        std::vector<char> seen(static_cast<std::size_t>(count(f)), 0);
        if (f.slots.size() != seen.size())
            throw core::InputError("model view",
                                   "the order names " + std::to_string(f.slots.size()) + " heads, not " + std::to_string(seen.size()));
        for (const int k : f.slots) {
            if (k < 0 || k >= count(f) || seen[static_cast<std::size_t>(k)])
                throw core::InputError("model view", "the order is not one of every head");
            seen[static_cast<std::size_t>(k)] = 1;
        }
    }
    if (!f.tint.empty() && f.tint.size() != static_cast<std::size_t>(count(f)))
        throw core::InputError("model view", "expected " + std::to_string(count(f)) + " tint scores, got " + std::to_string(f.tint.size()));
}

// ---- 3. Layout --------------------------------------------------------------------------------
// Top to bottom: title | subtitle | rule | head numbers | rows of tiles (layer numbers on the
// left; a tile's name above it when sorted). Right of the grid: the colour bar.

Layout layOut(const ModelViewFigure& f, const figure::FigureFonts& fonts) {
    const Font& font = fonts.regular;
    Layout L;
    const int longest = std::max(f.side, f.sideKeys);
    const int target = std::clamp(kGridWidth / f.heads, kMinTileTarget, kMaxTileTarget);
    L.cell = std::clamp(target / longest, 1, kMaxCell);
    L.tileW = f.sideKeys * L.cell;
    L.tileH = f.side * L.cell;
    L.stripe = std::clamp(L.tileW / 24, 2, 6);
    L.nameH = named(f) && L.tileW >= figure::ceilPx(font.textWidth("88.88", kNamePx)) ? figure::lineHeight(font, kNamePx) + 2 : 0;
    L.pitchX = L.tileW + kGap;
    // The tint is a bar under each tile, as long as the tile is wide at the largest score: beside
    // the map, never over its first rows.
    L.tintH = f.tint.empty() ? 0 : std::max(3, L.tileH / 10) + 2;
    L.pitchY = L.nameH + L.tileH + L.tintH + kGap;

    // One scale over every tile, made definite by all of their texels (a long map's stretched to a
    // high percentile, the clipped share on the bar); per row is stretched to the largest.
    L.positions = f.thumbnails;
    core::ScaleChoice choice = core::chooseScale(f.scale, L.positions.data(), L.positions.size(), f.keys);
    if (choice.resolved == core::ColourScale::Rows) choice.resolved = core::ColourScale::Stretch, choice.top = choice.largest;
    const float floor = core::logFloor(std::max<long long>(1, f.keys));
    core::toScalePositions(choice.resolved, L.positions.data(), 1, static_cast<long long>(L.positions.size()), choice.top, floor);

    int y = figure::kMargin;
    const auto line = [&](const std::string& text, float px, core::Rgb colour, bool bold) {
        L.texts.push_back(
            {text, static_cast<float>(figure::kMargin), static_cast<float>(y) + font.ascent(px), px, Anchor::Start, colour, false, bold});
        y += figure::lineHeight(font, px) + 6;
    };
    if (!f.title.empty()) line(core::sanitizeUtf8(f.title), figure::kTitlePx, figure::kText, true);
    std::string subtitle = std::to_string(f.layers) + (f.layers == 1 ? " layer × " : " layers × ") + std::to_string(f.heads) +
                           (f.heads == 1 ? " head" : " heads");
    subtitle += f.order == core::TileOrder::Ranked ? " · ranked left to right, top to bottom" : " · rows: layers, columns: heads";
    if (!f.pooling.empty()) subtitle += " · each texel the " + f.pooling;
    // Tokens a model generated: from where, marked in each tile large enough to show it.
    // A texel pools ⌈keys / sideKeys⌉ tokens a side, as the window's thumbnails do: the line falls
    // at from / factor texels.
    const bool marked = f.generatedFrom > 0 && f.keys > 0 && f.generatedFrom < f.keys && f.side == f.sideKeys && L.tileW >= 12;
    const long long factor = f.sideKeys > 0 ? (f.keys + f.sideKeys - 1) / f.sideKeys : 1;
    const double generatedAt = marked ? static_cast<double>(f.generatedFrom) / static_cast<double>(factor) : 0.0;  // in texels
    if (marked) subtitle += " · amber: generated from token " + std::to_string(f.generatedFrom + 1);
    line(subtitle, figure::kSubtitlePx, figure::kCaption, false);
    if (!f.rule.empty()) line(core::sanitizeUtf8(f.rule), figure::kSubtitlePx, figure::kText, false);
    y += 4;

    // Axis labels: heads (or ranks within a layer) above, layers (or ranks) on the left.
    const bool ranked = f.order == core::TileOrder::Ranked;
    const std::string widest = ranked ? "#" + std::to_string(count(f)) : "L" + std::to_string(f.firstLayer + f.layers);
    const int labelW = figure::ceilPx(font.textWidth(widest, kLabelPx)) + 10;
    L.gridX = figure::kMargin + labelW;
    const int headsH = ranked ? 0 : figure::lineHeight(font, kLabelPx) + 4;
    L.gridY = y + headsH;
    if (!ranked) {
        const float widestHead = font.textWidth(std::to_string(f.heads), kLabelPx) + 6.0f;
        const int step = std::max(1, static_cast<int>(std::ceil(widestHead / static_cast<float>(L.pitchX))));
        for (int c = 0; c < f.heads; c += step) {
            const std::string label = (f.order == core::TileOrder::WithinLayer ? "#" : "") + std::to_string(c + 1);
            L.texts.push_back({label, static_cast<float>(L.gridX + c * L.pitchX) + static_cast<float>(L.tileW) / 2.0f,
                               static_cast<float>(y) + font.ascent(kLabelPx), kLabelPx, Anchor::Middle, figure::kText});
        }
    }
    const int rowStep =
        std::max(1, static_cast<int>(std::ceil(static_cast<float>(figure::lineHeight(font, kLabelPx)) / static_cast<float>(L.pitchY))));
    for (int r = 0; r < f.layers; r += rowStep) {
        const std::string label = ranked ? "#" + std::to_string(r * f.heads + 1) : "L" + std::to_string(f.firstLayer + r + 1);
        const float centre = static_cast<float>(L.gridY + r * L.pitchY + L.nameH) + static_cast<float>(L.tileH) / 2.0f;
        L.texts.push_back(
            {label, static_cast<float>(L.gridX - 8), figure::centredBaseline(centre, kLabelPx), kLabelPx, Anchor::End, figure::kText});
    }
    for (int k = 0; k < count(f); ++k) {
        const int x = L.gridX + (k % f.heads) * L.pitchX, top = L.gridY + (k / f.heads) * L.pitchY;
        if (L.nameH > 0) {
            const int index = slotIndex(f, k);
            const std::string name = ranked ? std::to_string(f.firstLayer + index / f.heads + 1) + "." + std::to_string(index % f.heads + 1)
                                            : "h" + std::to_string(index % f.heads + 1);
            L.texts.push_back({name, static_cast<float>(x) + static_cast<float>(L.tileW) / 2.0f,
                               static_cast<float>(top) + font.ascent(kNamePx), kNamePx, Anchor::Middle, figure::kCaption});
        }
        figure::frameBox(L.lines, x, top + L.nameH, L.tileW, L.tileH, figure::kFrame);
        if (marked) {  // where generated tokens start, on both axes
            const int at = static_cast<int>(std::lround(generatedAt * L.cell));
            L.lines.push_back({x + at, top + L.nameH, 1, L.tileH, figure::kGenerated});
            L.lines.push_back({x, top + L.nameH + at, L.tileW, 1, figure::kGenerated});
        }
    }
    const int gridW = f.heads * L.pitchX - kGap, gridH = f.layers * L.pitchY - kGap;
    if (L.gridY + gridH > Canvas::kMaxSide || L.gridX + gridW > Canvas::kMaxSide)
        throw core::InputError("model view", std::to_string(count(f)) + " tiles do not fit in one image");

    // The colour bar beside the grid.
    const figure::ColourBarScale bar = figure::colourBarScale(choice, floor);
    L.barX = L.gridX + gridW + 28;
    L.barY = L.gridY + L.nameH;
    L.barH = std::max({std::min(gridH - L.nameH, 600), 160, figure::ceilPx(font.textWidth(bar.caption, figure::kTickPx + 1)) + 20});
    L.width = figure::colourBarTicks(L.lines, L.texts, font, bar, L.barX, L.barY, kBarW, L.barH) + figure::kMargin;
    float textW = 0;
    for (const TextItem& t : L.texts)
        if (t.anchor == Anchor::Start && t.x == static_cast<float>(figure::kMargin))
            textW = std::max(textW, fonts.of(t).textWidth(t.text, t.px));
    L.width = std::max(L.width, figure::kMargin + figure::ceilPx(textW) + figure::kMargin);
    L.height = std::max(L.gridY + gridH, L.barY + L.barH + figure::lineHeight(font, figure::kTickPx) / 2) + figure::kMargin;
    return L;
}

TileBox tileBox(const ModelViewFigure& f, const Layout& L, int slot) {
    return {L.gridX + (slot % f.heads) * L.pitchX, L.gridY + (slot / f.heads) * L.pitchY + L.nameH, L.cell};
}

// Each slot's tint strength, −1 … 1 (core::tintStrengths: 0 … the largest score, or signed against
// the largest size when a score is negative), or none.
std::vector<double> tintStrengths(const ModelViewFigure& f) { return core::tintStrengths(f.tint); }
int tintBarHeight(const Layout& L) { return L.tintH - 2; }
int tintBarWidth(const Layout& L, double strength) {
    return strength != 0 ? std::max(1, static_cast<int>(std::lround(std::abs(strength) * static_cast<double>(L.tileW)))) : 0;
}

core::Rgb colourAt(const ModelViewFigure& f, float position) { return core::colormapColor(f.colormap, position, 0.0f, 1.0f); }

// ---- 4. PNG -----------------------------------------------------------------------------------

std::string drawPng(const ModelViewFigure& f, const Layout& L, const figure::FigureFonts& fonts) {
    Canvas canvas(L.width, L.height);
    const std::vector<double> tint = tintStrengths(f);
    for (int k = 0; k < count(f); ++k) {
        const int index = slotIndex(f, k);
        const TileBox b = tileBox(f, L, k);
        const float* tile = L.positions.data() + tileSize(f) * static_cast<std::size_t>(index);
        for (int i = 0; i < f.side; ++i)
            for (int j = 0; j < f.sideKeys; ++j) {
                const float v = tile[static_cast<std::size_t>(i) * static_cast<std::size_t>(f.sideKeys) + static_cast<std::size_t>(j)];
                const int x = b.x + j * L.cell, y = b.y + i * L.cell;
                if (core::isMaskedTexel(v)) canvas.hatchRect(x, y, L.cell, L.cell, L.stripe);
                else canvas.fillRect(x, y, L.cell, L.cell, colourAt(f, v));
            }
        if (!tint.empty())
            canvas.fillRect(b.x, b.y + L.tileH + 2, tintBarWidth(L, tint[static_cast<std::size_t>(index)]), tintBarHeight(L),
                            tintColour(tint[static_cast<std::size_t>(index)]));
    }
    figure::drawColourBar(canvas, f.colormap, L.barX, L.barY, kBarW, L.barH);
    figure::drawLines(canvas, L.lines);
    figure::drawTexts(canvas, L.texts, fonts);
    return canvas.encodePng();
}

// ---- 5. SVG -----------------------------------------------------------------------------------

std::string drawSvg(const ModelViewFigure& f, const Layout& L) {
    std::string s = figure::svgOpen(L.width, L.height);
    bool masked = false;
    for (const float v : L.positions) masked = masked || core::isMaskedTexel(v);
    if (masked) s += figure::svgMaskedPattern(L.stripe);
    const std::vector<double> tint = tintStrengths(f);
    // One group per tile, its texels row by row, runs of one colour merged.
    for (int k = 0; k < count(f); ++k) {
        const int index = slotIndex(f, k);
        const TileBox b = tileBox(f, L, k);
        const float* tile = L.positions.data() + tileSize(f) * static_cast<std::size_t>(index);
        const auto fill = [&](int i, int j) {
            const float v = tile[static_cast<std::size_t>(i) * static_cast<std::size_t>(f.sideKeys) + static_cast<std::size_t>(j)];
            return core::isMaskedTexel(v) ? std::string("url(#masked)") : figure::hex(colourAt(f, v));
        };
        s += "<g id=\"tile-" + std::to_string(f.firstLayer + index / f.heads + 1) + "-" + std::to_string(index % f.heads + 1) +
             "\" shape-rendering=\"crispEdges\">\n";
        for (int i = 0; i < f.side; ++i)
            figure::appendCellRowSvg(s, b.x, b.y + i * L.cell, L.cell, f.sideKeys, true, [&](int j) { return fill(i, j); });
        if (!tint.empty())
            s += "<rect class=\"tint\" x=\"" + std::to_string(b.x) + "\" y=\"" + std::to_string(b.y + L.tileH + 2) + "\" width=\"" +
                 std::to_string(tintBarWidth(L, tint[static_cast<std::size_t>(index)])) + "\" height=\"" +
                 std::to_string(tintBarHeight(L)) + "\" fill=\"" + figure::hex(tintColour(tint[static_cast<std::size_t>(index)])) +
                 "\" fill-opacity=\"1\"/>\n";
        s += "</g>\n";
    }
    figure::appendColourBarSvg(s, f.colormap, L.barX, L.barY, kBarW, L.barH);
    return s;
}

constexpr figure::Drawing<ModelViewFigure, Layout> kDrawing{validate, layOut, drawPng, drawSvg};

}  // namespace

std::string renderModelViewPng(const ModelViewFigure& f) { return kDrawing.draw(f, figure::FileType::Png); }

std::string renderModelViewSvg(const ModelViewFigure& f) { return kDrawing.draw(f, figure::FileType::Svg); }

std::string encodeModelView(const std::string& path, const ModelViewFigure& f) { return kDrawing.encode(path, f); }

TileBox modelViewTile(const ModelViewFigure& f, int slot) {
    validate(f);
    const figure::FigureFonts fonts;
    return tileBox(f, layOut(f, fonts), slot);
}

}  // namespace attnviz::render
