#include "app/panels/panel.hpp"
#include "app/panels/panel_table.hpp"

#include "app/gfx/texture_cache.hpp"
#include "app/state/head_summary.hpp"
#include "app/state/source.hpp"
#include "app/widgets/text.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace attnviz::app {

std::string_view Panel::id() const { return m_info.id; }
const char* Panel::title() const { return m_info.title; }

std::string headLabel(const AppState& state, int head) {
    std::string label = core::headName(state.scenario, head, state.model.heads);
    label[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(label[0])));
    if (head < 0 && state.view.skipFirstKey) label += " · first key left out";
    // Grouped-query attention: the key/value head this query head reads.
    if (head >= 0 && state.model.kvHeads > 0) label += " · kv " + std::to_string(state.model.kvHeadOf(head) + 1);
    return label;
}

int headPooling(float pixelsPerCell) { return gfx::poolFactor(pixelsPerCell * ImGui::GetIO().DisplayFramebufferScale.x); }

gfx::Colouring weightColouring(const AppState& s) {
    return {.colormap = s.view.colormap, .scale = s.view.colourScale, .logFloor = core::logFloor(s.model.tk()), .keys = s.model.tk()};
}

const gfx::HeatmapTexture& headWeightsTexture(PanelContext& ctx, const std::string& key, int head, float pixelsPerCell) {
    const AppState& s = ctx.state;
    const gfx::Colouring colouring = weightColouring(s);
    const int factor = headPooling(pixelsPerCell);
    // The mean changes when any head's weights do (not when only an A·V is finished).
    const std::uint64_t headVersion =
        head < 0 ? *std::max_element(s.headVersions.begin(), s.headVersions.end()) : s.headVersions[static_cast<std::size_t>(head)];
    const gfx::TextureStamp version{headVersion, head, factor};
    // The mean with the first key left out is another texture (the switch changes no version).
    const std::string name = head < 0 && s.view.skipFirstKey ? key + "/first key left out" : key;
    // Texels pooled with the softmax (AppState::pooled): used as they are, or pooled further for
    // a smaller map, instead of reading the T x T weights again.
    const PooledWeights& p = s.pooled;
    const Eigen::Index tq = s.model.tq(), tk = s.model.tk();
    const bool pooledCurrent = head >= 0 && p.head == head && p.version == headVersion && p.factor >= 1 &&
                               p.texels.size() == static_cast<std::size_t>(core::pooledSize(tq, p.factor) * core::pooledSize(tk, p.factor));
    // Auto's top from the head's whole map (recomputeStep made it): the same at any pooling
    gfx::Colouring headColouring = colouring;
    if (colouring.scale == core::ColourScale::Auto && head >= 0 && p.quantileHead == head && p.quantileVersion == headVersion)
        headColouring.clipQuantile = p.referenceQuantile;
    if (pooledCurrent && factor == p.factor)
        return ctx.textures.get(name, version, headColouring, gfx::pooledView(p.texels, tq, tk, p.factor));
    return ctx.textures.get(name, version, headColouring, [&] {
        if (pooledCurrent && factor > p.factor)
            return gfx::repooled(gfx::pooledView(p.texels, tq, tk, p.factor), tq, tk, p.factor, (factor + p.factor - 1) / p.factor);
        if (head >= 0) return gfx::texelsOf(s.forward.heads[static_cast<std::size_t>(head)].weights, s.settings, factor);
        return gfx::meanTexelsOf(s.forward, s.settings, factor, meanOptions(s));
    });
}

void tooltip(const char* text) { widgets::hoverTooltip(text); }

bool beginPanel(PanelContext& ctx, const char* title) {
    if (ImGui::Begin(title, nullptr, ctx.windowFlags)) return true;
    ImGui::End();
    return false;
}

bool beginPanelFor(PanelContext& ctx, const char* title, int head, bool weightsOnly) {
    if (!beginPanel(ctx, title)) return false;
    if (weightsOnly ? weightsFresh(ctx.state, head) : headFresh(ctx.state, head)) return true;
    ImGui::TextDisabled("computing…");  // a frame or two after a change, for heads not on screen
    ImGui::End();
    return false;
}

bool noModelNote(PanelContext& ctx, const char* what, bool wholeLayer) {
    const Capabilities can = capabilities(ctx.state);
    if (can.weights && (can.wholeLayer || !wholeLayer)) return false;
    if (!can.weights) ImGui::TextWrapped("Imported attention has no model behind it: %s (open a checkpoint with --model).", what);
    else {
        std::string line = "This view needs the shown layer's heads computed whole; " + readFromPassNote(ctx.state) + ".";
        widgets::wrappedText(line);
    }
    ImGui::End();
    return true;
}

void importCheckNote(const AppState& state) {
    const core::ImportedAttention::CheckStatus c = mapsFile(state)->checkStatus();
    if (!c.error.empty()) {
        widgets::wrappedTextColored(ImVec4(0.95f, 0.35f, 0.30f, 1.0f), c.error);
        return;
    }
    ImGui::TextDisabled("checking every map: %d %%", static_cast<int>(c.fraction * 100.0));
}

bool headSweepNote(PanelContext& ctx, std::string_view viewId) {
    const HeadSweepJob* job = pendingHeadSweep(ctx.state);
    if (!job) return false;
    const PassKey key = headSummaryKey(ctx.state);
    if (job->runningFor(key)) ctx.requests.stale.insert(std::string(viewId));
    if (const std::string why = job->errorAt(key); !why.empty()) {
        widgets::wrappedTextColored(ImVec4(0.95f, 0.35f, 0.30f, 1.0f), why);
        return true;
    }
    const float em = ImGui::GetFontSize();
    const bool stopped = job->stoppedAt(key);
    char label[64];
    std::snprintf(label, sizeof label, stopped ? "stopped at %d %%" : "every map, made again: %d %%",
                  static_cast<int>(job->fraction() * 100.0));
    ImGui::ProgressBar(static_cast<float>(job->fraction()), ImVec2(std::min(em * 14.0f, ImGui::GetContentRegionAvail().x), 0), label);
    const char* button = stopped ? "Resume" : "Stop";
    widgets::sameLineIfFits(ImGui::CalcTextSize(button).x + ImGui::GetStyle().FramePadding.x * 2.0f);
    if (ImGui::Button(button)) {
        if (stopped) ctx.actions.emit(action::ResumeHeadSweep{});
        else ctx.actions.emit(action::StopHeadSweep{});
    }
    ImGui::TextDisabled("this pass keeps no maps (--keep-maps): each is made again from its queries and keys");
    return true;
}

}  // namespace attnviz::app
