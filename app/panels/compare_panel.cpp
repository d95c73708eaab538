#include "app/panels/compare_panel.hpp"

#include "app/fonts/font_atlas.hpp"
#include "app/gfx/texture_cache.hpp"
#include "app/state/compare_view.hpp"
#include "app/state/head_summary.hpp"
#include "app/state/source.hpp"
#include "app/widgets/charts.hpp"
#include "app/widgets/text.hpp"
#include "core/base/format.hpp"

#include <imgui_stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace attnviz::app {
namespace {

constexpr std::size_t kEditableBytes = 64 * 1024;

// The other sentence's field: compared when Enter is pressed or "Compare" clicked.
void textField(PanelContext& ctx) {
    const AppState& s = ctx.state;
    std::string& draft = ctx.drafts.compare;
    if (ctx.drafts.compareSource != s.view.compareText) draft = ctx.drafts.compareSource = s.view.compareText;
    const float buttons = ImGui::CalcTextSize("Compare").x + ImGui::CalcTextSize("Stop").x + ImGui::GetStyle().FramePadding.x * 4.0f +
                          ImGui::GetStyle().ItemSpacing.x * 2.0f;
    ImGui::SetNextItemWidth(std::max(ImGui::GetFontSize() * 6.0f, ImGui::GetContentRegionAvail().x - buttons));
    bool go = false;
    const std::optional<std::string> slotted = draft.size() <= kEditableBytes ? slottedText(draft) : std::nullopt;
    if (slotted) {
        std::string field = *slotted;
        go = ImGui::InputTextWithHint("##compare", "another sentence, e.g. one word changed", &field, ImGuiInputTextFlags_EnterReturnsTrue);
        draft = unslottedText(field, *slotted);
    } else {
        ImGui::TextDisabled("%s", widgets::fitLabel(draft, ImGui::GetContentRegionAvail().x - buttons).c_str());
    }
    tooltip("B: the same model over another sentence. Press Enter or Compare.");
    ImGui::SameLine();
    ImGui::BeginDisabled(draft.empty());
    go |= ImGui::Button("Compare");
    ImGui::EndDisabled();
    ImGui::SameLine();
    ImGui::BeginDisabled(s.view.compareText.empty());
    if (ImGui::Button("Stop")) {
        ctx.actions.emit(action::SetCompare{""});
        draft.clear();
    }
    ImGui::EndDisabled();
    if (go && !draft.empty() && draft != s.view.compareText) ctx.actions.emit(action::SetCompare{draft});
}

}  // namespace

