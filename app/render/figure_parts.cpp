#include "app/render/figure_parts.hpp"

#include "app/fonts/font_stack.hpp"
#include "core/base/error.hpp"
#include "core/base/files.hpp"
#include "core/base/format.hpp"
#include "core/text/tokenizer.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace attnviz::render::figure {

Font FigureFonts::loadBold() {
    try {
        return Font("DejaVuSans-Bold.ttf");
    } catch (const core::InputError&) {
        return Font("DejaVuSans.ttf");
    }
}

int ceilPx(float v) { return static_cast<int>(std::ceil(v)); }

int lineHeight(const Font& font, float px) { return ceilPx(font.ascent(px) + font.descent(px)); }

float centredBaseline(float centre, float px) { return centre + 0.36f * px; }

core::Rgb contrastingText(core::Rgb c) {
    const auto linear = [](std::uint8_t v) {
        const double s = v / 255.0;
        return s <= 0.04045 ? s / 12.92 : std::pow((s + 0.055) / 1.055, 2.4);
    };
    const double luminance = 0.2126 * linear(c.r) + 0.7152 * linear(c.g) + 0.0722 * linear(c.b);
    return luminance > 0.179 ? kBlack : kWhite;
}

std::string labelText(const std::vector<std::string>& labels, int i, const Font& font, float px, float maxWidth) {
    const std::string text = labels.empty() ? std::to_string(i) : core::visibleToken(labels[static_cast<std::size_t>(i)]);
    return font.ellipsize(text, px, maxWidth);
}

std::string significant(float v) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.3g", static_cast<double>(v));
    return buffer;
}

int decimalsFor(double step) {
    for (int d = 0; d < 9; ++d) {
        const double scaled = step * std::pow(10.0, d);
        if (std::abs(scaled - std::round(scaled)) < 1e-6 * scaled) return d;
    }
    return 9;
}

void frameBox(std::vector<Line>& lines, int x, int y, int w, int h, core::Rgb colour) {
    lines.push_back({x - 1, y - 1, w + 2, 1, colour});
    lines.push_back({x - 1, y + h, w + 2, 1, colour});
    lines.push_back({x - 1, y, 1, h, colour});
    lines.push_back({x + w, y, 1, h, colour});
}

ColourBarScale colourBarScale(const core::ScaleChoice& choice, float logFloor) {
    const core::ColourScale resolved = choice.resolved;
    const float largest = choice.top;
    ColourBarScale bar;
    if (resolved == core::ColourScale::Log) {
        const int decades = static_cast<int>(std::lround(-std::log10(logFloor)));
        for (int k = 0; k <= decades; ++k)
            bar.ticks.emplace_back(static_cast<float>(k) / static_cast<float>(decades),
                                   k == decades ? "1" : "1e-" + std::to_string(decades - k));
    } else {
        for (const float v : {0.0f, 0.25f, 0.5f, 0.75f, 1.0f})
            bar.ticks.emplace_back(v, resolved == core::ColourScale::Stretch ? significant(v * largest) : core::formatFixed(v, 2));
    }
    const std::string clipped = core::clipCaption(choice);
    bar.caption = !clipped.empty()                         ? "attention weight (" + clipped + ")"
                  : resolved == core::ColourScale::Stretch ? "attention weight (stretched)"
                  : resolved == core::ColourScale::Rows    ? "weight ÷ its row's largest"
                  : resolved == core::ColourScale::Log     ? "attention weight (log scale)"
                                                           : "attention weight";
    return bar;
}

// ---- Raster -----------------------------------------------------------------------------------

void drawColourBar(Canvas& canvas, core::ColormapKind kind, int x, int y, int w, int h) {
    const core::ColormapTable& table = core::colormapTable(kind);
    for (int r = 0; r < h; ++r) {  // top row = entry 255, bottom row = entry 0
        const long index = h > 1 ? 255 - std::lround(r * 255.0 / (h - 1)) : 255;
        canvas.fillRect(x, y + r, w, 1, table[static_cast<std::size_t>(index)]);
    }
}

