// Heatmap figures: one layout pass measures everything with the real font, then two back ends
// draw the same boxes: a raster (PNG) and vector SVG. Long because both back ends share the
// layout's private types; each part is a numbered section.
#include "app/render/heatmap_image.hpp"

#include "app/render/raster.hpp"
#include "core/attention/attention.hpp"
#include "core/base/error.hpp"
#include "core/base/files.hpp"
#include "core/base/format.hpp"
#include "core/text/tokenizer.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>

namespace attnviz::render {
namespace {

// ---- 1. Sizes and style -----------------------------------------------------------------------

constexpr int kTargetMatrixSide = 720;  // automatic cells aim for a matrix about this wide
constexpr int kMinAutoCell = 2, kMaxAutoCell = 64;
// Automatic cells drop to 1 px only above 4096 tokens, where 2 px would pass this side.
constexpr int kMaxMatrixSide = 8192;
constexpr int kMinLabelPitch = 12;     // px between drawn labels; below, every k-th label
constexpr int kMinValueCell = 28;      // cells at least this big print their weight
constexpr float kMaxLabelWidth = 150;  // longer labels end in "…"
constexpr int kMargin = 24;

constexpr float kTitlePx = 20, kCaptionPx = 15, kTickPx = 13, kMaxLabelPx = 15, kMaxValuePx = 14;
constexpr core::Rgb kText{34, 34, 34}, kCaption{51, 51, 51}, kFrame{120, 120, 120};
constexpr core::Rgb kBlack{0, 0, 0}, kWhite{255, 255, 255};
constexpr const char* kRowCaption = "query (attending)";
constexpr const char* kColCaption = "key (attended-to)";
constexpr const char* kBarCaption = "attention weight";

enum class Anchor { Start, Middle, End };

// A piece of text both back ends draw: (x, y) is on the baseline; for Up text the baseline
// runs upwards and the anchor refers to that direction.
struct TextItem {
    std::string text;
    float x, y, px;
    Anchor anchor;
    core::Rgb colour;
    bool up = false, bold = false;
};

struct Line {  // a 1-px-wide axis-aligned line or frame edge, as a filled rectangle
    int x, y, w, h;
    core::Rgb colour;
};

// A tick's value to three significant digits ("0.025", "0.1").
std::string significant(float v) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.3g", static_cast<double>(v));
    return buffer;
}

struct Layout {
    core::Mat colours;  // [rows, cols] each cell's position on the colour bar, 0 … 1 (the figure's scale)
    core::ColourScale scale = core::ColourScale::Fixed;  // resolved
    float logFloor = 0.01f;
    int rows = 0, cols = 0, cell = 0;
    int width = 0, height = 0;
    int matrixX = 0, matrixY = 0;
    int stripe = 2;  // hatch stripe width along x
    int barX = 0, barY = 0, barW = 16, barH = 0;
    std::vector<TextItem> texts;
    std::vector<Line> lines;
};

struct FigureFonts {
    Font regular{"DejaVuSans.ttf"};
    Font bold = loadBold();

