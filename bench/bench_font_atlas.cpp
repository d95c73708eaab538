// Google Benchmark of the window's font atlas (./build/attnviz_font_bench; no display needed):
// what a rebuild costs when new characters arrive, at UI scale 1 and 2, for the base set alone
// and for 200 different CJK characters, and the atlas it leaves (counters:
// texture side, the bytes ImGui holds on the CPU for it, alpha and RGBA, and glyphs baked).
#include "app/fonts/font_atlas.hpp"
#include "core/text/tokenizer.hpp"

#include <benchmark/benchmark.h>
#include <imgui.h>

#include <string>
#include <vector>

using namespace attnviz;

namespace {

// Different ideographs, 7 code points apart across the CJK block, as tokens of ten characters
// (the text on screen: each token is clipped on its own).
std::vector<std::string> cjkTokens(int characters) {
    std::vector<std::string> out;
    for (int i = 0; i < characters; ++i) {
        if (i % 10 == 0) out.emplace_back();
        core::appendUtf8(out.back(), static_cast<char32_t>(0x4E00 + 7 * i));
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
    const std::vector<std::string> tokens = cjkTokens(characters);
    const std::vector<std::string_view> texts(tokens.begin(), tokens.end());
    app::FontSet fonts;
    fonts.build(scale, app::FontSet::neededCharacters(texts));  // the font files read, as in a running app
    for (auto _ : state) {
        app::FontSet fresh;  // a new set each time: every character is new to it
        const std::set<ImWchar> needed = app::FontSet::neededCharacters(texts);
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
    ->Args({2048, 1})  // the bound: every character the atlas holds beyond the base set
    ->Unit(benchmark::kMillisecond);

// Finding the characters a sentence needs (shaping, clipping), without baking: what a frame
// pays when the text on screen changed.
void BM_NeededCharacters(benchmark::State& state) {
    ImGui::CreateContext();
    const std::vector<std::string> tokens = cjkTokens(static_cast<int>(state.range(0)));
    const std::vector<std::string_view> texts(tokens.begin(), tokens.end());
    for (auto _ : state) benchmark::DoNotOptimize(app::FontSet::neededCharacters(texts));
    ImGui::DestroyContext();
}
BENCHMARK(BM_NeededCharacters)->Arg(200)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
