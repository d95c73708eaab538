// The fonts layer: which face draws each script, labels in visual order and joined, what has no
// glyph, and the figures drawing all of it. The faces are Debian's, which scripts/setup.sh
// installs: without them these tests fail.
#include "app/fonts/font_stack.hpp"
#include "app/fonts/shown_text.hpp"
#include "app/render/raster.hpp"
#include "core/text/tokenizer.hpp"

#include <gtest/gtest.h>

#include <string>

using namespace attnviz;

namespace {

std::string utf8(const std::u32string& text) {
    std::string out;
    for (char32_t cp : text) core::appendUtf8(out, cp);
    return out;
}

std::string family(char32_t cp) {
    const fonts::GlyphRef g = fonts::FontStack::shared().find(cp);
    return g.found() ? fonts::faceTable()[static_cast<std::size_t>(g.face)].family : "none";
}

}  // namespace

TEST(FontStack, EveryScriptAUserTypesHasAFace) {
    // DejaVu first; each other script from the face there for it.
    EXPECT_EQ(family(U'a'), "DejaVu Sans");
    EXPECT_EQ(family(U'Ω'), "DejaVu Sans");
    EXPECT_EQ(family(U'п'), "DejaVu Sans");
    EXPECT_EQ(family(U'ע'), "DejaVu Sans");
    EXPECT_EQ(family(U'ب'), "DejaVu Sans");
    EXPECT_EQ(family(U'日'), "Droid Sans Fallback");
    EXPECT_EQ(family(U'テ'), "Droid Sans Fallback");
    EXPECT_EQ(family(U'한'), "NanumGothic");
    EXPECT_EQ(family(U'中'), "Droid Sans Fallback");
    EXPECT_EQ(family(U'क'), "Noto Sans Devanagari");
    EXPECT_EQ(family(U'ก'), "Noto Sans Thai");
    EXPECT_EQ(family(U'🤖'), "Symbola");
    EXPECT_NE(family(U'😀'), "none");  // DejaVu has the emoticons
    // Nothing draws an unassigned code point or a private-use one.
    EXPECT_EQ(family(0x10FFFD), "none");
}

TEST(FontStack, SvgFamilyNamesEveryFaceThenAGenericOne) {
    const std::string stack = fonts::svgFontFamily();
    EXPECT_EQ(stack.rfind("DejaVu Sans, ", 0), 0u);
    EXPECT_NE(stack.find("Droid Sans Fallback"), std::string::npos);
    EXPECT_NE(stack.find("Symbola"), std::string::npos);
    EXPECT_EQ(stack.substr(stack.size() - 10), "sans-serif");
}

TEST(FontStack, AMissingFaceIsSkippedAndItsPackageNamed) {
    const fonts::FontStack stack({{"NoSuchFace.ttf", "None", "fonts-none", "nothing"}, fonts::faceTable().front()});
    EXPECT_FALSE(stack.installed(0));
    EXPECT_EQ(stack.find(U'a').face, 1);
    EXPECT_FALSE(stack.find(U'日').found());
    const std::vector<std::string> packages = fonts::packagesFor(U"日🤖日");
    ASSERT_EQ(packages.size(), 2u);
    EXPECT_EQ(packages[0], "fonts-droid-fallback (Chinese and Japanese)");
    EXPECT_EQ(packages[1], "fonts-symbola (emoji and symbols)");
    EXPECT_TRUE(fonts::packagesFor(U"abc").empty());
}

TEST(ShownText, AsciiAndLeftToRightScriptsAreUnchanged) {
    for (const char* text : {"the cat", "café naïve", "Ωμέγα", "привет", "日本語", "テキスト", "🤖"}) {
        const fonts::ShownText s = fonts::shownText(text);
        EXPECT_EQ(utf8(s.visual), text);
        EXPECT_FALSE(s.rightToLeft);
        EXPECT_TRUE(s.noGlyph.empty()) << text;
        EXPECT_EQ(fonts::shownNotes(s), "");
    }
}

TEST(ShownText, HebrewReadsInVisualOrder) {
    // עברית is ayin bet resh yod tav in memory; drawn left to right, tav comes first.
    const fonts::ShownText s = fonts::shownText("עברית");
    EXPECT_EQ(s.visual, U"תירבע");
    EXPECT_TRUE(s.rightToLeft);
    // In a left-to-right label the Hebrew run turns round, and a number after it joins the run
    // (it is read after the Hebrew) while keeping its own digits' order.
    EXPECT_EQ(fonts::shownText("a עב 12").visual, U"a 12 בע");
    EXPECT_EQ(fonts::shownText("עב 12").visual, U"12 בע");
    EXPECT_NE(fonts::shownNotes(s).find("right to left"), std::string::npos);
}

