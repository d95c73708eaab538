#include "app/panels/stages_panel.hpp"

#include "app/widgets/text.hpp"
#include "core/base/format.hpp"

#include <cmath>
#include <cstdio>
#include <limits>

namespace attnviz::app {
namespace {

std::vector<std::string> dims(const char* prefix, Eigen::Index n) {
    std::vector<std::string> out;
    for (Eigen::Index i = 0; i < n; ++i) out.push_back(prefix + std::to_string(i));
    return out;
}

}  // namespace

StageView stageView(const AppState& s, int index, int head, bool withValues) {
    const core::HeadTensors& h = s.forward.heads[static_cast<std::size_t>(head)];
    const auto& rows = s.queryLabels;
    const auto& keys = s.keyLabels;
    const float c = core::logitScale(s.model.dk, s.settings);
    char divisor[64];
    if (s.settings.scaled) std::snprintf(divisor, sizeof divisor, "√d_k · τ = √%d · %.3g", s.model.dk, s.settings.temperature);
    else std::snprintf(divisor, sizeof divisor, "τ = %.3g (unscaled)", s.settings.temperature);
    StageView v;
    const core::Mat* source = nullptr;
    switch (index) {
        case 0:
            v = {"X",
                 s.loaded ? "X = ln_1(h), h entering layer " + std::to_string(s.scenario.layer + 1)
                          : "X = embeddings" + std::string(s.model.positional.size() ? " + positional encoding" : ""),
                 s.loaded ? "One row per token: the residual stream entering this layer, normed; every head projects it."
                          : "One row per token: the input every head projects.",
                 0,
                 0,
                 {},
                 rows,
                 dims("d", s.model.x.cols())};
            if (!s.model.explicitQkv) source = &s.model.x;
            break;
        case 1:
            v = {"Q",
                 s.loaded ? "Q = X W_Q + b_Q" : "Q = X W_Q",
                 "Queries: what each token asks for.",
                 0,
                 0,
                 {},
                 rows,
                 dims("d", h.q.cols())},
            source = &h.q;
            break;
        case 2:
            v = {"K",
                 s.loaded ? "K = X W_K + b_K" : "K = X W_K",
                 "Keys: how each token can be found.",
                 0,
                 0,
                 {},
                 keys,
                 dims("d", h.k.cols())},
            source = &h.k;
            break;
        case 3:
            v = {"V",
                 s.loaded ? "V = X W_V + b_V" : "V = X W_V",
                 "Values: what each token hands over when it is found.",
                 0,
                 0,
                 {},
                 keys,
                 dims("d", h.v.cols())},
            source = &h.v;
            break;
        case 4:
            v = {"Q Kᵀ", "S = Q Kᵀ", "Every query against every key: raw dot products.", 0, 0, {}, rows, keys}, source = &h.scores;
            break;
        case 5:
            v = {"scaled", std::string("S / (") + divisor + ")", "Divided so the softmax stays responsive.", 0, 0, {}, rows, keys},
            source = &h.scores;
            break;
        case 6:
            v = {"masked",
                 "blocked cells → −∞",
                 s.settings.causal ? "Causal: a query may not read future keys." : "No mask is on: nothing changes.",
                 0,
                 0,
                 {},
                 rows,
                 keys};
            source = &h.scores;
            break;
        case 7:
            v = {"A", "A = softmax(rows)", "Each row becomes a distribution over keys: it sums to 1.", 0, 0, {}, rows, keys},
            source = &h.weights;
            break;
        default:
            v = {"A·V", "Y = A V", "Each output row is a weighted average of value rows.", 0, 0, {}, rows, dims("d", h.output.cols())},
            source = &h.output;
            break;
    }
    if (!source) return v;
    v.rows = source->rows();
    v.cols = source->cols();
    if (!withValues || v.rows > kPrintableStage || v.cols > kPrintableStage) return v;
    v.values = *source;
    if (index == 5 || index == 6) v.values *= c;
    if (index == 6)
        for (Eigen::Index i = 0; i < v.rows; ++i)
            for (Eigen::Index j = 0; j < v.cols; ++j)
                if (core::isBlocked(s.settings, i, j)) v.values(i, j) = -std::numeric_limits<float>::infinity();
    return v;
}

void StagesPanel::draw(PanelContext& ctx) {
    const AppState& s = ctx.state;
    const int head = std::max(0, s.view.selectedHead);
    if (!beginPanelFor(ctx, title(), head, false)) return;
    // The passport: every stage with its shape; the current one highlighted and clickable.
    for (int k = 0; k < kStageCount; ++k) {
        const StageView v = stageView(s, k, head, false);
        if (k) ImGui::SameLine(0, 2);
        if (k) {
            ImGui::TextDisabled("→");
            ImGui::SameLine(0, 2);
        }
        const bool current = k == s.view.stage;
        if (current) ImGui::PushStyleColor(ImGuiCol_Button, ImGui::GetStyleColorVec4(ImGuiCol_ButtonActive));
        if (ImGui::SmallButton((v.name + "##stage" + std::to_string(k)).c_str())) ctx.actions.emit(action::StepStage{k - s.view.stage});
        if (current) ImGui::PopStyleColor();
        if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s: %s", v.name.c_str(), v.rows ? core::shapeString(v.rows, v.cols).c_str() : "n/a");
    }
    const StageView v = stageView(s, s.view.stage, head, true);
    if (ctx.fonts.large) ImGui::PushFont(ctx.fonts.large);
    ImGui::Text("%s", v.formula.c_str());
    if (ctx.fonts.large) ImGui::PopFont();
    ImGui::SameLine();
    if (v.rows) ImGui::TextDisabled("shape %s  (head %d)", core::shapeString(v.rows, v.cols).c_str(), head + 1);
    ImGui::TextWrapped("%s  ← / → step through the stages.", v.meaning.c_str());
    if (v.rows == 0) {
        ImGui::TextDisabled("This scenario gives Q, K and V directly: there is no X.");
    } else if (v.values.size() != 0) {
        if (ctx.fonts.mono) ImGui::PushFont(ctx.fonts.mono);
        const int cols = static_cast<int>(v.values.cols()) + 1;
        if (ImGui::BeginTable(
                "##stage", cols,
                ImGuiTableFlags_Borders | ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_ScrollX | ImGuiTableFlags_ScrollY)) {
            // Tokens label rows and (for Q Kᵀ … A) columns: in the regular font, which has
            // their glyphs, cut to 8 ems; the header drawn as plain text so that a token with
            // "##" in it is not taken for an ID.
            const auto tokenCell = [&](const std::string& token) {
                if (ctx.fonts.mono) ImGui::PushFont(ctx.fonts.regular);
                ImGui::TextUnformatted(widgets::fitLabel(token, ImGui::GetFontSize() * 8.0f).c_str());
                if (ctx.fonts.mono) ImGui::PopFont();
            };
            ImGui::TableSetupScrollFreeze(1, 1);
            for (int c = 0; c < cols; ++c) ImGui::TableSetupColumn(("##col" + std::to_string(c)).c_str());
            ImGui::TableNextRow(ImGuiTableRowFlags_Headers);
            for (int c = 1; c < cols; ++c) {
                ImGui::TableSetColumnIndex(c);
                tokenCell(v.colLabels[static_cast<std::size_t>(c - 1)]);
            }
            for (Eigen::Index i = 0; i < v.values.rows(); ++i) {
                ImGui::TableNextRow();
                ImGui::TableNextColumn();
                tokenCell(v.rowLabels[static_cast<std::size_t>(i)]);
                for (Eigen::Index j = 0; j < v.values.cols(); ++j) {
                    ImGui::TableNextColumn();
                    const float x = v.values(i, j);
                    if (std::isinf(x)) ImGui::TextDisabled("  −∞");
                    else ImGui::Text("%6.3f", x);
                }
            }
            ImGui::EndTable();
        }
        if (ctx.fonts.mono) ImGui::PopFont();
    } else {
        ImGui::TextDisabled("%s is too large to print (%s); export it with --export or the File menu.", v.name.c_str(),
                            core::shapeString(v.rows, v.cols).c_str());
    }
    ImGui::End();
}

}  // namespace attnviz::app
