#include "app/panels/lesson_panel.hpp"

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

}  // namespace

void LessonPanel::draw(PanelContext& ctx) {
    const AppState& s = ctx.state;
    if (!s.lesson || !beginPanel(ctx, title())) return;
    const LessonState& l = *s.lesson;
    const int n = static_cast<int>(l.lesson.steps.size());
    const core::LessonStep& step = l.lesson.steps[static_cast<std::size_t>(l.step)];

    // 1. where we are, and the way on
    ImGui::BeginDisabled(l.step == 0);
    if (ImGui::Button("◀ Previous")) ctx.actions.emit(action::StepLesson{-1});
    ImGui::EndDisabled();
    ImGui::SameLine();
    ImGui::Text("Step %d of %d · %s", l.step + 1, n, l.lesson.title.c_str());
    ImGui::SameLine();
    ImGui::BeginDisabled(l.step + 1 >= n);
    if (ImGui::Button("Next ▶")) ctx.actions.emit(action::StepLesson{+1});
    ImGui::EndDisabled();
    ImGui::SameLine();
    ImGui::TextDisabled("PageUp / PageDown");
    ImGui::SameLine(ImGui::GetWindowContentRegionMax().x - ImGui::CalcTextSize("Close lesson").x - 12.0f);
    if (ImGui::SmallButton("Close lesson")) ctx.actions.emit(action::CloseLesson{});

    // 2. the step
    if (ctx.fonts.large) ImGui::PushFont(ctx.fonts.large);
    ImGui::TextColored(ImVec4(0.96f, 0.62f, 0.04f, 1.0f), "%s", step.title.c_str());  // amber, as the seeds' headings
    if (ctx.fonts.large) ImGui::PopFont();
    // In presenter mode the text is read from the back of the room: the large font.
    const bool large = s.view.presenter && ctx.fonts.large;
    if (large) ImGui::PushFont(ctx.fonts.large);
    ImGui::PushTextWrapPos(0.0f);
    for (const std::string& line : step.text) ImGui::TextUnformatted(line.c_str());
    ImGui::PopTextWrapPos();
    if (large) ImGui::PopFont();

    // 3. the quick check: typed answer, checked against the live number
    if (ctx.drafts.checkStep != l.step) ctx.drafts.checkAnswer.clear(), ctx.drafts.checkStep = l.step;
    if (step.check) {
        ImGui::Separator();
        ImGui::TextUnformatted(("Quick check: " + step.check->question).c_str());
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
            ImGui::TextColored(colour, "%s: the live value is %s", l.result->correct ? "Correct" : "Not quite",
                               number(l.result->live).c_str());
        }
    }
    ImGui::End();
}

}  // namespace attnviz::app