TEST(ShownText, ArabicIsJoinedIntoPresentationFormsInVisualOrder) {
    // سلام: seen, lam, alef, meem. Lam and alef become one ligature (final, U+FEFC) that does
    // not join the meem after it, so: meem isolated, lam-alef final, seen initial, reversed.
    const fonts::ShownText s = fonts::shownText("سلام");
    EXPECT_EQ(s.visual, U"\uFEE1\uFEFC\uFEB3");
    EXPECT_TRUE(s.rightToLeft);
    EXPECT_TRUE(s.joined);
    EXPECT_FALSE(s.unshaped);
    EXPECT_TRUE(s.noGlyph.empty());
    // A single letter takes its isolated form.
    EXPECT_EQ(fonts::shownText("ب").visual, U"\uFE8F");
}

TEST(ShownText, IndicScriptsAreMarkedUnshaped) {
    const fonts::ShownText s = fonts::shownText("हिन्दी");
    EXPECT_TRUE(s.unshaped);
    EXPECT_FALSE(s.rightToLeft);
    EXPECT_NE(fonts::shownNotes(s).find("unshaped"), std::string::npos);
    EXPECT_FALSE(fonts::shownText("ไทย").unshaped);  // Thai needs no reordering
}

TEST(ShownText, ACharacterNoFaceHasIsABoxNamedInTheNotes) {
    const fonts::ShownText s = fonts::shownText("a\U0010FFFD\uE000b\U0010FFFD");
    EXPECT_EQ(s.visual, U"a\u25A1\u25A1b\u25A1");
    EXPECT_EQ(s.noGlyph, U"\U0010FFFD\uE000");
    EXPECT_NE(fonts::shownNotes(s).find("\u25A1 = U+10FFFD, U+E000: no installed font has these characters"), std::string::npos);
}

TEST(ShownText, MixedSentenceHasNoBoxWithTheInstalledFaces) {
    const fonts::ShownText s = fonts::shownText(
        "日本語 テキスト café naïve Ωμέγα привет 🤖 עברית 한국어 中文 سلام हिन्दी ไทย");
    EXPECT_TRUE(s.noGlyph.empty()) << utf8(s.noGlyph);
}

namespace {

// The pixels of `text` drawn alone at (4, 30) in 24 px black on white.
std::vector<std::uint8_t> drawn(const render::Font& font, std::string_view text) {
    render::Canvas canvas(160, 40);
    font.draw(canvas, text, 4.0f, 30.0f, 24.0f, {0, 0, 0});
    return canvas.rgba();
}

}  // namespace

TEST(FigureText, EveryScriptIsDrawnWithAGlyphNotTheMissingBox) {
    const render::Font font("DejaVuSans.ttf");
    const std::vector<std::uint8_t> box = drawn(font, "\U0010FFFD");
    const std::vector<std::uint8_t> blank = drawn(font, " ");
    for (const char* text : {"日", "テ", "한", "Ω", "п", "ע", "ب", "क", "ก", "🤖"}) {
        const std::vector<std::uint8_t> pixels = drawn(font, text);
        EXPECT_NE(pixels, box) << text;
        EXPECT_NE(pixels, blank) << text;
    }
    // The box is what a character no face has looks like, and the width agrees with it.
    EXPECT_EQ(drawn(font, "\U0010FFFE"), box);
}

TEST(FigureText, HebrewIsDrawnInVisualOrder) {
    // עב (ayin then bet in memory) is drawn as bet, then ayin to its right.
    const render::Font font("DejaVuSans.ttf");
    render::Canvas pieces(160, 40);
    font.draw(pieces, "ב", 4.0f, 30.0f, 24.0f, {0, 0, 0});
    font.draw(pieces, "ע", 4.0f + font.textWidth("ב", 24.0f), 30.0f, 24.0f, {0, 0, 0});
    EXPECT_EQ(drawn(font, "עב"), pieces.rgba());
    render::Canvas logical(160, 40);
    font.draw(logical, "ע", 4.0f, 30.0f, 24.0f, {0, 0, 0});
    font.draw(logical, "ב", 4.0f + font.textWidth("ע", 24.0f), 30.0f, 24.0f, {0, 0, 0});
    EXPECT_NE(drawn(font, "עב"), logical.rgba());
}

TEST(ShownText, ALabelIsALeftToRightLineWhateverItStartsWith) {
    // A position before a Hebrew token stays at its left, as in an SVG viewer.
    EXPECT_EQ(fonts::shownText("8 עברית").visual, U"8 תירבע");
    EXPECT_EQ(fonts::shownText("שלום!").visual, U"םולש!");
}

TEST(FontStack, WhatIsMissingIsSaidOncePerPackage) {
    const std::vector<std::string> first = fonts::reportMissing(U"\u0531\u0532");  // Armenian
    ASSERT_EQ(first.size(), 1u);
    EXPECT_NE(first[0].find("install fonts-noto-core"), std::string::npos);
    EXPECT_TRUE(fonts::reportMissing(U"\u0533").empty());  // said already
    EXPECT_TRUE(fonts::reportMissing(U"abc").empty());     // no package to name
}
