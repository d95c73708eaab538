// Every script on screen, without a window: the atlas built through the app's action layer, and
// the glyphs ImGui draws read back from its draw data (each glyph quad's texture rectangle names
// the atlas glyph, whose pixels are checked for ink).
#include "app/app.hpp"
#include "app/fonts/font_atlas.hpp"
#include "app/fonts/shown_text.hpp"
#include "app/state/actions.hpp"
#include "core/base/files.hpp"
#include "core/io/export.hpp"
#include "core/scenario/presets.hpp"
#include "core/text/tokenizer.hpp"
#include "tests/gui/headless.hpp"
#include "tests/tiny_gpt2.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <tuple>
#include <vector>

using namespace attnviz;
using namespace attnviz::app;

namespace {

// One token in each script a user types, and the mixed sentence the README shows.
const std::vector<std::string> kScriptTokens = {"日本語", "テキスト", "한국어", "中文",  "עברית",  "سلام",
                                                "हिन्दी",  "ไทย",      "🤖",   "Ωμέγα", "привет", "café"};

class Scripts : public ::testing::Test {
protected:
    void SetUp() override { headless::createContext(ImVec2(1920, 1080)); }
    void TearDown() override { ImGui::DestroyContext(); }

    static void frames(App& app, int n) {
        for (int i = 0; i < n; ++i) headless::drawFrame(app);
    }

    // The characters of every glyph quad drawn last frame, in drawing order (spaces draw none),
    // one string per draw list joined by '\n'; the lists of windows named in `skip` left out.
    static std::u32string drawnCharacters(const Fonts& fonts, const std::vector<std::string>& skip = {}) {
        std::map<std::tuple<float, float, float, float>, char32_t> byUv;
        for (const ImFont* font : {fonts.regular, fonts.large, fonts.mono})
            if (font)
                for (const ImFontGlyph& g : font->Glyphs) byUv[{g.U0, g.V0, g.U1, g.V1}] = g.Codepoint;
        std::u32string out;
        const ImDrawData* data = ImGui::GetDrawData();
        for (int l = 0; l < data->CmdListsCount; ++l) {
            const ImDrawList* list = data->CmdLists[l];
            if (list->_OwnerName && std::find(skip.begin(), skip.end(), std::string(list->_OwnerName)) != skip.end()) continue;
            const ImVector<ImDrawVert>& v = list->VtxBuffer;
            for (int i = 0; i + 3 < v.Size; ++i) {
                // A glyph is 4 vertices: top-left, top-right, bottom-right, bottom-left.
                const auto it = byUv.find({v[i].uv.x, v[i].uv.y, v[i + 2].uv.x, v[i + 2].uv.y});
                if (it == byUv.end() || v[i + 1].uv.x != v[i + 2].uv.x || v[i + 3].uv.y != v[i + 2].uv.y) continue;
                out.push_back(it->second);
                i += 3;
            }
            out.push_back(U'\n');
        }
        return out;
    }

    // The ink (sum of alpha) of the glyph `c` of `font` in the atlas texture.
    static long long ink(const ImFont* font, ImWchar c) {
        const ImFontGlyph* g = font->FindGlyphNoFallback(c);
        if (!g) return -1;
        unsigned char* pixels = nullptr;
        int width = 0, height = 0;
        ImGui::GetIO().Fonts->GetTexDataAsAlpha8(&pixels, &width, &height);
        long long sum = 0;
        for (int y = static_cast<int>(g->V0 * static_cast<float>(height)); y < static_cast<int>(g->V1 * static_cast<float>(height)); ++y)
            for (int x = static_cast<int>(g->U0 * static_cast<float>(width)); x < static_cast<int>(g->U1 * static_cast<float>(width)); ++x)
                sum += pixels[static_cast<std::size_t>(y) * static_cast<std::size_t>(width) + static_cast<std::size_t>(x)];
        return sum;
    }

