#include "app/panels/stages_panel.hpp"

#include "app/state/source.hpp"
#include "app/widgets/text.hpp"
#include "core/attention/permutation.hpp"
#include "core/base/format.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

namespace attnviz::app {
namespace {

std::vector<std::string> dims(const char* prefix, Eigen::Index n) {
    std::vector<std::string> out;
    for (Eigen::Index i = 0; i < n; ++i) out.push_back(prefix + std::to_string(i));
    return out;
}

// A number as the stage's table prints it: `digits` after the point, "−∞" for a masked score.
std::string cellText(float x, int digits) {
    if (std::isinf(x)) return "−∞";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.*f", digits, static_cast<double>(x));
    return buf;
}

// Which of `n` rows or columns are printed when only `room` fit: all of them, or the first
// room − 2, a gap (-1), and the last.
std::vector<Eigen::Index> shownIndices(Eigen::Index n, Eigen::Index room) {
    std::vector<Eigen::Index> out;
    if (n <= room) {
        for (Eigen::Index i = 0; i < n; ++i) out.push_back(i);
        return out;
    }
    for (Eigen::Index i = 0; i < std::max<Eigen::Index>(1, room - 2); ++i) out.push_back(i);
    out.push_back(-1);
    out.push_back(n - 1);
    return out;
}

// The stage's matrix as a table that fits the panel: three decimals, or two when that lets
// every column in; the middle columns and rows elided ("…") when even then they do not fit.
void printStage(PanelContext& ctx, const StageView& v) {
    const ImGuiStyle& style = ImGui::GetStyle();
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const float pad = style.CellPadding.x * 2.0f + 1.0f;
    float labelW = 0;
    for (const std::string& r : v.rowLabels) labelW = std::max(labelW, ImGui::CalcTextSize(widgets::clipLabel(r).c_str()).x);
    labelW = std::min(labelW, ImGui::GetFontSize() * 6.0f) + pad;
    if (ctx.fonts.mono) ImGui::PushFont(ctx.fonts.mono);
    // The widest number at `digits`, and how many columns of it fit.
    const auto columnWidth = [&](int digits) {
        float w = ImGui::CalcTextSize("−∞").x;
        for (Eigen::Index i = 0; i < v.values.size(); ++i) w = std::max(w, ImGui::CalcTextSize(cellText(v.values(i), digits).c_str()).x);
        return w + pad;
    };
    int digits = 3;
    float colW = columnWidth(3);
    if (labelW + colW * static_cast<float>(v.values.cols()) > avail.x) digits = 2, colW = columnWidth(2);
    const auto fitCols = static_cast<Eigen::Index>(std::max(3.0f, std::floor((avail.x - labelW) / colW)));
    const float rowH = ImGui::GetTextLineHeight() + style.CellPadding.y * 2.0f + 1.0f;
    const auto fitRows = static_cast<Eigen::Index>(std::max(3.0f, std::floor(avail.y / rowH) - 1.0f));
    const std::vector<Eigen::Index> cols = shownIndices(v.values.cols(), fitCols), rows = shownIndices(v.values.rows(), fitRows);
    if (ImGui::BeginTable("##stage", static_cast<int>(cols.size()) + 1, ImGuiTableFlags_Borders | ImGuiTableFlags_SizingFixedFit)) {
        // Tokens label rows and (for Q Kᵀ … A) columns: in the regular font, which has their
        // glyphs, fitted to the label column; the header drawn as plain text so that a token
        // with "##" in it is not taken for an ID.
        const auto tokenCell = [&](const std::string& token, float width) {
            if (ctx.fonts.mono) ImGui::PushFont(ctx.fonts.regular);
            ImGui::TextUnformatted(widgets::fitLabel(token, width).c_str());
            if (ctx.fonts.mono) ImGui::PopFont();
        };
        for (std::size_t c = 0; c <= cols.size(); ++c) ImGui::TableSetupColumn(("##col" + std::to_string(c)).c_str());
        ImGui::TableNextRow(ImGuiTableRowFlags_Headers);
        for (std::size_t c = 0; c < cols.size(); ++c) {
            ImGui::TableSetColumnIndex(static_cast<int>(c) + 1);
            if (cols[c] < 0) ImGui::TextDisabled("…");
            else tokenCell(v.colLabels[static_cast<std::size_t>(cols[c])], colW - pad);
        }
        for (const Eigen::Index i : rows) {
            ImGui::TableNextRow();
            ImGui::TableNextColumn();
            if (i < 0) {
                ImGui::TextDisabled("…");
                continue;
            }
            tokenCell(v.rowLabels[static_cast<std::size_t>(i)], labelW - pad);
            for (const Eigen::Index j : cols) {
                ImGui::TableNextColumn();
                if (j < 0) ImGui::TextDisabled("…");
                else if (std::isinf(v.values(i, j))) ImGui::TextDisabled("%s", cellText(v.values(i, j), digits).c_str());
                else ImGui::TextUnformatted(cellText(v.values(i, j), digits).c_str());
            }
        }
        ImGui::EndTable();
    }
    if (ctx.fonts.mono) ImGui::PopFont();
    if (cols.size() < static_cast<std::size_t>(v.values.cols()) || rows.size() < static_cast<std::size_t>(v.values.rows()))
        if (ImGui::IsItemHovered())
            widgets::showTooltip("Every number: --export-csv, or File → Export; a wider panel (or a smaller UI scale) prints more.");
}

}  // namespace

StageCheck stageCheck(const AppState& s, int index, int head) {
    const core::HeadTensors& h = s.forward.heads[static_cast<std::size_t>(head)];
    const auto gap = [](const core::MatRef& a, const core::MatRef& b) {
        char text[32];
        const float d = core::maxAbsDiff(a, b);
        std::snprintf(text, sizeof text, "%.2g", static_cast<double>(d));
        return std::pair{d, std::string(text)};
    };
    StageCheck c;
    if (index == 4 && h.scores.rows() == h.scores.cols() && h.scores.rows() > 1 && h.scores.rows() <= 1024) {
        const auto [d, text] = gap(h.scores, core::Mat(h.scores.transpose()));
        c.holds = d == 0.0f;
        c.text = c.holds ? "symmetric: max |S − Sᵀ| = 0 (W_Q = W_K gives Q = K)" : "not symmetric: max |S − Sᵀ| = " + text;
    }
    if (index == 3 && h.v.rows() == h.k.rows() && h.v.cols() == h.k.cols() && h.v.rows() <= 1024) {
        const auto [d, text] = gap(h.v, h.k);
        if (d == 0.0f) c = {"V = K: max |V − K| = 0 (each token hands over its own key)", true};
    }
    return c;
}

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
    const core::decoder::Checkpoint* checkpoint = checkpointOf(s);
    switch (index) {
        case 0:
            v = {"X",
                 checkpoint ? std::string(checkpoint->config().norm == core::decoder::Norm::RmsNorm ? "X = RMSNorm(h)" : "X = ln_1(h)") +
                                  ", h entering layer " + std::to_string(s.scenario.layer + 1)
                            : "X = embeddings" + std::string(s.model.positional.size() ? " + positional encoding" : ""),
                 checkpoint ? "One row per token: the residual stream entering this layer, normed; every head projects it."
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
                 core::projectionFormula(s.model, 'Q') + (s.model.ropeCos.size() != 0 ? ", turned by position" : ""),
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
                 core::projectionFormula(s.model, 'K') + (s.model.ropeCos.size() != 0 ? ", turned by position" : ""),
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
                 core::projectionFormula(s.model, 'V'),
                 "Values: what each token hands over when it is found.",
                 0,
                 0,
                 {},
                 keys,
                 dims("d", h.v.cols())},
            source = &h.v;
            break;
        case 4:
            if (h.alibiSlope != 0.0f)
                v = {"Q Kᵀ",
                     std::string("S = Q Kᵀ − m·|i − j|") + (s.settings.scaled ? "·√d_k" : ""),
                     "Every query against every key, with ALiBi's distance penalty (m = " + core::formatNumber(h.alibiSlope) +
                         " for this head) in the same units.",
                     0,
                     0,
                     {},
                     rows,
                     keys};
            else if (s.model.softcap > 0.0f)
                v = {"Q Kᵀ",
                     "S = c⁻¹·cap·tanh(c·Q Kᵀ / cap), c = 1/√" + std::to_string(s.model.dk) +
                         ", cap = " + core::formatNumber(s.model.softcap),
                     "Every query against every key, soft-capped (Gemma 2): no score times c passes ±cap, however large q · k.",
                     0,
                     0,
                     {},
                     rows,
                     keys};
            else v = {"Q Kᵀ", "S = Q Kᵀ", "Every query against every key: raw dot products.", 0, 0, {}, rows, keys};
            source = &h.scores;
            break;
        case 5:
            v = {"scaled", std::string("S / (") + divisor + ")", "Divided so the softmax stays responsive.", 0, 0, {}, rows, keys},
            source = &h.scores;
            break;
        case 6:
            v = {"masked",
                 "blocked cells → −∞",
                 s.settings.causal && s.settings.window > 0 ? "Causal, in a sliding window: a query reads its last keys up to itself."
                 : s.settings.causal                        ? "Causal: a query may not read future keys."
                 : core::hasMask(s.settings)                ? "Blocked cells (window, padding or mask) take no weight."
                                                            : "No mask is on: nothing changes.",
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
    if (noModelNote(ctx, "the stages need X and the weights W_Q, W_K and W_V")) return;
    // The passport: every stage with its shape; the current one highlighted and clickable. The
    // row wraps after an arrow when the panel is narrow; where it would take more than two lines,
    // a stepper (← 3 of 9: K →) takes its place.
    const ImGuiStyle& style = ImGui::GetStyle();
    float passport = 0;
    for (int k = 0; k < kStageCount; ++k)
        passport += ImGui::CalcTextSize(stageView(s, k, head, false).name.c_str()).x + style.FramePadding.x * 2.0f +
                    ImGui::CalcTextSize("→").x + style.ItemSpacing.x;
    if (passport <= 2.0f * ImGui::GetContentRegionAvail().x) {
        for (int k = 0; k < kStageCount; ++k) {
            const StageView v = stageView(s, k, head, false);
            if (k) {
                ImGui::SameLine(0, 2);
                ImGui::TextDisabled("→");
                const float chip = ImGui::CalcTextSize(v.name.c_str()).x + style.FramePadding.x * 2.0f;
                widgets::sameLineIfFits(chip);
            }
            const bool current = k == s.view.stage;
            if (current) ImGui::PushStyleColor(ImGuiCol_Button, ImGui::GetStyleColorVec4(ImGuiCol_ButtonActive));
            if (ImGui::SmallButton((v.name + "##stage" + std::to_string(k)).c_str())) ctx.actions.emit(action::StepStage{k - s.view.stage});
            if (current) ImGui::PopStyleColor();
            if (ImGui::IsItemHovered())
                ImGui::SetTooltip("%s: %s", v.name.c_str(), v.rows ? core::shapeString(v.rows, v.cols).c_str() : "n/a");
        }
    } else {
        if (ImGui::SmallButton("←##stage")) ctx.actions.emit(action::StepStage{-1});
        ImGui::SameLine();
        ImGui::Text("%d of %d: %s", s.view.stage + 1, kStageCount, stageView(s, s.view.stage, head, false).name.c_str());
        ImGui::SameLine();
        if (ImGui::SmallButton("→##stage")) ctx.actions.emit(action::StepStage{+1});
    }
    const StageView v = stageView(s, s.view.stage, head, true);
    if (ctx.fonts.large) ImGui::PushFont(ctx.fonts.large);
    widgets::wrappedText(v.formula);
    if (ctx.fonts.large) ImGui::PopFont();
    if (v.rows) widgets::flowTextDisabled("shape " + core::shapeString(v.rows, v.cols) + "  (head " + std::to_string(head + 1) + ")");
    if (const StageCheck check = stageCheck(s, s.view.stage, head); !check.text.empty())
        widgets::wrappedTextColored(check.holds ? ImVec4(0.30f, 0.80f, 0.45f, 1.0f) : ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled),
                                    check.text);
    // What the stage means, where it leaves the numbers room (else on the formula's tooltip).
    const std::string meaning = v.meaning + "  ← / → step through the stages.";
    const float meaningH = ImGui::CalcTextSize(meaning.c_str(), nullptr, false, ImGui::GetContentRegionAvail().x).y;
    if (v.values.size() == 0 || ImGui::GetContentRegionAvail().y - meaningH >= 5.0f * ImGui::GetFrameHeightWithSpacing())
        widgets::wrappedText(meaning);
    else if (ImGui::IsItemHovered()) widgets::showTooltip(meaning);
    if (v.rows == 0) {
        widgets::wrappedTextColored(ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled),
                                    "This scenario gives Q, K and V directly: there is no X.");
    } else if (v.values.size() != 0 && ImGui::GetContentRegionAvail().y >= 4.0f * ImGui::GetFrameHeightWithSpacing()) {
        printStage(ctx, v);
    } else if (v.values.size() != 0) {
        if (ImGui::GetContentRegionAvail().y >= ImGui::GetTextLineHeightWithSpacing())
            widgets::flowTextDisabled("numbers: a larger panel, or File → Export", true);
    } else {
        widgets::wrappedTextColored(
            ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled),
            v.name + " is too large to print (" + core::shapeString(v.rows, v.cols) + "); export it with --export or the File menu.");
    }
    ImGui::End();
}

}  // namespace attnviz::app