void drawLines(Canvas& canvas, const std::vector<Line>& lines) {
    for (const Line& l : lines) canvas.fillRect(l.x, l.y, l.w, l.h, l.colour);
}

void drawTexts(Canvas& canvas, const std::vector<TextItem>& texts, const FigureFonts& fonts) {
    for (const TextItem& t : texts) {
        const Font& font = fonts.of(t);
        const float w = font.textWidth(t.text, t.px);
        const float shift = t.anchor == Anchor::Start ? 0.0f : t.anchor == Anchor::Middle ? -w / 2.0f : -w;
        if (t.up) font.draw(canvas, t.text, t.x, t.y - shift, t.px, t.colour, TextDirection::Up);
        else font.draw(canvas, t.text, t.x + shift, t.y, t.px, t.colour);
    }
}

// ---- SVG --------------------------------------------------------------------------------------

std::string hex(core::Rgb c) {
    char buffer[8];
    std::snprintf(buffer, sizeof buffer, "#%02x%02x%02x", c.r, c.g, c.b);
    return buffer;
}

std::string num(double v) {
    std::string s = core::formatFixed(v, 2);
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
    return s == "-0" ? "0" : s;
}

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

std::string svgOpen(int width, int height, const std::string& defs) {
    const std::string w = std::to_string(width), h = std::to_string(height);
    return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + w + "\" height=\"" + h +
           "\" viewBox=\"0 0 " + w + " " + h + "\">\n" + defs + "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
}

std::string svgMaskedPattern(int stripe) {
    // The raster's stripes: period 2·stripe along x at 45°, half ink, half paper.
    const double period = stripe * std::sqrt(2.0);
    return "<defs><pattern id=\"masked\" patternUnits=\"userSpaceOnUse\" width=\"" + num(period) + "\" height=\"" + num(period) +
           "\" patternTransform=\"rotate(45)\"><rect width=\"" + num(period) + "\" height=\"" + num(period) + "\" fill=\"" +
           hex(core::kMaskedPaper) + "\"/><rect width=\"" + num(period / 2) + "\" height=\"" + num(period) + "\" fill=\"" +
           hex(core::kMaskedInk) + "\"/></pattern></defs>\n";
}

void appendColourBarSvg(std::string& svg, core::ColormapKind kind, int x, int y, int w, int h) {
    // Bands overlap slightly so that no seams show between them.
    svg += "<g id=\"colour-bar\" shape-rendering=\"crispEdges\">\n";
    const core::ColormapTable& table = core::colormapTable(kind);
    const double band = static_cast<double>(h) / 256.0;
    for (int k = 0; k < 256; ++k)
        svg += "<rect x=\"" + std::to_string(x) + "\" y=\"" + num(y + k * band) + "\" width=\"" + std::to_string(w) + "\" height=\"" +
               num(k == 255 ? band : band + 0.5) + "\" fill=\"" + hex(table[static_cast<std::size_t>(255 - k)]) + "\"/>\n";
    svg += "</g>\n";
}

void appendCellRowSvg(std::string& svg, int x, int y, int cell, int cols, bool merge, const std::function<std::string(int)>& fill) {
    const std::string top = std::to_string(y), side = std::to_string(cell);
    for (int j = 0; j < cols;) {
        const std::string colour = fill(j);
        int run = 1;
        while (merge && j + run < cols && fill(j + run) == colour) ++run;
        svg.append("<rect x=\"").append(std::to_string(x + j * cell)).append("\" y=\"").append(top);
        svg.append("\" width=\"").append(std::to_string(run * cell)).append("\" height=\"").append(side);
        svg.append("\" fill=\"").append(colour).append("\"/>\n");
        j += run;
    }
}

