#include "app/panels/lesson_panel.hpp"

#include "app/widgets/text.hpp"

#include <imgui_stdlib.h>

#include <algorithm>
#include <cfloat>
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
// (the keys' hint goes first when there is no room for both, then the buttons' words).
void stepBar(PanelContext& ctx, const LessonState& l) {
    const int n = static_cast<int>(l.lesson.steps.size());
    const ImGuiStyle& style = ImGui::GetStyle();
    const float em = ImGui::GetFontSize();
    const auto buttonW = [&](const char* label) { return ImGui::CalcTextSize(label).x + style.FramePadding.x * 2.0f; };
    const std::string prefix = "Step " + std::to_string(l.step + 1) + " of " + std::to_string(n);
    const float avail = ImGui::GetContentRegionAvail().x;
    const bool compact = buttonW("◀ Previous") + buttonW("Next ▶") + buttonW("Close lesson") + ImGui::CalcTextSize(prefix.c_str()).x +
                             style.ItemSpacing.x * 4.0f + 6.0f * em >
                         avail;
    const char* previous = compact ? "◀" : "◀ Previous";
    const char* next = compact ? "▶" : "Next ▶";
    const char* close = compact ? "Close" : "Close lesson";
    ImGui::BeginDisabled(l.step == 0);
    if (ImGui::Button(previous)) ctx.actions.emit(action::StepLesson{-1});
    ImGui::EndDisabled();
    const char* hint = "PageUp / PageDown";
    const float hintW = ImGui::CalcTextSize(hint).x + style.ItemSpacing.x;
    float room = avail - ImGui::GetItemRectSize().x - ImGui::CalcTextSize((prefix + " · ").c_str()).x - buttonW(next) - buttonW(close) -
                 style.ItemSpacing.x * 4.0f;
    const std::string shownTitle = widgets::clipLabel(l.lesson.title, widgets::kTitleGlyphs);
    const bool showHint = room - hintW >= std::min(ImGui::CalcTextSize(shownTitle.c_str()).x, em * 8.0f);
    if (showHint) room -= hintW;
    // the title only where a few words of it fit
    const std::string title = room >= 3.0f * em ? " · " + widgets::fitLabel(l.lesson.title, room, widgets::kTitleGlyphs) : "";
    widgets::sameLineIfFits(ImGui::CalcTextSize((prefix + title).c_str()).x);
    ImGui::TextUnformatted((prefix + title).c_str());
    if (title != " · " + l.lesson.title) widgets::hoverTooltip(l.lesson.title);
    widgets::sameLineIfFits(buttonW(next));
    ImGui::BeginDisabled(l.step + 1 >= n);
    if (ImGui::Button(next)) ctx.actions.emit(action::StepLesson{+1});
    ImGui::EndDisabled();
    if (showHint) {
        ImGui::SameLine();
        ImGui::TextDisabled("%s", hint);
    }
    // Close at the right end of the line when it fits there
    const float closeX = ImGui::GetWindowContentRegionMax().x - buttonW(close);
    if (ImGui::GetItemRectMax().x - ImGui::GetWindowPos().x + style.ItemSpacing.x <= closeX) ImGui::SameLine(closeX);
    if (ImGui::Button(close)) ctx.actions.emit(action::CloseLesson{});
    if (compact) widgets::hoverTooltip("Close the lesson");
}

