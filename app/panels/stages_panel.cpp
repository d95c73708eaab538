#include "app/panels/stages_panel.hpp"

#include "core/format.hpp"

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

StageView stageView(const AppState& s, int index, int head) {
    const core::HeadTensors& h = s.forward.heads[static_cast<std::size_t>(head)];
    const auto& rows = s.queryLabels;
    const auto& keys = s.keyLabels;
    const float c = core::logitScale(s.model.dk, s.settings);
    char divisor[64];
    if (s.settings.scaled) std::snprintf(divisor, sizeof divisor, "√d_k · τ = √%d · %.3g", s.model.dk, s.settings.temperature);
    else std::snprintf(divisor, sizeof divisor, "τ = %.3g (unscaled)", s.settings.temperature);
    switch (index) {
        case 0:
            return {"X", "X = embeddings" + std::string(s.model.positional.size() ? " + positional encoding" : ""),
                    "One row per token: the input every head projects.", s.model.explicitQkv ? core::Mat() : s.model.x, false,
                    rows, dims("d", s.model.x.cols())};
        case 1: return {"Q", "Q = X W_Q", "Queries: what each token asks for.", h.q, false, rows, dims("d", h.q.cols())};
        case 2: return {"K", "K = X W_K", "Keys: how each token can be found.", h.k, false, keys, dims("d", h.k.cols())};
        case 3: return {"V", "V = X W_V", "Values: what each token hands over when it is found.", h.v, false, keys, dims("d", h.v.cols())};
        case 4: return {"Q Kᵀ", "S = Q Kᵀ", "Every query against every key: raw dot products.", h.scores, false, rows, keys};
        case 5: return {"scaled", std::string("S / (") + divisor + ")", "Divided so the softmax stays responsive.", h.scores * c, false, rows, keys};
        case 6: {
            core::Mat m = h.scores * c;
            for (Eigen::Index i = 0; i < m.rows(); ++i)
                for (Eigen::Index j = 0; j < m.cols(); ++j)
                    if (core::isBlocked(s.settings, i, j)) m(i, j) = -std::numeric_limits<float>::infinity();
            return {"masked", "blocked cells → −∞", s.settings.causal ? "Causal: a query may not read future keys." : "No mask is on: nothing changes.", m, true, rows, keys};
        }
        case 7: return {"A", "A = softmax(rows)", "Each row becomes a distribution over keys: it sums to 1.", h.weights, false, rows, keys};
        default: return {"A·V", "Y = A V", "Each output row is a weighted average of value rows.", h.output, false, rows, dims("d", h.output.cols())};
    }
}

void StagesPanel::draw(PanelContext& ctx) {
    const AppState& s = ctx.state;
    if (!ImGui::Begin(title(), nullptr, ctx.windowFlags)) {
        ImGui::End();
        return;
    }
    const int head = std::max(0, s.view.selectedHead);
    // The passport: every stage with its shape; the current one highlighted and clickable.
    for (int k = 0; k < kStageCount; ++k) {
        const StageView v = stageView(s, k, head);
        if (k) ImGui::SameLine(0, 2);
        if (k) {
            ImGui::TextDisabled("→");
            ImGui::SameLine(0, 2);
        }
        const bool current = k == s.view.stage;
        if (current) ImGui::PushStyleColor(ImGuiCol_Button, ImGui::GetStyleColorVec4(ImGuiCol_ButtonActive));
        if (ImGui::SmallButton((v.name + "##stage" + std::to_string(k)).c_str())) ctx.actions.emit(action::StepStage{k - s.view.stage});
        if (current) ImGui::PopStyleColor();
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip("%s: %s", v.name.c_str(), v.values.size() ? core::shapeString(v.values.rows(), v.values.cols()).c_str() : "n/a");
    }
    const StageView v = stageView(s, s.view.stage, head);
    if (ctx.fonts.large) ImGui::PushFont(ctx.fonts.large);
    ImGui::Text("%s", v.formula.c_str());
    if (ctx.fonts.large) ImGui::PopFont();
    ImGui::SameLine();
    if (v.values.size()) ImGui::TextDisabled("shape %s  (head %d)", core::shapeString(v.values.rows(), v.values.cols()).c_str(), head + 1);
    ImGui::TextWrapped("%s  ← / → step through the stages.", v.meaning.c_str());
    if (v.values.size() == 0) {
        ImGui::TextDisabled("This scenario gives Q, K and V directly: there is no X.");
    } else if (v.values.rows() <= 24 && v.values.cols() <= 24) {
        if (ctx.fonts.mono) ImGui::PushFont(ctx.fonts.mono);
        const int cols = static_cast<int>(v.values.cols()) + 1;
        if (ImGui::BeginTable("##stage", cols, ImGuiTableFlags_Borders | ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_ScrollX | ImGuiTableFlags_ScrollY)) {
            ImGui::TableSetupScrollFreeze(1, 1);
            ImGui::TableSetupColumn("");
            for (const auto& c : v.colLabels) ImGui::TableSetupColumn(c.c_str());
            ImGui::TableHeadersRow();
            for (Eigen::Index i = 0; i < v.values.rows(); ++i) {
                ImGui::TableNextRow();
                ImGui::TableNextColumn();
                ImGui::TextUnformatted(v.rowLabels[static_cast<std::size_t>(i)].c_str());
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
                            core::shapeString(v.values.rows(), v.values.cols()).c_str());
    }
    ImGui::End();
}

}  // namespace attnviz::app
