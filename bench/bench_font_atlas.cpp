// Google Benchmark of the window's font atlas (./build/attnviz_font_bench; no display needed):
// what a rebuild costs when new characters arrive, at UI scale 1 and 2, for the base set alone
// and for a sentence of 200 different CJK characters, and the atlas it leaves (counters:
// texture side, the bytes ImGui holds on the CPU for it, alpha and RGBA, and glyphs baked).
#include "app/fonts/font_atlas.hpp"
#include "core/text/tokenizer.hpp"

#include <benchmark/benchmark.h>
#include <imgui.h>

#include <string>
#include <vector>

using namespace attnviz;

namespace {

// 200 different characters a Chinese or Japanese sentence uses: common ideographs, spaced every
// 7 code points across the block so that no two share a glyph.
std::string cjkSentence(int characters) {
    std::string out;
    for (int i = 0; i < characters; ++i) {
        core::appendUtf8(out, static_cast<char32_t>(0x4E00 + 7 * i));
        if (i % 10 == 9) out += ' ';
    }
    return out;
}

void reportAtlas(benchmark::State& state, const app::FontSet& fonts) {
    ImFontAtlas& atlas = *ImGui::GetIO().Fonts;
    unsigned char* rgba = nullptr;
    int width = 0, height = 0;
    atlas.GetTexDataAsRGBA32(&rgba, &width, &height);  // what the backend uploads
    state.counters["tex_width"] = width;
    state.counters["tex_height"] = height;
    state.counters["cpu_MiB"] = static_cast<double>(width) * height * 5.0 / (1024.0 * 1024.0);  // alpha + RGBA
    state.counters["extra_glyphs"] = static_cast<double>(fonts.extra().size());
    int glyphs = 0;
    for (const ImFont* f : atlas.Fonts) glyphs += f->Glyphs.Size;
    state.counters["glyphs"] = glyphs;
}

// A whole rebuild as the app does it when the text on screen brings new characters: find the
// characters, bake the three faces, and (as the backend does) make the RGBA texture.
void BM_AtlasRebuild(benchmark::State& state) {
    const int characters = static_cast<int>(state.range(0));
    const float scale = static_cast<float>(state.range(1));
    ImGui::CreateContext();
    const std::string sentence = cjkSentence(characters);
    app::FontSet fonts;
    for (auto _ : state) {
        app::FontSet fresh;  // a new set each time: every character is new to it
        const std::set<ImWchar> needed = app::FontSet::neededCharacters({sentence});
        fresh.build(scale, needed);
        unsigned char* rgba = nullptr;
        int width = 0, height = 0;
        ImGui::GetIO().Fonts->GetTexDataAsRGBA32(&rgba, &width, &height);
        benchmark::DoNotOptimize(rgba);
        fonts = std::move(fresh);
    }
    reportAtlas(state, fonts);
    ImGui::DestroyContext();
}
BENCHMARK(BM_AtlasRebuild)
    ->ArgNames({"cjk", "scale"})
    ->Args({0, 1})
    ->Args({200, 1})
    ->Args({0, 2})
    ->Args({200, 2})
    ->Args({2000, 1})
    ->Unit(benchmark::kMillisecond);

// Finding the characters a sentence needs (shaping, clipping), without baking: what a frame
// pays when the text on screen changed.
void BM_NeededCharacters(benchmark::State& state) {
    ImGui::CreateContext();
    const std::string sentence = cjkSentence(static_cast<int>(state.range(0)));
    for (auto _ : state) benchmark::DoNotOptimize(app::FontSet::neededCharacters({sentence}));
    ImGui::DestroyContext();
}
BENCHMARK(BM_NeededCharacters)->Arg(200)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