// 3. the quick check: the question on one line (the whole on hover), a typed answer checked
// against the live number.
void quickCheck(PanelContext& ctx, const LessonState& l, const core::QuickCheck& check) {
    ImGui::Separator();
    const std::string question = widgets::fitLabel("Quick check: " + widgets::clipText(check.question, widgets::kTooltipGlyphs, false).text,
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

// The height of the step's title and text wrapped at `width` in the current font at `scale` (the
// text in the large font for the back of the room in presenter mode).
float textHeight(const core::LessonStep& step, float width, const Fonts& fonts, bool presenter, float scale) {
    const auto tall = [&](ImFont* font, const std::string& text) {
        ImFont* f = font ? font : ImGui::GetFont();
        return f
            ->CalcTextSizeA(f->FontSize * scale, FLT_MAX, width, text.c_str(), text.c_str() + std::min(text.size(), widgets::kPieceBytes))
            .y;
    };
    const float spacing = ImGui::GetStyle().ItemSpacing.y;
    float h = tall(fonts.large, "Ag") + spacing;
    for (const std::string& line : step.text) h += tall(presenter ? fonts.large : nullptr, line) + spacing;
    return h;
}

float checkHeight(const core::LessonStep& step) {
    return step.check ? ImGui::GetTextLineHeightWithSpacing() + ImGui::GetFrameHeight() + ImGui::GetStyle().ItemSpacing.y * 3.0f : 0.0f;
}

}  // namespace

float lessonPanelHeight(const LessonState& l, float width, const Fonts& fonts, bool presenter) {
    // in the font the panel is drawn in: the large one in presenter mode
    const bool large = presenter && fonts.large;
    if (large) ImGui::PushFont(fonts.large);
    const ImGuiStyle& style = ImGui::GetStyle();
    const core::LessonStep& step = l.lesson.steps[static_cast<std::size_t>(l.step)];
    const float inner = width - style.WindowPadding.x * 2.0f - style.ScrollbarSize;
    const float height = ImGui::GetFrameHeight() * 2.0f + style.ItemSpacing.y + textHeight(step, inner, fonts, presenter, 1.0f) +
                         checkHeight(step) + style.WindowPadding.y * 2.0f + 2.0f;
    if (large) ImGui::PopFont();
    return height;
}

void LessonPanel::draw(PanelContext& ctx) {
    const AppState& s = ctx.state;
    if (!s.lesson || !beginPanel(ctx, title())) return;
    const LessonState& l = *s.lesson;
    const core::LessonStep& step = l.lesson.steps[static_cast<std::size_t>(l.step)];
    stepBar(ctx, l);

    // 2. the step: its title on one line and its text, scrolling in what the quick check leaves
    const float checkH = checkHeight(step);
    ImGui::BeginChild("##text", ImVec2(0.0f, std::max(ImGui::GetContentRegionAvail().y - checkH, ImGui::GetTextLineHeightWithSpacing())));
    // The text at the largest scale down to 0.6 at which it fits (a lecturer's own long step at a
    // large UI scale); it scrolls only when even that does not.
    const bool presenter = s.view.presenter;
    const ImVec2 room = ImGui::GetContentRegionAvail();
    float fit = 1.0f;
    while (fit > 0.65f && textHeight(step, room.x, ctx.fonts, presenter, fit) > room.y) fit -= 0.1f;
    ImGui::SetWindowFontScale(fit);
    if (ctx.fonts.large) ImGui::PushFont(ctx.fonts.large);
    const std::string heading = widgets::fitLabel(step.title, ImGui::GetContentRegionAvail().x, widgets::kTooltipGlyphs);
    ImGui::TextColored(ImVec4(0.96f, 0.62f, 0.04f, 1.0f), "%s", heading.c_str());  // amber, as the seeds' headings
    if (ctx.fonts.large) ImGui::PopFont();
    if (heading != step.title) widgets::hoverTooltip(step.title);
    // In presenter mode the text is read from the back of the room: the large font.
    const bool large = presenter && ctx.fonts.large;
    if (large) ImGui::PushFont(ctx.fonts.large);
    for (const std::string& line : step.text) widgets::wrappedText(line);
    if (large) ImGui::PopFont();
    ImGui::EndChild();

    if (ctx.drafts.checkStep != l.step) ctx.drafts.checkAnswer.clear(), ctx.drafts.checkStep = l.step;
    if (step.check) quickCheck(ctx, l, *step.check);
    ImGui::End();
}

}  // namespace attnviz::app
