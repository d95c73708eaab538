// User text on its way to ImGui, bounded and made visible. Debian's Dear ImGui 1.86 indexes a
// window's vertices with 16 bits and ImFont::RenderText reserves 4 vertices per byte of one call:
// a token, name or lesson line of more than ~16,000 bytes in one call aborts the app. So every
// panel draws text that came from a user (tokens, scenario names and descriptions, lesson text,
// messages that quote them) through these: labels are cut to a few glyphs or to a width, long
// texts go to ImGui in pieces of at most kPieceBytes, tooltips show at most kTooltipGlyphs.
#pragma once

#include <imgui.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace attnviz::widgets {

inline constexpr std::size_t kLabelGlyphs = 40;         // a token as a label: axis, chip, caption
inline constexpr std::size_t kTitleGlyphs = 200;        // a name or title: its width decides first
inline constexpr std::size_t kTooltipGlyphs = 500;      // a whole token on hover
inline constexpr std::size_t kLongTextGlyphs = 100000;  // a lesson text drawn whole, in pieces
inline constexpr std::size_t kPieceBytes = 2000;        // one ImGui call of a long text

// ---- pure text: no ImGui needed ----

// Code points in `text` (an invalid byte counts as one).
std::size_t codepointCount(std::string_view text);

// `text` as it is shown, cut to at most `maxGlyphs` code points with "…" when it is longer:
// whole UTF-8 sequences only (a combining mark stays with its letter); control characters as
// escapes (\t, \n, \r, \x01, \x7F: DejaVu has no Control Pictures), other invisible characters
// (zero-width, bidi controls, C1) as <U+200B>, bytes that are not UTF-8 as \xNN, a combining
// mark with no letter before it on a dotted circle (◌́), and text of only spaces as ␣ (⇥, ↵).
// Non-empty text never gives an empty or blank result. `multiline` keeps line breaks and tabs
// for wrapped text; a label is one line.
struct Clipped {
    std::string text;
    bool cut = false;  // "…" was appended
};
Clipped clipText(std::string_view text, std::size_t maxGlyphs, bool multiline);
// A one-line label as drawn: clipText(text, maxGlyphs, false).text in visual order, Arabic joined
// and emoji in the atlas's slots (app::atlasText). Give it to ImGui, never to another of these.
std::string clipLabel(std::string_view text, std::size_t maxGlyphs = kLabelGlyphs);
// What a tooltip shows of `text`: the first kTooltipGlyphs, then "… (40,000 characters)".
std::string tooltipBody(std::string_view text, std::size_t maxGlyphs = kTooltipGlyphs);

// `text` in consecutive pieces of at most `maxBytes` bytes (>= 4), each ending at a line
// break, else a space, else a UTF-8 boundary that does not separate a combining mark from its
// letter; a line break or space a piece ends at belongs to neither piece.
std::vector<std::string_view> splitPieces(std::string_view text, std::size_t maxBytes = kPieceBytes);

// ---- with ImGui: measured in the current font ----

// A label no wider than `maxWidth` pixels (and at most `maxGlyphs`): "…" replaces what does not
// fit; "…" alone when nothing else fits.
std::string fitLabel(std::string_view text, float maxWidth, std::size_t maxGlyphs = kLabelGlyphs);
// fitLabel before it is shaped: the logical text (its prefix and "…"), to compose into a longer
// label that is then shaped once (flowText("Query 3 \"" + fitLogical(token, w) + "\"")).
std::string fitLogical(std::string_view text, float maxWidth, std::size_t maxGlyphs = kLabelGlyphs);
// A one-line label that says how long the text was when it is cut: "aaa… (40,000 characters)",
// in logical order (not yet shaped for drawing): a part of a tooltip's text, which showTooltip shapes.
std::string labelWithLength(std::string_view text, std::size_t maxGlyphs = kLabelGlyphs);
// `shown` for a widget that takes "##" as the start of its ID (combo previews, menu items): the
// marks are kept apart by a word joiner (U+2060, drawn as nothing), so "##" shows as typed.
std::string escapeIdMarks(std::string shown);

// ImGui::TextUnformatted of a label (in `colour` when given).
void label(std::string_view text, std::size_t maxGlyphs = kLabelGlyphs);
void labelColored(const ImVec4& colour, std::string_view text, std::size_t maxGlyphs = kLabelGlyphs);
// Wrapped at the window's edge (or `wrapWidth` pixels on), at most `maxGlyphs` (then
// "… (N characters)"), in pieces: a piece outside the window is skipped by ImGui's clipping, so
// a long text costs only what is on screen. Returns whether the text was cut.
bool wrappedText(std::string_view text, std::size_t maxGlyphs = kLongTextGlyphs, float wrapWidth = 0.0f);
bool wrappedTextColored(const ImVec4& colour, std::string_view text, std::size_t maxGlyphs = kLongTextGlyphs, float wrapWidth = 0.0f);
// Text already shaped (tooltipBody, fitLabel, fitWrapped of them) wrapped at the window's edge (or
// `wrapWidth` pixels on), in pieces, in `colour` when given: never shaped a second time.
void shownWrapped(std::string_view shown, const ImVec4* colour = nullptr, float wrapWidth = 0.0f);
// A row of items that wraps rather than running past the window's right edge: call before each
// item after the first with the item's width; it stays on the line when it fits there.
void sameLineIfFits(float width);
// Short texts in a flowing row (sameLineIfFits before each but the first of the row), each cut
// with "…" (the whole in a tooltip) only when a line of its own is too narrow for it.
void flowText(std::string_view text, bool first = false);
void flowTextDisabled(std::string_view text, bool first = false);
// The longest start of `text` (then "…") that, wrapped at `width`, is at most `height` tall.
std::string fitWrapped(std::string_view text, float width, float height);
// A remark in the disabled colour on the current line only if it fits there whole; else left
// out (it says nothing the panel needs).
void remarkIfFits(std::string_view text);

// A button showing `shown` (a label already clipped or fitted) as it is, "##" included; `id`
// tells buttons with the same text apart.
bool button(std::string_view shown, const std::string& id);
// A tooltip of tooltipBody(text, maxGlyphs), wrapped at 28 ems: `hoverTooltip` on the item just
// drawn when it is hovered, `showTooltip` now.
void hoverTooltip(std::string_view text, std::size_t maxGlyphs = kTooltipGlyphs);
void showTooltip(std::string_view text, std::size_t maxGlyphs = kTooltipGlyphs);

}  // namespace attnviz::widgets