    // What the window draws for `token`: its characters as drawn (visual order, joined), emoji in
    // their slots, without the spaces that draw no glyph.
    static std::u32string drawnForm(const std::string& token) {
        const std::string shown = atlasText(token);
        std::u32string out;
        for (std::size_t pos = 0; pos < shown.size();)
            if (const char32_t cp = core::decodeUtf8(shown, pos); cp != U' ') out.push_back(cp);
        return out;
    }
};

std::string joined(const std::vector<std::string>& tokens) {
    std::string out;
    for (const std::string& t : tokens) out += (out.empty() ? "" : " ") + t;
    return out;
}

std::string utf8(const std::u32string& text) {
    std::string out;
    for (char32_t cp : text) core::appendUtf8(out, cp);
    return out;
}

}  // namespace

TEST_F(Scripts, EveryScriptIsDrawnWithItsOwnGlyphsInVisualOrder) {
    App app(makeState(core::loadPreset("default")));
    apply(app.state(), action::SetSentence{joined(kScriptTokens)});
    frames(app, 4);
    const Fonts& fonts = app.fontSet().fonts();
    const std::u32string drawn = drawnCharacters(fonts);
    for (const std::string& token : kScriptTokens) {
        const std::u32string form = drawnForm(token);
        EXPECT_NE(drawn.find(form), std::u32string::npos) << token << " drawn as " << utf8(form) << " not found";
        // Each of its glyphs is in the atlas with ink of its own: not '?', not the box.
        for (char32_t c : form) {
            SCOPED_TRACE(token);
            EXPECT_GT(ink(fonts.regular, static_cast<ImWchar>(c)), 0);
            EXPECT_NE(c, U'?');
            EXPECT_NE(c, U'\uFFFD');
            EXPECT_NE(c, fonts::kNoGlyphBox);
        }
    }
    // Right to left in visual order: עברית (ayin … tav in memory) is drawn tav first; سلام is
    // drawn joined, meem first.
    EXPECT_EQ(drawnForm("עברית"), U"תירבע");
    EXPECT_EQ(drawnForm("سلام"), U"\uFEE1\uFEFC\uFEB3");
    EXPECT_NE(drawn.find(U"תירבע"), std::u32string::npos);
    // No glyph drawn anywhere is ImGui's fallback, and the only '?' are the UI's own.
    EXPECT_EQ(drawn.find(U'\uFFFD'), std::u32string::npos) << utf8(drawn.substr(drawn.find(U'\uFFFD') - 40, 80));
    EXPECT_EQ(drawn.find(fonts::kNoGlyphBox), std::u32string::npos);
}

TEST_F(Scripts, EveryLabelIsShapedOnceWhereverItIsDrawn) {
    // A right-to-left token selected (its label is composed into the bars' heading, the heatmap's
    // highlighted row, …), emoji in the tokens and the description: shaped twice, Hebrew would
    // come back in logical order and an emoji's slot would become a box.
    core::Scenario s = core::loadPreset("default");
    s.sentence.reset();
    s.tokens = std::vector<std::string>{"עברית", "🤖", "سلام", "日本", "cat"};
    s.description = "תיאור 🤖 with שלום";
    App app(makeState(s));
    for (int query : {0, 1, 2}) {
        apply(app.state(), action::SelectQuery{query});
        frames(app, 3);
        const Fonts& fonts = app.fontSet().fonts();
        const std::u32string drawn = drawnCharacters(fonts);
        EXPECT_EQ(drawn.find(U'\uFFFD'), std::u32string::npos)
            << "query " << query << ": " << utf8(drawn.substr(drawn.find(U'\uFFFD') > 30 ? drawn.find(U'\uFFFD') - 30 : 0, 160));
        EXPECT_EQ(drawn.find(fonts::kNoGlyphBox), std::u32string::npos) << "query " << query << ": " << utf8(drawn);
        EXPECT_NE(drawn.find(U"תירבע"), std::u32string::npos);
        // Logical order is drawn only by the sentence field, which edits the text as stored.
        const std::u32string outsideTheField = drawnCharacters(fonts, {"Controls"});
        EXPECT_EQ(outsideTheField.find(U"עברית"), std::u32string::npos) << "query " << query << ": " << utf8(outsideTheField);
    }
}