void appendLinesSvg(std::string& svg, const std::vector<Line>& lines, const std::string& id) {
    svg += "<g id=\"" + id + "\" shape-rendering=\"crispEdges\">\n";
    for (const Line& l : lines)
        svg += "<rect x=\"" + std::to_string(l.x) + "\" y=\"" + std::to_string(l.y) + "\" width=\"" + std::to_string(l.w) + "\" height=\"" +
               std::to_string(l.h) + "\" fill=\"" + hex(l.colour) + "\"/>\n";
    svg += "</g>\n";
}

void appendTextsSvg(std::string& svg, const std::vector<TextItem>& texts, const std::string& id) {
    // One font stack for the group: the faces the PNG draws with, so a viewer with them installed
    // draws the same glyphs; nothing is embedded.
    svg += "<g id=\"" + id + "\" font-family=\"" + fonts::svgFontFamily() + "\">\n";
    for (const TextItem& t : texts) {
        const char* anchor = t.anchor == Anchor::Start ? "start" : t.anchor == Anchor::Middle ? "middle" : "end";
        svg += "<text x=\"" + num(t.x) + "\" y=\"" + num(t.y) + "\" font-size=\"" + num(t.px) + "\" text-anchor=\"" + anchor +
               "\" fill=\"" + hex(t.colour) + "\"";
        if (t.bold) svg += " font-weight=\"bold\"";
        if (t.up) svg += " transform=\"rotate(-90 " + num(t.x) + " " + num(t.y) + ")\"";
        svg += ">" + xmlText(t.text) + "</text>\n";
    }
    svg += "</g>\n";
}

int colourBarTicks(std::vector<Line>& lines, std::vector<TextItem>& texts, const Font& font, const ColourBarScale& bar, int x, int y, int w,
                   int h) {
    const float tickX = static_cast<float>(x + w + 8);
    float tickW = 0;
    for (const auto& [v, label] : bar.ticks) {
        const int ty = std::min(y + h - 1, y + static_cast<int>(std::lround((1.0f - v) * static_cast<float>(h))));
        lines.push_back({x + w, ty, 5, 1, kFrame});
        texts.push_back({label, tickX, centredBaseline(static_cast<float>(ty), kTickPx), kTickPx, Anchor::Start, kText});
        tickW = std::max(tickW, font.textWidth(label, kTickPx));
    }
    const int captionX = static_cast<int>(tickX) + ceilPx(tickW) + 10;
    texts.push_back({bar.caption, static_cast<float>(captionX) + font.ascent(kTickPx + 1),
                     static_cast<float>(y) + static_cast<float>(h) / 2.0f, kTickPx + 1, Anchor::Middle, kCaption, true});
    frameBox(lines, x, y, w, h, kFrame);
    return captionX + lineHeight(font, kTickPx + 1);
}

void titleText(std::vector<TextItem>& texts, const FigureFonts& fonts, const std::string& title, float width, int& y) {
    if (title.empty()) return;
    y += ceilPx(kTitlePx);
    texts.push_back({fonts.bold.ellipsize(title, kTitlePx, width), static_cast<float>(kMargin), static_cast<float>(y), kTitlePx,
                     Anchor::Start, kText, false, true});
    y += 8;
}

std::string closeSvg(std::string& svg, const std::vector<TextItem>& texts) {
    appendTextsSvg(svg, texts);
    svg += "</svg>\n";
    return std::move(svg);
}

FileType fileType(const std::string& path, bool json) {
    const std::string ext = core::lowerExtension(path);
    if (ext == ".png") return FileType::Png;
    if (ext == ".svg") return FileType::Svg;
    if (json && ext == ".json") return FileType::Json;
    throw core::InputError(path, json ? "unknown type; use .png, .svg or .json" : "unknown image type; use .png or .svg");
}

std::string encodeAs(const std::string& path, const std::function<std::string(FileType)>& draw, bool json) {
    const FileType type = fileType(path, json);
    try {
        return draw(type);
    } catch (const core::InputError& e) {
        throw e.within(path);
    }
}

}  // namespace attnviz::render::figure
