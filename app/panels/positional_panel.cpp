#include "app/panels/positional_panel.hpp"

#include "app/gfx/texture_cache.hpp"
#include "app/state/source.hpp"
#include "app/views/view_table.hpp"
#include "app/widgets/charts.hpp"
#include "app/widgets/text.hpp"
#include "core/base/format.hpp"
#include "core/scenario/embedding.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace attnviz::app {

namespace {

// A model's learned positions: wpe's rows for the sentence's T positions, on a range symmetric
// about 0 from their largest magnitude.
void learnedPositions(PanelContext& ctx, const core::decoder::Checkpoint& checkpoint) {
    const AppState& s = ctx.state;
    const auto T = static_cast<int>(s.model.tq());
    const core::Mat rows = checkpoint.positions().storedRowsWidened(0, T);
    const auto d = static_cast<int>(rows.cols());
    const float range = std::max(rows.cwiseAbs().maxCoeff(), 1e-6f);
    ImGui::TextWrapped(
        "%s learns its positions: row p of wpe is added to the embedding of the token at position p, before layer 1. "
        "Layer %d sees them only through the residual stream.",
        checkpoint.name().c_str(), s.scenario.layer + 1);
    ImGui::TextDisabled("wpe, positions 0 … %d × %d dims, %.3g … %.3g", T - 1, d, -range, range);
    const gfx::HeatmapTexture& tex = ctx.textures.get(
        "wpe", gfx::TextureStamp{.data = reinterpret_cast<std::uintptr_t>(&checkpoint), .rows = T, .cols = d},
        {s.view.colormap, -range, range}, [&] { return gfx::texelsOf(rows); }, 512);
    const ImVec2 q = ImGui::GetCursorScreenPos(), rest = ImGui::GetContentRegionAvail();
    const float w = rest.x, h = std::max(20.0f, std::min(rest.y - 4.0f, w / static_cast<float>(d) * 2.0f * static_cast<float>(T)));
    ctx.heatmaps.draw(ImGui::GetWindowDrawList(), tex, q, ImVec2(q.x + w, q.y + h), ImVec2(0, 0), ImVec2(1, 1));
    ImGui::Dummy(ImVec2(w, h));
}

// How one set of rotary settings scales its frequencies.
std::string scalingText(const core::decoder::Rope& r) {
    switch (r.scaling) {
        case core::decoder::RopeScaling::None: break;
        case core::decoder::RopeScaling::Linear: return "linear: every frequency divided by " + core::formatNumber(r.factor);
        case core::decoder::RopeScaling::Llama3:
            return "llama3: long wavelengths slowed by " + core::formatNumber(r.factor) + ", short ones kept";
        case core::decoder::RopeScaling::LongRope:
            return "longrope: each frequency divided by its own factor, the short ones up to " + std::to_string(r.originalPositions) +
                   " tokens and the long ones past them; cos and sin × " + core::formatNumber(r.attentionFactor);
    }
    return "none";
}

// A model with rotary positions: what turns q and k in the shown layer, and how the frequencies
// are scaled (a model whose layers differ, Gemma 3's and ModernBERT's local and global ones,
// names the shown layer's).
void rotaryPositions(const core::decoder::Checkpoint& checkpoint, int layer) {
    const core::decoder::Config& c = checkpoint.config();
    const core::decoder::Rope& r = c.ropeOf(layer);
    const int turned = c.rotaryWidth();
    const std::string which = c.layerRopes.empty() ? "in every layer" : "in layer " + std::to_string(layer + 1) + " (layers differ)";
    const std::string part = turned == c.headDim ? ""
                                                 : " Only the first " + std::to_string(turned) + " dimensions turn; the other " +
                                                       std::to_string(c.headDim - turned) + " keep no position.";
    widgets::wrappedText(checkpoint.name() + " turns q and k by position (RoPE, rotate-half): pair i of a head's " +
                         std::to_string(turned) + " turned dimensions by position · θ_i, θ_i = " + core::formatNumber(r.theta) + "^(−2i/" +
                         std::to_string(turned) + "), " + which + ". No vector is added to the input." + part);
    widgets::wrappedTextColored(ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled), "Frequency scaling: " + scalingText(r) + ".");
}