    static Font loadBold() {
        try {
            return Font("DejaVuSans-Bold.ttf");
        } catch (const core::InputError&) {
            return Font("DejaVuSans.ttf");
        }
    }
    const Font& of(const TextItem& t) const { return t.bold ? bold : regular; }
};

// WCAG relative luminance of an sRGB colour, 0 (black) .. 1 (white).
double luminance(core::Rgb c) {
    const auto linear = [](std::uint8_t v) {
        const double s = v / 255.0;
        return s <= 0.04045 ? s / 12.92 : std::pow((s + 0.055) / 1.055, 2.4);
    };
    return 0.2126 * linear(c.r) + 0.7152 * linear(c.g) + 0.0722 * linear(c.b);
}

// Black text on cells brighter than the contrast crossover (L = 0.179), white on darker ones.
core::Rgb contrastingText(core::Rgb cell) { return luminance(cell) > 0.179 ? kBlack : kWhite; }

bool isBlocked(const HeatmapFigure& f, int i, int j) { return f.blocked.size() != 0 && f.blocked(i, j); }

// ---- 2. Validation and cell size --------------------------------------------------------------

void validate(const HeatmapFigure& f) {
    const auto rows = f.weights.rows(), cols = f.weights.cols();
    if (rows == 0 || cols == 0) throw core::InputError("weights", "empty matrix (" + core::shapeString(rows, cols) + "); nothing to draw");
    if (!f.rowLabels.empty() && static_cast<Eigen::Index>(f.rowLabels.size()) != rows)
        throw core::InputError("row labels",
                               "expected " + std::to_string(rows) + " (one per query row), got " + std::to_string(f.rowLabels.size()));
    if (!f.colLabels.empty() && static_cast<Eigen::Index>(f.colLabels.size()) != cols)
        throw core::InputError("column labels",
                               "expected " + std::to_string(cols) + " (one per key column), got " + std::to_string(f.colLabels.size()));
    if (f.blocked.size() != 0 && (f.blocked.rows() != rows || f.blocked.cols() != cols))
        throw core::InputError(
            "mask", "expected " + core::shapeString(rows, cols) + ", got " + core::shapeString(f.blocked.rows(), f.blocked.cols()));
    const auto longest = std::max(rows, cols);
    if (longest > kMaxMatrixSide)
        throw core::InputError("weights", core::shapeString(rows, cols) + " is too large for an image (at most " +
                                              std::to_string(kMaxMatrixSide) + " rows and columns)");
    if (f.cellSize < 0)
        throw core::InputError("cell size", "must be 0 (automatic) or a number of pixels, got " + std::to_string(f.cellSize));
    if (f.cellSize > 0 && longest * f.cellSize > kMaxMatrixSide)
        throw core::InputError("cell size", std::to_string(f.cellSize) + " px makes the matrix too large (at most " +
                                                std::to_string(kMaxMatrixSide) + " px per side)");
}

int chooseCell(const HeatmapFigure& f) {
    if (f.cellSize > 0) return f.cellSize;
    const int longest = static_cast<int>(std::max(f.weights.rows(), f.weights.cols()));
    const int cell = std::clamp(kTargetMatrixSide / longest, kMinAutoCell, kMaxAutoCell);
    return longest * cell <= kMaxMatrixSide ? cell : std::max(1, kMaxMatrixSide / longest);
}

// 1 when every label fits; else the smallest of 2, 5, 10, 20, 50, … that spaces labels readably.
int labelStride(int cell) {
    if (cell >= kMinLabelPitch) return 1;
    for (int decade = 1;; decade *= 10)
        for (const int k : {2 * decade, 5 * decade, 10 * decade})
            if (cell * k >= kMinLabelPitch) return k;
}

// The label as drawn: index when there are no labels; a white-space token (character-level
// tokenizers make them) as visible symbols, ␣ ↵ ⇥; at most kMaxLabelWidth wide.
std::string labelText(const std::vector<std::string>& labels, int i, const Font& font, float px) {
    const std::string text = labels.empty() ? std::to_string(i) : core::visibleToken(labels[static_cast<std::size_t>(i)]);
    return font.ellipsize(text, px, kMaxLabelWidth);
}

int ceilPx(float v) { return static_cast<int>(std::ceil(v)); }

// ---- 3. Layout --------------------------------------------------------------------------------
// Left to right: row caption | row labels | matrix | Σ column | colour bar, ticks, caption.
// Top to bottom: title | matrix | column labels | column caption.

Layout layOut(const HeatmapFigure& f, const FigureFonts& fonts) {
    const Font& font = fonts.regular;
    Layout L;
    L.rows = static_cast<int>(f.weights.rows());
    L.cols = static_cast<int>(f.weights.cols());
    // The cells' colours under the figure's scale, masked cells left out of the largest weight.
    float largest = 0.0f;
    std::vector<float> positions(static_cast<std::size_t>(L.rows) * static_cast<std::size_t>(L.cols));
    for (int i = 0; i < L.rows; ++i)
        for (int j = 0; j < L.cols; ++j) {
            const bool masked = isBlocked(f, i, j);
            if (!masked) largest = std::max(largest, f.weights(i, j));
            positions[static_cast<std::size_t>(i) * static_cast<std::size_t>(L.cols) + static_cast<std::size_t>(j)] =
                masked ? core::kMaskedTexel : f.weights(i, j);
        }
    L.scale = core::resolveScale(f.scale, largest);
    L.logFloor = core::logFloor(L.cols);
    core::toScalePositions(L.scale, positions.data(), L.rows, L.cols, largest, L.logFloor);
    L.colours = Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(positions.data(), L.rows, L.cols);
    // Ticks in the scale's own terms: weights (0 … 1, or 0 … the largest), fractions of each
    // row's largest, or decades.
    std::vector<std::pair<float, std::string>> ticks;  // position on the bar, label
    const int decades = static_cast<int>(std::lround(-std::log10(L.logFloor)));
    if (L.scale == core::ColourScale::Log)
        for (int k = 0; k <= decades; ++k)
            ticks.emplace_back(static_cast<float>(k) / static_cast<float>(decades),
                               k == decades ? "1" : "1e-" + std::to_string(decades - k));
    else
        for (const float v : {0.0f, 0.25f, 0.5f, 0.75f, 1.0f})
            ticks.emplace_back(v, L.scale == core::ColourScale::Stretch ? significant(v * largest) : core::formatFixed(v, 2));
    const char* caption = L.scale == core::ColourScale::Stretch ? "attention weight (stretched)"
                          : L.scale == core::ColourScale::Rows  ? "weight ÷ its row's largest"
                          : L.scale == core::ColourScale::Log   ? "attention weight (log scale)"
                                                                : kBarCaption;
    L.cell = chooseCell(f);
    L.stripe = std::clamp(L.cell / 6, 2, 8);
    const int cell = L.cell, matrixW = L.cols * cell, matrixH = L.rows * cell;
    const int stride = labelStride(cell), pitch = stride * cell;
    const float labelPx = std::clamp(std::floor(static_cast<float>(pitch) * 0.8f), 10.0f, kMaxLabelPx);
    const auto lineH = [&](float px) { return ceilPx(font.ascent(px) + font.descent(px)); };
    const auto centreBaseline = [](float centre, float px) { return centre + 0.36f * px; };

    // Labels: every stride-th row and column; columns turn upright when any is too wide.
    std::vector<int> rowIdx, colIdx;
    for (int i = 0; i < L.rows; i += stride) rowIdx.push_back(i);
    for (int j = 0; j < L.cols; j += stride) colIdx.push_back(j);
    std::vector<std::string> rowText, colText, sumText;
    float rowLabelW = 0, colLabelW = 0, sumW = f.showRowSums ? font.textWidth("\u03A3", labelPx) : 0;
    for (const int i : rowIdx) {
        rowText.push_back(labelText(f.rowLabels, i, font, labelPx));
        rowLabelW = std::max(rowLabelW, font.textWidth(rowText.back(), labelPx));
        if (f.showRowSums) {
            sumText.push_back(core::formatFixed(f.weights.row(i).sum(), 2));
            sumW = std::max(sumW, font.textWidth(sumText.back(), labelPx));
        }
    }
    for (const int j : colIdx) {
        colText.push_back(labelText(f.colLabels, j, font, labelPx));
        colLabelW = std::max(colLabelW, font.textWidth(colText.back(), labelPx));
    }
    const bool colsUp = colLabelW > static_cast<float>(pitch - 4);
    const int colLabelExtent = colsUp ? ceilPx(colLabelW) : lineH(labelPx);
    const int tickLen = stride > 1 ? 4 : 0;  // ticks show which row a sparse label belongs to

    // Horizontal positions.
    int x = kMargin;
    const int rowCaptionBaseline = x + ceilPx(font.ascent(kCaptionPx));
    x += lineH(kCaptionPx) + 10;
    const int rowLabelRight = x + ceilPx(rowLabelW);
    L.matrixX = rowLabelRight + 6 + tickLen;
    x = L.matrixX + matrixW;
    const int sumRight = f.showRowSums ? x + 12 + ceilPx(sumW) : x;
    L.barX = sumRight + 28;
    const float barTickX = static_cast<float>(L.barX + L.barW + 8);
    float tickW = font.textWidth("0.00", kTickPx);
    for (const auto& tick : ticks) tickW = std::max(tickW, font.textWidth(tick.second, kTickPx));
    x = static_cast<int>(barTickX) + ceilPx(tickW) + 10;
    const int barCaptionBaseline = x + ceilPx(font.ascent(kTickPx + 1));
    L.width = x + lineH(kTickPx + 1) + kMargin;

    // Vertical positions; the matrix moves down if the row caption is taller than it.
    const float titleW = f.title.empty() ? 0 : fonts.bold.textWidth(core::sanitizeUtf8(f.title), kTitlePx);
    const int titleH = f.title.empty() ? 0 : lineH(kTitlePx) + 14;
    const int rowCaptionW = ceilPx(font.textWidth(kRowCaption, kCaptionPx));
    L.matrixY = kMargin + titleH + std::max(0, rowCaptionW / 2 - matrixH / 2);
    L.barY = L.matrixY;
    L.barH = std::max(matrixH, std::max(160, ceilPx(font.textWidth(caption, kTickPx + 1)) + 20));
    int y = L.matrixY + matrixH + 6 + tickLen;
    const int colLabelTop = y;
    y += colLabelExtent + 10;
    const int colCaptionBaseline = y + ceilPx(font.ascent(kCaptionPx));
    y += lineH(kCaptionPx);
    L.height = std::max({y + kMargin, L.barY + L.barH + lineH(kTickPx) / 2 + kMargin, L.matrixY + matrixH / 2 + rowCaptionW / 2 + kMargin});

    // Title centred over the matrix, shifted or widened so it never leaves the figure.
    if (!f.title.empty()) {
        float cx = static_cast<float>(L.matrixX) + static_cast<float>(matrixW) / 2.0f;
        cx = std::max(cx, static_cast<float>(kMargin) + titleW / 2.0f);
        L.width = std::max(L.width, ceilPx(cx + titleW / 2.0f) + kMargin);
        L.texts.push_back({core::sanitizeUtf8(f.title), cx, static_cast<float>(kMargin) + font.ascent(kTitlePx), kTitlePx, Anchor::Middle,
                           kText, false, true});
    }

    // Captions.
    const float matrixMidY = static_cast<float>(L.matrixY) + static_cast<float>(matrixH) / 2.0f;
    L.texts.push_back({kRowCaption, static_cast<float>(rowCaptionBaseline), matrixMidY, kCaptionPx, Anchor::Middle, kCaption, true});
    L.texts.push_back({kColCaption, static_cast<float>(L.matrixX) + static_cast<float>(matrixW) / 2.0f,
                       static_cast<float>(colCaptionBaseline), kCaptionPx, Anchor::Middle, kCaption});

    // Row labels (right-aligned), row sums, column labels.
    for (std::size_t n = 0; n < rowIdx.size(); ++n) {
        const float cy = static_cast<float>(L.matrixY + rowIdx[n] * cell) + static_cast<float>(cell) / 2.0f;
        L.texts.push_back({rowText[n], static_cast<float>(rowLabelRight), centreBaseline(cy, labelPx), labelPx, Anchor::End, kText});
        if (f.showRowSums)
            L.texts.push_back({sumText[n], static_cast<float>(sumRight), centreBaseline(cy, labelPx), labelPx, Anchor::End, kText});
        if (tickLen) L.lines.push_back({L.matrixX - 1 - tickLen, static_cast<int>(cy), tickLen, 1, kFrame});
    }
    if (f.showRowSums)
        L.texts.push_back({"\u03A3", static_cast<float>(sumRight) - sumW / 2.0f, static_cast<float>(colLabelTop) + font.ascent(labelPx),
                           labelPx, Anchor::Middle, kText});
    for (std::size_t n = 0; n < colIdx.size(); ++n) {
        const float cx = static_cast<float>(L.matrixX + colIdx[n] * cell) + static_cast<float>(cell) / 2.0f;
        if (colsUp)
            L.texts.push_back(
                {colText[n], centreBaseline(cx, labelPx), static_cast<float>(colLabelTop), labelPx, Anchor::End, kText, true});
        else L.texts.push_back({colText[n], cx, static_cast<float>(colLabelTop) + font.ascent(labelPx), labelPx, Anchor::Middle, kText});
        if (tickLen) L.lines.push_back({static_cast<int>(cx), L.matrixY + matrixH + 1, 1, tickLen, kFrame});
    }

    // Weights printed inside big enough cells, sized so "0.00" leaves a margin.
    const float valuePx = std::clamp(static_cast<float>(cell - 6) / font.textWidth("0.00", 1.0f), 8.0f, kMaxValuePx);
    if (f.showValues && cell >= kMinValueCell)
        for (int i = 0; i < L.rows; ++i)
            for (int j = 0; j < L.cols; ++j) {
                if (isBlocked(f, i, j)) continue;
                const float w = f.weights(i, j);
                const core::Rgb c = core::colormapColor(f.colormap, L.colours(i, j), 0.0f, 1.0f);
                L.texts.push_back({core::formatFixed(w, 2), static_cast<float>(L.matrixX + j * cell) + cell / 2.0f,
                                   centreBaseline(static_cast<float>(L.matrixY + i * cell) + cell / 2.0f, valuePx), valuePx, Anchor::Middle,
                                   contrastingText(c)});
            }

    // Colour bar ticks and caption; frames just outside the matrix and the bar.
    for (const auto& [v, label] : ticks) {
        const int ty = std::min(L.barY + L.barH - 1, L.barY + static_cast<int>(std::lround((1.0f - v) * L.barH)));
        L.lines.push_back({L.barX + L.barW, ty, 5, 1, kFrame});
        L.texts.push_back({label, barTickX, centreBaseline(static_cast<float>(ty), kTickPx), kTickPx, Anchor::Start, kText});
    }
    L.texts.push_back({caption, static_cast<float>(barCaptionBaseline), static_cast<float>(L.barY) + static_cast<float>(L.barH) / 2.0f,
                       kTickPx + 1, Anchor::Middle, kCaption, true});
    for (const auto& [bx, by, bw, bh] : {std::array{L.matrixX, L.matrixY, matrixW, matrixH}, std::array{L.barX, L.barY, L.barW, L.barH}}) {
        L.lines.push_back({bx - 1, by - 1, bw + 2, 1, kFrame});
        L.lines.push_back({bx - 1, by + bh, bw + 2, 1, kFrame});
        L.lines.push_back({bx - 1, by, 1, bh, kFrame});
        L.lines.push_back({bx + bw, by, 1, bh, kFrame});
    }
    return L;
}

// ---- 4. PNG -----------------------------------------------------------------------------------

std::string drawPng(const HeatmapFigure& f, const Layout& L, const FigureFonts& fonts) {
    Canvas canvas(L.width, L.height);
    for (int i = 0; i < L.rows; ++i)
        for (int j = 0; j < L.cols; ++j) {
            const int x = L.matrixX + j * L.cell, y = L.matrixY + i * L.cell;
            if (isBlocked(f, i, j)) canvas.hatchRect(x, y, L.cell, L.cell, L.stripe);
            else canvas.fillRect(x, y, L.cell, L.cell, core::colormapColor(f.colormap, L.colours(i, j), 0.0f, 1.0f));
        }
    const core::ColormapTable& table = core::colormapTable(f.colormap);
    for (int r = 0; r < L.barH; ++r) {  // top row = entry 255, bottom row = entry 0
        const long index = 255 - std::lround(r * 255.0 / (L.barH - 1));
        canvas.fillRect(L.barX, L.barY + r, L.barW, 1, table[static_cast<std::size_t>(index)]);
    }
    for (const Line& l : L.lines) canvas.fillRect(l.x, l.y, l.w, l.h, l.colour);
    for (const TextItem& t : L.texts) {
        const Font& font = fonts.of(t);
        const float w = font.textWidth(t.text, t.px);
        const float shift = t.anchor == Anchor::Start ? 0.0f : t.anchor == Anchor::Middle ? -w / 2.0f : -w;
        if (t.up) font.draw(canvas, t.text, t.x, t.y - shift, t.px, t.colour, TextDirection::Up);
        else font.draw(canvas, t.text, t.x + shift, t.y, t.px, t.colour);
    }
    return canvas.encodePng();
}

// ---- 5. SVG -----------------------------------------------------------------------------------

std::string hex(core::Rgb c) {
    char buffer[8];
    std::snprintf(buffer, sizeof buffer, "#%02x%02x%02x", c.r, c.g, c.b);
    return buffer;
}

// Two decimals at most, no trailing zeros: "12", "12.5", "12.25".
std::string num(double v) {
    std::string s = core::formatFixed(v, 2);
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
    return s == "-0" ? "0" : s;
}

// Text content for XML: markup characters escaped; controls (not allowed in XML 1.0) as spaces.
std::string xmlText(const std::string& utf8) {
    std::string out;
    for (std::size_t pos = 0; pos < utf8.size();) {
        const char32_t cp = core::decodeUtf8(utf8, pos);
        switch (cp) {
            case U'&': out += "&amp;"; break;
            case U'<': out += "&lt;"; break;
            case U'>': out += "&gt;"; break;
            case U'"': out += "&quot;"; break;
            case U'\'': out += "&apos;"; break;
            default:
                if (cp < 0x20 || cp == 0x7F) out += ' ';
                else if (cp == 0xFFFE || cp == 0xFFFF) core::appendUtf8(out, U'\uFFFD');
                else core::appendUtf8(out, cp);
        }
    }
    return out;
}

std::string drawSvg(const HeatmapFigure& f, const Layout& L) {
    const bool anyBlocked = f.blocked.size() != 0 && f.blocked.any();
    std::string s;
    s.reserve(static_cast<std::size_t>(L.rows) * static_cast<std::size_t>(L.cols) * 64 + 4096);
    s += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    s += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(L.width) + "\" height=\"" + std::to_string(L.height) +
         "\" viewBox=\"0 0 " + std::to_string(L.width) + " " + std::to_string(L.height) + "\">\n";
    if (anyBlocked) {
        // The raster's stripes: period 2·stripe along x at 45°, half ink, half paper.
        const double period = L.stripe * std::sqrt(2.0);
        s += "<defs><pattern id=\"masked\" patternUnits=\"userSpaceOnUse\" width=\"" + num(period) + "\" height=\"" + num(period) +
             "\" patternTransform=\"rotate(45)\"><rect width=\"" + num(period) + "\" height=\"" + num(period) + "\" fill=\"" +
             hex(core::kMaskedPaper) + "\"/><rect width=\"" + num(period / 2) + "\" height=\"" + num(period) + "\" fill=\"" +
             hex(core::kMaskedInk) + "\"/></pattern></defs>\n";
    }
    s += "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";

    // One rect per cell, row-major; above 512 columns, runs of equal colour merge into one rect.
    s += "<g id=\"cells\" shape-rendering=\"crispEdges\">\n";
    const bool merge = L.cols > 512;
    const auto fill = [&](int i, int j) {
        return isBlocked(f, i, j) ? std::string("url(#masked)") : hex(core::colormapColor(f.colormap, L.colours(i, j), 0.0f, 1.0f));
    };
    for (int i = 0; i < L.rows; ++i) {
        const std::string y = std::to_string(L.matrixY + i * L.cell), h = std::to_string(L.cell);
        for (int j = 0; j < L.cols;) {
            const std::string colour = fill(i, j);
            int run = 1;
            while (merge && j + run < L.cols && fill(i, j + run) == colour) ++run;
            s += "<rect x=\"" + std::to_string(L.matrixX + j * L.cell) + "\" y=\"" + y + "\" width=\"" + std::to_string(run * L.cell) +
                 "\" height=\"" + h + "\" fill=\"" + colour + "\"/>\n";
            j += run;
        }
    }
    s += "</g>\n";

    // Colour bar: one band per table entry, top = 1; bands overlap slightly so no seams show.
    s += "<g id=\"colour-bar\" shape-rendering=\"crispEdges\">\n";
    const core::ColormapTable& table = core::colormapTable(f.colormap);
    const double band = static_cast<double>(L.barH) / 256.0;
    for (int k = 0; k < 256; ++k)
        s += "<rect x=\"" + std::to_string(L.barX) + "\" y=\"" + num(L.barY + k * band) + "\" width=\"" + std::to_string(L.barW) +
             "\" height=\"" + num(k == 255 ? band : band + 0.5) + "\" fill=\"" + hex(table[static_cast<std::size_t>(255 - k)]) + "\"/>\n";
    s += "</g>\n<g id=\"axes\" shape-rendering=\"crispEdges\">\n";
    for (const Line& l : L.lines)
        s += "<rect x=\"" + std::to_string(l.x) + "\" y=\"" + std::to_string(l.y) + "\" width=\"" + std::to_string(l.w) + "\" height=\"" +
             std::to_string(l.h) + "\" fill=\"" + hex(l.colour) + "\"/>\n";
    s += "</g>\n<g id=\"text\">\n";
    for (const TextItem& t : L.texts) {
        const char* anchor = t.anchor == Anchor::Start ? "start" : t.anchor == Anchor::Middle ? "middle" : "end";
        s += "<text x=\"" + num(t.x) + "\" y=\"" + num(t.y) + "\" font-family=\"DejaVu Sans, sans-serif\" font-size=\"" + num(t.px) +
             "\" text-anchor=\"" + anchor + "\" fill=\"" + hex(t.colour) + "\"";
        if (t.bold) s += " font-weight=\"bold\"";
        if (t.up) s += " transform=\"rotate(-90 " + num(t.x) + " " + num(t.y) + ")\"";
        s += ">" + xmlText(t.text) + "</text>\n";
    }
    s += "</g>\n</svg>\n";
    return s;
}

}  // namespace

std::string renderHeatmapPng(const HeatmapFigure& figure) {
    validate(figure);
    const FigureFonts fonts;
    return drawPng(figure, layOut(figure, fonts), fonts);
}

std::string renderHeatmapSvg(const HeatmapFigure& figure) {
    validate(figure);
    const FigureFonts fonts;  // the layout measures text with the same font the SVG names
    return drawSvg(figure, layOut(figure, fonts));
}

bool heatmapIsPng(const std::string& path) {
    std::string ext = std::filesystem::path(path).extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
    if (ext != ".png" && ext != ".svg") throw core::InputError(path, "unknown image type; use .png or .svg");
    return ext == ".png";
}

std::string encodeHeatmap(const std::string& path, const HeatmapFigure& figure) {
    const bool png = heatmapIsPng(path);
    try {
        return png ? renderHeatmapPng(figure) : renderHeatmapSvg(figure);
    } catch (const core::InputError& e) {
        throw e.within(path);
    }
}

void exportHeatmap(const std::string& path, const HeatmapFigure& figure) { core::writeFileAtomic(path, encodeHeatmap(path, figure)); }

}  // namespace attnviz::render