TEST_F(Scripts, TheAtlasGrowsWithNewCharactersAndKeepsTheOld) {
    App app(makeState(core::loadPreset("default")));
    frames(app, 1);
    const ImFontAtlas& atlas = *ImGui::GetIO().Fonts;
    const long long latinArea = static_cast<long long>(atlas.TexWidth) * atlas.TexHeight;
    EXPECT_TRUE(app.fontSet().extra().empty());
    EXPECT_EQ(app.fontSet().fonts().regular->FindGlyphNoFallback(U'日'), nullptr);

    apply(app.state(), action::SetSentence{"日本語 テキスト"});
    frames(app, 2);
    const ImFont* regular = app.fontSet().fonts().regular;
    for (char32_t c : std::u32string(U"日本語テキスト")) EXPECT_NE(regular->FindGlyphNoFallback(static_cast<ImWchar>(c)), nullptr);
    EXPECT_EQ(app.fontSet().extra().size(), 7u);
    const long long cjkArea = static_cast<long long>(atlas.TexWidth) * atlas.TexHeight;
    EXPECT_GE(cjkArea, latinArea);

    // A new sentence adds its characters; the old stay (typing back and forth rebuilds nothing).
    apply(app.state(), action::SetSentence{"한국어 🤖 سلام"});
    frames(app, 2);
    regular = app.fontSet().fonts().regular;
    for (char32_t c : std::u32string(U"日本語テキスト한국어\uFEE1\uFEFC\uFEB3"))
        EXPECT_NE(regular->FindGlyphNoFallback(static_cast<ImWchar>(c)), nullptr) << static_cast<unsigned>(c);
    EXPECT_NE(regular->FindGlyphNoFallback(static_cast<ImWchar>(atlasSlot(U'🤖'))), nullptr);
    EXPECT_EQ(slotCodepoint(atlasSlot(U'🤖')), U'🤖');
    const std::set<ImWchar> grown = app.fontSet().extra();
    apply(app.state(), action::SetSentence{"日本語"});
    frames(app, 1);
    EXPECT_FALSE(app.prepareFonts(1.0f, 1.0f));  // nothing new: no rebuild
    EXPECT_EQ(app.fontSet().extra(), grown);
}

TEST_F(Scripts, ATwentyThousandCharacterTokenIsClippedBeforeTheAtlas) {
    // 20,000 different ideographs in one token: the atlas holds what a tooltip shows of it (its
    // first 500 characters), exactly the atlas of a token of those 500.
    std::string huge, first;
    for (char32_t i = 0; i < 20000; ++i) {
        core::appendUtf8(huge, 0x4E00 + i);
        if (i < 500) core::appendUtf8(first, 0x4E00 + i);
    }
    const auto atlasFor = [&](const std::string& token) {
        App app(makeState(core::loadPreset("default")));
        apply(app.state(), action::SetTokens{{token, "cat"}});
        frames(app, 2);
        const ImFontAtlas& atlas = *ImGui::GetIO().Fonts;
        return std::tuple(app.fontSet().extra(), atlas.TexWidth, atlas.TexHeight);
    };
    const auto [hugeSet, hugeWidth, hugeHeight] = atlasFor(huge);
    const auto [firstSet, firstWidth, firstHeight] = atlasFor(first);
    EXPECT_LE(hugeSet.size(), 500u);
    EXPECT_GE(hugeSet.size(), 499u);  // the last may give way to "…"
    EXPECT_TRUE(std::includes(firstSet.begin(), firstSet.end(), hugeSet.begin(), hugeSet.end()));
    EXPECT_EQ(hugeWidth, firstWidth);
    EXPECT_EQ(hugeHeight, firstHeight);
    EXPECT_LE(static_cast<long long>(hugeWidth) * hugeHeight, 4096LL * 4096);
}

TEST_F(Scripts, TheAtlasNeverHoldsMoreThanItsBound) {
    // Four sentences of 1,000 different ideographs each, one token per character: past the bound
    // the atlas starts again from the text on screen.
    App app(makeState(core::loadPreset("default")));
    for (char32_t block = 0; block < 4; ++block) {
        std::vector<std::string> tokens;
        for (char32_t i = 0; i < 1000; ++i) {
            std::string t;
            core::appendUtf8(t, 0x4E00 + block * 1000 + i);
            tokens.push_back(t);
        }
        apply(app.state(), action::SetTokens{tokens});
        frames(app, 1);
        EXPECT_LE(app.fontSet().extra().size(), FontSet::kMaxExtraGlyphs);
        const ImFont* regular = app.fontSet().fonts().regular;
        for (char32_t i = 0; i < 1000; i += 97)
            EXPECT_NE(regular->FindGlyphNoFallback(static_cast<ImWchar>(0x4E00 + block * 1000 + i)), nullptr);
    }
}