// Relative positions: the sentence moved along by `shift` positions, and whether any score
// changed (state.shiftCheck, made by the app before the next frame when it is not current).
void shiftCheck(PanelContext& ctx) {
    const AppState& s = ctx.state;
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 7.0f);
    int shift = s.view.shift;
    if (ImGui::InputInt("shift", &shift, 1, 16) && shift != s.view.shift)
        ctx.actions.emit(action::SetShift{std::clamp(shift, 0, kMaxShift)});
    widgets::hoverTooltip(
        "Moves the whole sentence along by this many positions, as if it came later in a document, and compares every head's "
        "scores with those at positions 0 … T−1. RoPE and ALiBi see only the distance i − j, so nothing changes; sinusoidal "
        "encodings added to X change every score.");
    if (!shiftCheckCurrent(s)) {
        ctx.requests.stale.insert(std::string(panel_id::kPositional));
        ImGui::TextDisabled("checking …");
        return;
    }
    const ShiftCheck& c = s.shiftCheck;
    if (!c.report) {
        widgets::wrappedText(c.why);
        return;
    }
    const bool same = c.report->unchanged();
    widgets::wrappedTextColored(same ? ImVec4(0.30f, 0.80f, 0.45f, 1.0f) : ImVec4(0.95f, 0.65f, 0.25f, 1.0f),
                                core::shiftVerdict(*c.report));
    const char* why = "";
    switch (s.scenario.positional) {
        case core::Positional::None: why = "No positions at all: nothing moves, and the model cannot see order either."; break;
        case core::Positional::Sinusoidal:
            why = "PE(p + k) is another vector than PE(p): the shifted X, and so every score, differ.";
            break;
        case core::Positional::Rope: why = "q_i · k_j = (R_i q)ᵀ(R_j k) = qᵀ R_(j−i) k: only the distance turns the pair."; break;
        case core::Positional::Alibi: why = "The penalty m·|i − j| is the same for every pair the same distance apart."; break;
    }
    widgets::wrappedTextColored(ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled), why);
}

}  // namespace

