// The text helpers every panel draws user text through: labels cut at whole characters and
// never blank, control characters visible, long texts in bounded pieces that lose nothing.
#include "app/fonts/font_atlas.hpp"
#include "app/widgets/text.hpp"
#include "core/text/tokenizer.hpp"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

using namespace attnviz;

namespace {

std::string times(std::string_view unit, int n) {
    std::string out;
    for (int i = 0; i < n; ++i) out += unit;
    return out;
}

bool blank(const std::string& s) { return s.find_first_not_of(" \t\n") == std::string::npos; }

}  // namespace

TEST(TextClipping, EllipsisKeepsWholeUtf8Sequences) {
    for (const std::string& text :
         {times("שלום", 30), times("مرحبا", 30), times("👩‍👩‍👧", 20), times("e\u0301", 60), times("aé€😀", 30)}) {
        for (std::size_t n = 1; n <= 70; ++n) {
            const widgets::Clipped c = widgets::clipText(text, n, false);
            SCOPED_TRACE(c.text);
            EXPECT_EQ(core::sanitizeUtf8(c.text), c.text);  // whole sequences only
            EXPECT_LE(widgets::codepointCount(c.text), n);
            EXPECT_FALSE(blank(c.text));
            const std::string kept = c.cut ? c.text.substr(0, c.text.size() - 3) : c.text;
            if (c.cut) {
                EXPECT_EQ(c.text.substr(kept.size()), "…");
            }
            EXPECT_EQ(text.rfind(kept, 0), 0u);  // a prefix of the text
            if (text.starts_with("e\u0301") && n >= 3) {
                EXPECT_TRUE(kept.ends_with("\u0301"));  // a letter keeps its mark
            }
        }
    }
}

TEST(TextClipping, NothingIsBlankAndControlsAreVisible) {
    EXPECT_EQ(widgets::clipLabel("\u0301"), "\u25CC\u0301");  // a lone mark sits on a dotted circle
    EXPECT_EQ(widgets::clipLabel("\x01"), "\\x01");
    EXPECT_EQ(widgets::clipLabel("\t"), "\\t");
    EXPECT_EQ(widgets::clipLabel("\x7f"), "\\x7F");
    EXPECT_EQ(widgets::clipLabel("\u200b"), "<U+200B>");
    EXPECT_EQ(widgets::clipLabel("\u202e"), "<U+202E>");  // a bidi override cannot turn the label round
    EXPECT_EQ(widgets::clipLabel("a\xff"
                                 "b"),
              "a\\xFFb");  // a byte that is no character, as a byte
    EXPECT_EQ(widgets::clipLabel("  "), "\u2423\u2423");
    EXPECT_EQ(widgets::clipText("👩‍👩‍👧", 40, false).text, "👩‍👩‍👧");  // the joiners stay with the emoji
    // Drawn, each emoji (beyond ImGui's 16-bit characters) is its slot in the atlas.
    const std::string family = widgets::clipLabel("👩‍👩‍👧");
    std::u32string slots;
    for (std::size_t pos = 0; pos < family.size();) slots.push_back(core::decodeUtf8(family, pos));
    ASSERT_EQ(slots.size(), 5u);
    EXPECT_EQ(app::slotCodepoint(slots[0]), U'👩');
    EXPECT_EQ(slots[2], slots[0]);
    EXPECT_EQ(app::slotCodepoint(slots[4]), U'👧');
    EXPECT_EQ(slots[1], U'\u200D');
    EXPECT_EQ(widgets::clipLabel("\u200d"), "<U+200D>");
    EXPECT_EQ(widgets::clipText("a\nb\tc", 10, true).text, "a\nb\tc");  // wrapped text keeps its lines
    EXPECT_EQ(widgets::clipLabel("a\nb"), "a\\nb");                     // a label is one line
    for (const char* text : {"\u0301", "\x01", "\t", "\x7f", "\u200b", " ", "\n", "\u200d", "\xff", "\xe2\x82", "\u00a0\u3000"})
        for (std::size_t n : {1u, 2u, 3u, 40u}) {
            const std::string shown = widgets::clipLabel(text, n);
            EXPECT_FALSE(blank(shown)) << n << " " << shown;
            EXPECT_EQ(core::sanitizeUtf8(shown), shown);
        }
}

TEST(TextClipping, LengthIsBounded) {
    const std::string token(40000, 'a');
    EXPECT_EQ(widgets::clipLabel(token), std::string(39, 'a') + "…");
    EXPECT_EQ(widgets::tooltipBody(token), std::string(499, 'a') + "… (40,000 characters)");
    EXPECT_EQ(widgets::tooltipBody("short"), "short");
    const std::string controls = times("\x01\u200b", 20000);  // each shown as several glyphs
    for (std::size_t n : {1u, 5u, 40u, 500u}) EXPECT_LE(widgets::codepointCount(widgets::clipLabel(controls, n)), n);
}

TEST(TextClipping, PiecesAreBoundedAndLoseNothing) {
    const std::string line(20000, 'x');
    std::string joined;
    for (std::string_view p : widgets::splitPieces(line)) {
        EXPECT_LE(p.size(), widgets::kPieceBytes);
        joined += p;
    }
    EXPECT_EQ(joined, line);
    const std::string words = times("word ", 4000);
    const auto wordPieces = widgets::splitPieces(words);
    EXPECT_GE(wordPieces.size(), 10u);
    std::size_t bytes = 0;
    for (std::size_t i = 0; i + 1 < wordPieces.size(); ++i) {
        const std::string_view p = wordPieces[i];
        EXPECT_LE(p.size(), widgets::kPieceBytes);
        EXPECT_TRUE(p.ends_with("word")) << p.substr(p.size() - 10);  // split at spaces
        bytes += p.size() + 1;
    }
    EXPECT_EQ(bytes + wordPieces.back().size(), words.size());
    for (const std::string& text : {times("שלום", 3000), times("e\u0301", 3000), times("👩‍👩‍👧", 1000)}) {
        joined.clear();
        for (std::string_view p : widgets::splitPieces(text, 1000)) {
            EXPECT_LE(p.size(), 1000u);
            EXPECT_EQ(core::sanitizeUtf8(p), p);
            EXPECT_FALSE(p.starts_with("\u0301") || p.starts_with("\u200d"));  // a mark stays with its letter
            joined += p;
        }
        EXPECT_EQ(joined, text);
    }
}