void ComparePanel::draw(PanelContext& ctx) {
    const AppState& s = ctx.state;
    if (!beginPanel(ctx, title())) return;
    if (noModelNote(ctx, "comparing two sentences needs the shown layer over both")) return;
    if (!s.view.presenter) textField(ctx);
    const CompareView& c = s.compare;
    if (s.view.compareText.empty()) {
        widgets::wrappedTextColored(ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled),
                                    "Type another sentence: the shown head over both, side by side, and their difference where the "
                                    "tokens line up. Change one word to see which heads care about it (the model view's \"moved\").");
        ImGui::End();
        return;
    }
    if (!compareCurrent(s)) {
        ImGui::TextDisabled("running the other sentence…");
        ImGui::End();
        return;
    }
    if (!c.why.empty()) {
        widgets::wrappedTextColored(ImVec4(1.0f, 0.45f, 0.4f, 1.0f), c.why);
        ImGui::End();
        return;
    }
    const core::AttentionMaps mapsA = attentionMaps(s), mapsB = compareMaps(s);
    if (!mapsA || !mapsB) {
        ImGui::End();
        return;
    }
    const int layer = compareLayer(s);
    const int head = shownHead(s) >= 0 && shownHead(s) < mapsA.heads ? shownHead(s) : -1;
    const core::Mat a = core::headOrMean(mapsA, layer, head), b = core::headOrMean(mapsB, layer, head);
    core::MaskMat lined;
    const core::Mat diff = core::alignedDifference(a, b, c.alignment, lined);
    float range = 0.0f;
    for (Eigen::Index i = 0; i < diff.rows(); ++i)
        for (Eigen::Index j = 0; j < diff.cols(); ++j)
            if (lined(i, j)) range = std::max(range, std::abs(diff(i, j)));
    const double moved = core::mapMoved(a, b, c.alignment);
    const float weightTop = core::sharedWeightTop(a, b);

    // Caption: which head, how the tokens line up, how far it moved; the model view's tint.
    const std::string which = (capabilities(s).ownPass ? "layer " + std::to_string(layer + 1) + " · " : std::string()) +
                              (head >= 0 ? "head " + std::to_string(head + 1) : "mean over heads");
    const std::string line =
        which + " · moved " + core::formatFixed(moved, 3) + " · " + core::alignmentText(c.alignment, static_cast<int>(c.labels.size()));
    widgets::wrappedText(line);
    widgets::hoverTooltip(std::string(core::movedRule()) +
                          (capabilities(s).ownPass ? "\nA and B are the model's own pass (" + ownSoftmaxNote(s) + ")." : ""));
    if (!s.view.presenter && mapsA.count() > 1) {
        const bool tinted = s.view.modelView.tint && s.view.modelView.score == core::HeadScore::Moved;
        ImGui::BeginDisabled(tinted);
        if (ImGui::SmallButton("tint the model view")) {
            ModelViewOptions options = s.view.modelView;
            options.score = core::HeadScore::Moved;
            options.tint = true;
            ctx.actions.emit(action::SetModelView{options});
        }
        ImGui::EndDisabled();
        tooltip("Tint (and sort, if sorted) every head in the model view by how far its map moved.");
    }

    // Three maps: A, B, B − A.
    const float em = ImGui::GetFontSize(), gap = em;
    float labelW = 0.0f;
    for (std::size_t i = 0; i < s.keyLabels.size() && i < 256; ++i)
        labelW = std::max(labelW, ImGui::CalcTextSize(widgets::clipLabel(s.keyLabels[i]).c_str()).x);
    labelW = std::min(labelW, 4.0f * em) + 0.6f * em;
    const ImVec2 area = ImGui::GetContentRegionAvail();
    const float top = ImGui::GetTextLineHeightWithSpacing(), below = ImGui::GetTextLineHeightWithSpacing() * 3.0f;
    const float barW = 4.2f * em;
    const float side = std::min((area.x - labelW - 2.0f * gap - barW) / 3.0f, area.y - top - below);
    if (side < 2.0f * em) {
        ImGui::TextDisabled("%s", widgets::fitLabel("enlarge the panel to see the maps", area.x).c_str());
        ImGui::End();
        return;
    }
    const float w = side * static_cast<float>(std::max<Eigen::Index>(1, a.cols())) / static_cast<float>(std::max(a.rows(), a.cols()));
    const float h = side * static_cast<float>(std::max<Eigen::Index>(1, a.rows())) / static_cast<float>(std::max(a.rows(), a.cols()));
    const ImVec2 o = ImGui::GetCursorScreenPos();
    ImDrawList* list = ImGui::GetWindowDrawList();
    const gfx::TextureStamp stamp{c.version + (static_cast<std::uint64_t>(layer) << 40U), head};
    const core::Settings maskA = mapsA.layerSettings(layer), maskB = mapsB.layerSettings(layer);
    const auto diffTexels = [&] {
        gfx::MatrixSource m = gfx::texelsOf(diff);
        for (Eigen::Index i = 0; i < diff.rows(); ++i)
            for (Eigen::Index j = 0; j < diff.cols(); ++j)
                if (!lined(i, j)) m.texels[static_cast<std::size_t>(i * diff.cols() + j)] = core::kMaskedTexel;
        return m;
    };
    const float r = std::max(range, 1e-6f);
    struct Map {
        const char* key;
        std::string caption;
        const gfx::HeatmapTexture* tex;
        ImVec2 min, max;
    };
    Map maps[3] = {
        {"compare:a",
         "A: this sentence",
         &ctx.textures.get(
             "compare:a", stamp, {s.view.colormap, 0.0f, weightTop}, [&] { return gfx::texelsOf(a, maskA); }, 512),
         {},
         {}},
        {"compare:b",
         "B: the other",
         &ctx.textures.get(
             "compare:b", stamp, {s.view.colormap, 0.0f, weightTop}, [&] { return gfx::texelsOf(b, maskB); }, 512),
         {},
         {}},
        {"compare:d",
         "B − A (lined-up tokens)",
         &ctx.textures.get("compare:d", stamp, {core::ColormapKind::Diverging, -r, r}, diffTexels, 512),
         {},
         {}},
    };
    float x = o.x + labelW;
    for (int k = 0; k < 3; ++k) {
        Map& m = maps[k];
        const float mw =
            k == 1 ? side * static_cast<float>(std::max<Eigen::Index>(1, b.cols())) / static_cast<float>(std::max(b.rows(), b.cols())) : w;
        const float mh =
            k == 1 ? side * static_cast<float>(std::max<Eigen::Index>(1, b.rows())) / static_cast<float>(std::max(b.rows(), b.cols())) : h;
        list->AddText(ImVec2(x, o.y), ImGui::GetColorU32(ImGuiCol_Text), widgets::fitLabel(m.caption, side).c_str());
        m.min = ImVec2(x, o.y + top);
        m.max = ImVec2(x + mw, o.y + top + mh);
        ctx.heatmaps.draw(list, *m.tex, m.min, m.max, ImVec2(0, 0), ImVec2(1, 1));
        if (k == 0) widgets::matrixLabels(list, m.min, m.max, s.queryLabels, {}, labelW);
        x += side + gap;
    }
    widgets::colorBar(list, ImVec2(x - gap + 0.5f * em, o.y + top), ImVec2(x - gap + 1.2f * em, o.y + top + std::min(h, 12.0f * em)),
                      core::ColormapKind::Diverging, -r, r, 3);

    // Hover: the cell in every map, with its tokens.
    ImGui::SetCursorScreenPos(o);
    ImGui::InvisibleButton("##compare maps", ImVec2(std::max(1.0f, x - o.x), top + side));
    if (ImGui::IsItemHovered()) {
        const ImVec2 mouse = ImGui::GetIO().MousePos;
        for (int k = 0; k < 3; ++k) {
            const Map& m = maps[k];
            if (mouse.x < m.min.x || mouse.x >= m.max.x || mouse.y < m.min.y || mouse.y >= m.max.y) continue;
            const bool onB = k == 1;
            const Eigen::Index rows = onB ? b.rows() : a.rows(), cols = onB ? b.cols() : a.cols();
            const auto i = std::clamp<Eigen::Index>(
                static_cast<Eigen::Index>((mouse.y - m.min.y) / (m.max.y - m.min.y) * static_cast<float>(rows)), 0, rows - 1);
            const auto j = std::clamp<Eigen::Index>(
                static_cast<Eigen::Index>((mouse.x - m.min.x) / (m.max.x - m.min.x) * static_cast<float>(cols)), 0, cols - 1);
            const std::vector<std::string>& labels = onB ? c.labels : s.keyLabels;
            std::string text = std::string(onB ? "B" : "A") + ": query " + std::to_string(i + 1) + " " +
                               widgets::clipLabel(labels[static_cast<std::size_t>(i)]) + " → key " + std::to_string(j + 1) + " " +
                               widgets::clipLabel(labels[static_cast<std::size_t>(j)]) + "\n";
            if (onB) text += "B " + core::formatFixed(b(i, j), 4);
            else {
                text += "A " + core::formatFixed(a(i, j), 4);
                if (lined(i, j))
                    text += " · B " + core::formatFixed(a(i, j) + diff(i, j), 4) + " · B − A " + core::formatFixed(diff(i, j), 4);
                else text += " · no partner in B";
            }
            widgets::showTooltip(text);
        }
    }
    ImGui::SetCursorScreenPos(ImVec2(o.x, o.y + top + std::max(h, side * 0.0f) + 4.0f));
    char caption[200];
    std::snprintf(caption, sizeof caption,
                  "A, B: weights 0 … %.3g (one scale) · B − A: ±%.3g (blue: less in B, red: more in B) · hatched: no partner",
                  static_cast<double>(weightTop), static_cast<double>(range));
    widgets::wrappedTextColored(ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled), caption);
    ImGui::End();
}

}  // namespace attnviz::app
