#include "app/panels/lesson_panel.hpp"

#include "app/widgets/text.hpp"

#include <imgui_stdlib.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace attnviz::app {
namespace {

std::string number(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return buf;
}

// 1. where we are, and the way on; the lesson's title gets what the buttons leave of the line
// (the keys' hint goes first when there is no room for both).
void stepBar(PanelContext& ctx, const LessonState& l) {
    const int n = static_cast<int>(l.lesson.steps.size());
    ImGui::BeginDisabled(l.step == 0);
    if (ImGui::Button("◀ Previous")) ctx.actions.emit(action::StepLesson{-1});
    ImGui::EndDisabled();
    ImGui::SameLine();
    const ImGuiStyle& style = ImGui::GetStyle();
    const std::string prefix = "Step " + std::to_string(l.step + 1) + " of " + std::to_string(n) + " · ";
    const char* hint = "PageUp / PageDown";
    const float hintW = ImGui::CalcTextSize(hint).x + style.ItemSpacing.x;
    float room = ImGui::GetContentRegionAvail().x - ImGui::CalcTextSize(prefix.c_str()).x - ImGui::CalcTextSize("Next ▶").x -
                 ImGui::CalcTextSize("Close lesson").x - style.FramePadding.x * 2.0f - style.ItemSpacing.x * 3.0f - 12.0f;
    const bool showHint = room - hintW >= std::min(ImGui::CalcTextSize(widgets::clipLabel(l.lesson.title, widgets::kTitleGlyphs).c_str()).x,
                                                   ImGui::GetFontSize() * 8.0f);
    if (showHint) room -= hintW;
    const std::string title = widgets::fitLabel(l.lesson.title, std::max(room, ImGui::GetFontSize() * 2.0f), widgets::kTitleGlyphs);
    ImGui::TextUnformatted((prefix + title).c_str());
    if (title != l.lesson.title) widgets::hoverTooltip(l.lesson.title);
    ImGui::SameLine();
    ImGui::BeginDisabled(l.step + 1 >= n);
    if (ImGui::Button("Next ▶")) ctx.actions.emit(action::StepLesson{+1});
    ImGui::EndDisabled();
    if (showHint) {
        ImGui::SameLine();
        ImGui::TextDisabled("%s", hint);
    }
    ImGui::SameLine(ImGui::GetWindowContentRegionMax().x - ImGui::CalcTextSize("Close lesson").x - 12.0f);
    if (ImGui::SmallButton("Close lesson")) ctx.actions.emit(action::CloseLesson{});
}

// 3. the quick check: the question on one line (the whole on hover), a typed answer checked
// against the live number.
void quickCheck(PanelContext& ctx, const LessonState& l, const core::QuickCheck& check) {
    ImGui::Separator();
    const std::string question = widgets::fitLabel("Quick check: " + widgets::clipLabel(check.question, widgets::kTooltipGlyphs),
                                                   ImGui::GetContentRegionAvail().x, widgets::kTooltipGlyphs);
    ImGui::TextUnformatted(question.c_str());
    if (question.ends_with("…")) widgets::hoverTooltip(check.question);
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 8.0f);
    const bool enter = ImGui::InputText("##answer", &ctx.drafts.checkAnswer, ImGuiInputTextFlags_EnterReturnsTrue);
    ImGui::SameLine();
    if (ImGui::Button("Check") || enter) {
        char* end = nullptr;
        const double value = std::strtod(ctx.drafts.checkAnswer.c_str(), &end);
        if (end == ctx.drafts.checkAnswer.c_str() || *end != '\0') ctx.actions.emit(action::AnswerCheck{std::nan("")});
        else ctx.actions.emit(action::AnswerCheck{value});
    }
    if (l.result) {
        ImGui::SameLine();
        const ImVec4 colour = l.result->correct ? ImVec4(0.20f, 0.75f, 0.35f, 1.0f) : ImVec4(0.95f, 0.35f, 0.25f, 1.0f);
        ImGui::TextColored(colour, "%s: the live value is %s", l.result->correct ? "Correct" : "Not quite", number(l.result->live).c_str());
    }
}

}  // namespace

void LessonPanel::draw(PanelContext& ctx) {
    const AppState& s = ctx.state;
    if (!s.lesson || !beginPanel(ctx, title())) return;
    const LessonState& l = *s.lesson;
    const core::LessonStep& step = l.lesson.steps[static_cast<std::size_t>(l.step)];
    stepBar(ctx, l);

    // 2. the step: its title on one line and its text, scrolling in what the quick check leaves
    const float checkH =
        step.check ? ImGui::GetTextLineHeightWithSpacing() + ImGui::GetFrameHeight() + ImGui::GetStyle().ItemSpacing.y * 3.0f : 0.0f;
    ImGui::BeginChild("##text", ImVec2(0.0f, std::max(ImGui::GetContentRegionAvail().y - checkH, ImGui::GetTextLineHeightWithSpacing())));
    if (ctx.fonts.large) ImGui::PushFont(ctx.fonts.large);
    const std::string heading = widgets::fitLabel(step.title, ImGui::GetContentRegionAvail().x, widgets::kTooltipGlyphs);
    widgets::labelColored(ImVec4(0.96f, 0.62f, 0.04f, 1.0f), heading, widgets::kTooltipGlyphs);  // amber, as the seeds' headings
    if (ctx.fonts.large) ImGui::PopFont();
    if (heading != step.title) widgets::hoverTooltip(step.title);
    // In presenter mode the text is read from the back of the room: the large font.
    const bool large = s.view.presenter && ctx.fonts.large;
    if (large) ImGui::PushFont(ctx.fonts.large);
    for (const std::string& line : step.text) widgets::wrappedText(line);
    if (large) ImGui::PopFont();
    ImGui::EndChild();

    if (ctx.drafts.checkStep != l.step) ctx.drafts.checkAnswer.clear(), ctx.drafts.checkStep = l.step;
    if (step.check) quickCheck(ctx, l, *step.check);
    ImGui::End();
}

}  // namespace attnviz::app