TEST(TextField, EmojiAndPrivateUseCharactersSurviveAnEdit) {
    // The sentence field hands ImGui the slotted text; what comes back is the user's text.
    const std::string typed = "a 🤖 b \U0001F600 \uE000 日本 ü";
    const std::string field = slottedText(typed).value();
    for (std::size_t pos = 0; pos < field.size();) EXPECT_LE(core::decodeUtf8(field, pos), 0xFFFFu);
    EXPECT_NE(field, typed);
    EXPECT_EQ(unslottedText(field, field), typed);
    EXPECT_EQ(unslottedText(field + "x", field), typed + "x");  // an edit after them keeps them
    EXPECT_EQ(slottedText("plain").value(), "plain");
    // A private-use character pasted in stays itself, even when it equals a slot given out for
    // another text.
    std::string pasted;
    core::appendUtf8(pasted, atlasSlot(U'🤖'));
    EXPECT_EQ(unslottedText("x" + pasted, "x"), "x" + pasted);
}

TEST_F(Scripts, AHugeScaleKeepsTheAtlasWithinATexture) {
    // 2,048 ideographs at the largest raster scale: the atlas holds as many as fit a 4096 x 4096
    // texture beside the base set, instead of aborting.
    std::vector<std::string> tokens;
    for (char32_t i = 0; i < 2048; ++i) {
        std::string t;
        core::appendUtf8(t, 0x4E00 + i);
        tokens.push_back(t);
    }
    const std::vector<std::string_view> texts(tokens.begin(), tokens.end());
    FontSet fonts;
    const float raster = FontSet::kMaxRasterScale;
    fonts.build(raster, FontSet::neededCharacters(texts));
    EXPECT_EQ(fonts.extra().size(), FontSet::maxExtraGlyphs(raster));
    EXPECT_LT(FontSet::maxExtraGlyphs(raster), 1000u);
    EXPECT_EQ(FontSet::maxExtraGlyphs(1.0f), FontSet::kMaxExtraGlyphs);
    EXPECT_FALSE(fonts.needsRebuild(raster, FontSet::neededCharacters(texts)));  // no rebuild every frame
    EXPECT_LE(ImGui::GetIO().Fonts->TexHeight, 16384);
    EXPECT_LE(ImGui::GetIO().Fonts->TexWidth, 4096);
}

TEST_F(Scripts, TheLargestScalesDrawWithoutAborting) {
    // UI scale 4 on a 2x display, exported at 4x: rasterised at the largest scale, drawn larger.
    core::Scenario s = core::loadPreset("default");
    s.sentence = "日本語 テキスト 🤖 עברית";
    App app(makeState(s));
    apply(app.state(), action::SetUiScale{4.0f});
    EXPECT_TRUE(app.prepareFonts(2.0f, 4.0f));
    EXPECT_EQ(app.fontSet().pixelScale(), FontSet::kMaxRasterScale);
    EXPECT_FLOAT_EQ(ImGui::GetIO().FontGlobalScale, 8.0f / FontSet::kMaxRasterScale);
    EXPECT_LE(ImGui::GetIO().Fonts->TexHeight, 16384);
}

TEST_F(Scripts, AnArabicLabelCutShortHasItsGlyphs) {
    // "سلام عليكم" cut to "سلام علي…" ends in a final yeh, a form the whole text does not have.
    App app(makeState(core::loadPreset("default")));
    apply(app.state(), action::SetSentence{"سلام عليكم"});
    frames(app, 2);
    const ImFont* regular = app.fontSet().fonts().regular;
    for (const char* cut : {"سلام علي…", "علي", "عل", "سلا"})
        for (char32_t c : drawnForm(cut)) EXPECT_NE(regular->FindGlyphNoFallback(static_cast<ImWchar>(c)), nullptr) << cut;
}