void PositionalPanel::draw(PanelContext& ctx) {
    const AppState& s = ctx.state;
    if (!beginPanel(ctx, title())) return;
    if (noModelNote(ctx, "the positions are a model's input, and the file holds only its maps")) return;
    if (const core::decoder::Checkpoint* checkpoint = checkpointOf(s)) {
        if (checkpoint->config().rotary) rotaryPositions(*checkpoint, s.scenario.layer);
        else learnedPositions(ctx, *checkpoint);
        ImGui::End();
        return;
    }
    if (s.model.explicitQkv) {
        widgets::wrappedText("This scenario gives Q, K and V directly: there is no X for positions to be added to.");
        ImGui::End();
        return;
    }
    const core::Positional kind = s.scenario.positional;
    const int dModel = std::max(2, s.model.dModel);
    const int T = static_cast<int>(s.model.tq());
    switch (kind) {
        case core::Positional::None: widgets::wrappedText("Off: X is the embeddings alone; the model cannot see order."); break;
        case core::Positional::Sinusoidal: widgets::wrappedText("On: PE is added to X (not concatenated). Base 10000."); break;
        case core::Positional::Rope:
            widgets::wrappedText("RoPE: q, k turned by position · θ_i, θ_i = " + core::formatNumber(s.scenario.ropeBase) +
                                 "^(−2i/d_k); X unchanged.");
            break;
        case core::Positional::Alibi: widgets::wrappedText("ALiBi: logits − m_h · |i − j| per head; X unchanged."); break;
    }
    shiftCheck(ctx);
    // Three curves over the sentence's positions 0 … T−1 (a dot at each token): the fastest pair
    // of dimensions, a middle one and the slowest (sinusoidal, RoPE), or the first, a middle and
    // the last head's penalty (ALiBi).
    const ImU32 colours[] = {IM_COL32(59, 130, 246, 255), IM_COL32(245, 158, 11, 255), IM_COL32(16, 185, 129, 255)};
    const float xMax = static_cast<float>(std::max(1, T - 1));
    constexpr int kSamples = 256;
    std::vector<widgets::Series> series;
    float yMin = -1.0f;
    const auto curve = [&](std::size_t k, const std::string& name, auto&& value) {
        std::vector<float> y(kSamples);
        for (int i = 0; i < kSamples; ++i) y[static_cast<std::size_t>(i)] = static_cast<float>(value(xMax * i / (kSamples - 1)));
        series.push_back({std::move(y), colours[k], name});
    };
    if (kind == core::Positional::Alibi) {
        const std::vector<float>& slopes = s.model.alibiSlopes;
        std::vector<int> heads = {0};
        if (slopes.size() >= 3) heads.push_back(static_cast<int>(slopes.size()) / 2);
        if (slopes.size() >= 2) heads.push_back(static_cast<int>(slopes.size()) - 1);
        for (std::size_t k = 0; k < heads.size() && !slopes.empty(); ++k) {
            const double m = slopes[static_cast<std::size_t>(heads[k])];
            char name[64];
            std::snprintf(name, sizeof name, "head %d, m %.3g", heads[k] + 1, m);
            curve(k, name, [&](double d) { return -m * d; });
            yMin = std::min(yMin, static_cast<float>(-m * xMax));
        }
    } else if (kind == core::Positional::Rope) {
        const int dk = std::max(2, s.model.dk), half = dk / 2;
        std::vector<int> pairs = {0};
        if (half >= 3) pairs.push_back(half / 2);
        if (half >= 2) pairs.push_back(half - 1);
        for (std::size_t k = 0; k < pairs.size(); ++k) {
            const double theta = std::pow(static_cast<double>(s.scenario.ropeBase), -2.0 * pairs[k] / dk);
            char name[64];
            std::snprintf(name, sizeof name, "pair %d, λ %.3g", pairs[k], 2.0 * 3.141592653589793 / theta);
            curve(k, name, [&](double p) { return std::cos(p * theta); });
        }
    } else {
        std::vector<int> shown = {0};
        if (dModel >= 4) shown.push_back((dModel / 2) & ~1);
        if (dModel >= 6) shown.push_back(dModel - 2);
        for (std::size_t k = 0; k < shown.size(); ++k) {
            char name[64];
            std::snprintf(name, sizeof name, "dim %d, λ %.3g", shown[k], core::sinusoidalWavelength(shown[k], dModel));
            curve(k, name, [&](double p) { return core::sinusoidalValue(p, shown[k], dModel); });
        }
    }
    // The curves only where they have the room to be read (the text above comes first).
    if (ImGui::GetContentRegionAvail().y < 5.0f * ImGui::GetTextLineHeightWithSpacing()) {
        ImGui::End();
        return;
    }
    widgets::legend(series);
    if (ImGui::IsItemHovered())
        widgets::showTooltip(kind == core::Positional::Alibi ? "m: the head's slope, 2^(−8h/H) for H heads a power of two."
                                                             : "λ: the wavelength in positions, 2π / θ.");
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const float lineH = ImGui::GetTextLineHeightWithSpacing();
    const bool matrix = kind == core::Positional::None || kind == core::Positional::Sinusoidal;
    const float plotH = std::max(3.0f * lineH, !matrix || avail.y < 12.0f * lineH ? avail.y - 4.0f : (avail.y - lineH) * 0.5f);
    const ImVec2 p = ImGui::GetCursorScreenPos();
    widgets::linePlot(ImGui::GetWindowDrawList(), p, ImVec2(p.x + avail.x, p.y + plotH), series, yMin,
                      kind == core::Positional::Alibi ? 0.0f : 1.0f, kind == core::Positional::Alibi ? "distance |i − j|" : "position",
                      {.xMax = xMax, .dotWholeX = true, .legendInside = false});
    ImGui::Dummy(ImVec2(avail.x, plotH));
    // The matrix only where it has the room to be read.
    if (!matrix || ImGui::GetContentRegionAvail().y < 4.0f * lineH) {
        ImGui::End();
        return;
    }
    char caption[96];
    std::snprintf(caption, sizeof caption, "PE: %d positions × %d dims", T, dModel);
    widgets::flowTextDisabled(caption, true);
    // The matrix: rows = positions, columns = dimensions, with its colour bar on the right.
    const gfx::HeatmapTexture& tex = ctx.textures.get(
        "pe", gfx::TextureStamp{.rows = T, .cols = dModel}, {s.view.colormap, -1.0f, 1.0f},
        [&] { return gfx::texelsOf(core::sinusoidalEncoding(T, dModel)); }, 512);
    const ImVec2 q = ImGui::GetCursorScreenPos();
    const ImVec2 rest = ImGui::GetContentRegionAvail();
    const float barW = ImGui::CalcTextSize("-1.00").x + ImGui::GetFontSize() * 2.0f;
    const float axisW = ImGui::CalcTextSize(std::to_string(T - 1).c_str()).x + 4.0f;
    const float w = std::max(20.0f, rest.x - barW - axisW - 8.0f);
    const float h = std::max(20.0f, std::min(rest.y - lineH - 4.0f, w / static_cast<float>(dModel) * 2.0f * static_cast<float>(T)));
    ImDrawList* list = ImGui::GetWindowDrawList();
    const ImVec2 m0(q.x + axisW, q.y), m1(q.x + axisW + w, q.y + h);
    ctx.heatmaps.draw(list, tex, m0, m1, ImVec2(0, 0), ImVec2(1, 1));
    const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);
    // Axes: position 0 and T − 1 down the left, dimension 0 and d − 1 under the matrix.
    list->AddText(ImVec2(q.x, m0.y), text, "0");
    const std::string lastRow = std::to_string(T - 1), lastDim = std::to_string(dModel - 1);
    list->AddText(ImVec2(m0.x - 4.0f - ImGui::CalcTextSize(lastRow.c_str()).x, m1.y - ImGui::GetTextLineHeight()), text, lastRow.c_str());
    list->AddText(ImVec2(m0.x, m1.y + 2.0f), text, "dim 0");
    list->AddText(ImVec2(m1.x - ImGui::CalcTextSize(lastDim.c_str()).x, m1.y + 2.0f), text, lastDim.c_str());
    widgets::colorBar(list, ImVec2(m1.x + 8.0f, m0.y), ImVec2(m1.x + 8.0f + barW, m1.y), s.view.colormap, -1.0f, 1.0f, 3);
    ImGui::Dummy(ImVec2(rest.x, h + lineH));
    ImGui::End();
}

}  // namespace attnviz::app
