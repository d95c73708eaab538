#include "app/panels/head_view_panel.hpp"

#include "app/state/generation.hpp"
#include "app/state/head_summary.hpp"
#include "app/state/head_view.hpp"
#include "app/state/source.hpp"
#include "app/views/head_view_lines.hpp"
#include "app/widgets/charts.hpp"
#include "app/widgets/text.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace attnviz::app {

namespace {

bool contains(const std::vector<int>& sorted, int v) { return std::binary_search(sorted.begin(), sorted.end(), v); }

// One swatch a head: filled when on, an outline when off. Click: on or off; right-click: it alone.
void headSwatches(PanelContext& ctx, int heads, const std::vector<int>& on) {
    const float side = ImGui::GetFontSize() * 1.1f;
    ImDrawList* list = ImGui::GetWindowDrawList();
    for (int h = 0; h < heads; ++h) {
        const std::string text = std::to_string(h + 1);
        const float w = side + ImGui::CalcTextSize(text.c_str()).x + ImGui::GetStyle().ItemInnerSpacing.x * 2.0f;
        widgets::sameLineIfFits(w);
        ImGui::PushID(h);
        const ImVec2 p = ImGui::GetCursorScreenPos();
        const bool clicked = ImGui::InvisibleButton("##swatch", ImVec2(w, side));
        const ImU32 colour = widgets::toImColor(core::headColour(h));
        const bool shown = contains(on, h);
        if (shown) list->AddRectFilled(p, ImVec2(p.x + side, p.y + side), colour, 2.0f);
        else list->AddRect(p, ImVec2(p.x + side, p.y + side), colour, 2.0f, 0, 2.0f);
        if (ImGui::IsItemHovered()) list->AddRect(p, ImVec2(p.x + w, p.y + side), ImGui::GetColorU32(ImGuiCol_Text), 2.0f);
        list->AddText(ImVec2(p.x + side + ImGui::GetStyle().ItemInnerSpacing.x, p.y + (side - ImGui::GetFontSize()) * 0.5f),
                      ImGui::GetColorU32(shown ? ImGuiCol_Text : ImGuiCol_TextDisabled), text.c_str());
        if (clicked) ctx.actions.emit(action::ToggleViewHead{h});
        if (ImGui::IsItemClicked(ImGuiMouseButton_Right)) ctx.actions.emit(action::SetViewHeads{{h}});
        tooltip(
            ("Head " + text + (shown ? ": shown. Click to hide" : ": hidden. Click to show") + "; right-click to show it alone.").c_str());
        ImGui::PopID();
    }
}

}  // namespace

void HeadViewPanel::draw(PanelContext& ctx) {
    const AppState& s = ctx.state;
    if (!beginPanel(ctx, title())) return;
    const core::AttentionMaps maps = attentionMaps(s);
    if (!maps || maps.queries != maps.keys || maps.heads != s.model.heads) {
        if (!maps) ctx.requests.stale.insert(std::string(id()));  // its lines are made once the pass is
        widgets::wrappedText(maps && maps.queries != maps.keys ? "The head view needs the queries to be the keys (self-attention)."
                                                               : "computing…");
        ImGui::End();
        return;
    }
    const int layer = headViewLayer(s, maps);
    const std::vector<int> heads = headViewHeads(s);
    const int T = static_cast<int>(maps.queries);
    const core::HeadLineRule rule;

    // 1. The lines and sums, made once per pass and selection by the view's refresh after a frame.
    const HeadViewLines* made = shownHeadViewLines(s);
    if (made == nullptr) {
        ctx.requests.stale.insert(std::string(id()));
        widgets::wrappedText("computing…");
        ImGui::End();
        return;
    }
    const core::HeadLines& lines = made->lines;
    const std::vector<float>& sums = made->sums;

    // 2. Header: the layer, the heads, the rule.
    const bool presenter = s.view.presenter;
    {
        std::string what = layerCount(s) > 0
                               ? "Layer " + std::to_string(maps.firstLayer + layer + 1) + " of " + std::to_string(maps.layers) + " · "
                               : std::string();
        what += std::to_string(heads.size()) + " of " + std::to_string(maps.heads) + (maps.heads == 1 ? " head" : " heads");
        widgets::flowText(what, true);
        if (!presenter) widgets::remarkIfFits("· opacity = weight");
    }
    headSwatches(ctx, maps.heads, heads);
    if (!presenter) {
        widgets::sameLineIfFits(ImGui::CalcTextSize("All heads").x + ImGui::GetStyle().FramePadding.x * 2);
        if (ImGui::SmallButton("All heads")) {
            std::vector<int> all(static_cast<std::size_t>(maps.heads));
            for (int h = 0; h < maps.heads; ++h) all[static_cast<std::size_t>(h)] = h;
            ctx.actions.emit(action::SetViewHeads{all});
        }
    }
    const std::string ruleText = rule.drops(maps.keys) ? "T > " + std::to_string(rule.allUpTo) + ": each query's " +
                                                             std::to_string(rule.topK) + " strongest keys a head"
                                                       : "every line drawn";
    widgets::flowTextDisabled(ruleText, true);
    if (ImGui::IsItemHovered())
        widgets::showTooltip("Lines drawn: " + rule.describe(maps.keys) + ". A masked key gets no line; a weight of 0 none either.");
    if (!s.view.viewTokens.empty()) {
        widgets::remarkIfFits(s.view.viewTokens.size() > 1
                                  ? "· " + std::to_string(s.view.viewTokens.size()) + " queries, their sum on the keys"
                                  : "· query " + std::to_string(s.view.viewTokens.front() + 1));
        widgets::sameLineIfFits(ImGui::CalcTextSize("Clear").x + ImGui::GetStyle().FramePadding.x * 2);
        if (ImGui::SmallButton("Clear")) ctx.actions.emit(action::PickViewToken{-1, false});
    } else if (!presenter) {
        widgets::remarkIfFits("· hover a token to isolate it, click to keep, shift-click for several");
    }

    // 3. The columns: the rows that fit, from a first row the wheel or the slider moves (ImGui's
    // storage keeps it, as it keeps a child's scroll), only the visible rows drawn.
    const float footH = ImGui::GetTextLineHeightWithSpacing();
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const float baseRowH = std::round(ImGui::GetTextLineHeightWithSpacing() * 1.15f);
    const float areaH = std::max(baseRowH, avail.y - footH);
    // A short sentence spreads out, up to 1.8 lines a row.
    const float rowH = std::clamp(std::floor(areaH / static_cast<float>(std::max(T, 1))), baseRowH, std::round(baseRowH * 1.8f));
    const int fit = std::max(1, static_cast<int>(areaH / rowH));
    const bool scrolls = T > fit;
    const float sliderW = scrolls ? ImGui::GetFontSize() * 0.9f : 0.0f;
    const ImGuiID scrollId = ImGui::GetID("##first row");
    ImGuiStorage* storage = ImGui::GetStateStorage();
    int firstRow = std::clamp(storage->GetInt(scrollId, 0), 0, std::max(0, T - fit));
    const float width = avail.x - (scrolls ? sliderW + ImGui::GetStyle().ItemSpacing.x : 0.0f);
    const float labelW = std::clamp(width * 0.26f, ImGui::GetFontSize() * 3.0f, ImGui::GetFontSize() * 12.0f);
    const float gap = ImGui::GetFontSize() * 0.5f;
    const ImVec2 area = ImGui::GetCursorScreenPos();
    ImGui::InvisibleButton("##columns", ImVec2(std::max(1.0f, width), areaH));
    const bool areaHovered = ImGui::IsItemHovered();
    if (scrolls && areaHovered && ImGui::GetIO().MouseWheel != 0.0f)
        firstRow = std::clamp(firstRow - static_cast<int>(std::lround(ImGui::GetIO().MouseWheel * 3.0f)), 0, T - fit);
    if (scrolls) {
        ImGui::SameLine();
        int top = T - fit - firstRow;  // the slider's top is the first row
        if (ImGui::VSliderInt("##scroll", ImVec2(sliderW, areaH), &top, 0, T - fit, "")) firstRow = T - fit - top;
    }
    storage->SetInt(scrollId, firstRow);
    const ImVec2 origin(area.x, area.y - static_cast<float>(firstRow) * rowH);
    // Whole pixels (ImGui centres a line on them): a level line lies on one row of pixels.
    const float queryX = std::round(area.x + labelW + gap), keyX = std::round(area.x + width - labelW - gap);
    const auto rowY = [&](int i) { return std::floor(origin.y + (static_cast<float>(i) + 0.5f) * rowH); };
    const int first = firstRow, last = std::min(T - 1, firstRow + fit - 1);
    ImDrawList* list = ImGui::GetWindowDrawList();
    const ImGuiIO& io = ImGui::GetIO();

    // Hover: a token on either side isolates its lines (from a query, into a key) while the mouse
    // stays; without hover, the picked tokens do.
    int hoverQuery = -1, hoverKey = -1;
    const ImVec2 mouse = io.MousePos;
    const int mouseRow = areaHovered ? std::clamp(static_cast<int>((mouse.y - origin.y) / rowH), first, last) : -1;
    if (mouseRow >= 0 && mouse.x < queryX) hoverQuery = mouseRow;
    if (mouseRow >= 0 && mouse.x > keyX) hoverKey = mouseRow;
    const std::vector<int>& picked = s.view.viewTokens;
    // A token isolated shows all its lines, out of view too (cut at the edge); otherwise only the
    // lines between two rows in view: a scrolled view is not a fan of lines into nowhere.
    const auto inView = [&](int i) { return i >= first && i <= last; };
    // A sentence pair's filter (A → B: A's queries, B's keys): the other lines are not drawn.
    const PairBlock block = pairBlock(s, s.view.pairFilter);
    const auto inBlock = [&](const core::HeadLine& l) {
        return l.query >= block.firstRow && l.query < block.firstRow + block.rows && l.key >= block.firstCol &&
               l.key < block.firstCol + block.cols;
    };
    const auto lineShown = [&](const core::HeadLine& l) {
        if (!inBlock(l)) return false;
        if (hoverQuery >= 0) return l.query == hoverQuery;
        if (hoverKey >= 0) return l.key == hoverKey;
        if (!picked.empty()) return contains(picked, l.query);
        return inView(l.query) && inView(l.key);
    };

    // Lines crossing the visible band, capped at the strongest kMaxHeadViewLinesPerFrame.
    m_visible.clear();
    for (std::size_t n = 0; n < lines.lines.size(); ++n) {
        const core::HeadLine& l = lines.lines[n];
        if (std::min(l.query, l.key) <= last && std::max(l.query, l.key) >= first && lineShown(l)) m_visible.push_back(static_cast<int>(n));
    }
    const std::size_t crossing = m_visible.size();
    const auto weaker = [&](int a, int b) {
        return lines.lines[static_cast<std::size_t>(a)].weight < lines.lines[static_cast<std::size_t>(b)].weight;
    };
    if (crossing > static_cast<std::size_t>(kMaxHeadViewLinesPerFrame)) {
        std::nth_element(m_visible.begin(), m_visible.begin() + kMaxHeadViewLinesPerFrame, m_visible.end(),
                         [&](int a, int b) { return weaker(b, a); });
        m_visible.resize(static_cast<std::size_t>(kMaxHeadViewLinesPerFrame));
    }
    std::sort(m_visible.begin(), m_visible.end(), weaker);                   // the strongest drawn last, on top
    list->PushClipRect(area, ImVec2(area.x + width, area.y + areaH), true);  // rows beyond the area are cut, lines into them too
    const float thickness = std::max(1.0f, ctx.scale * (presenter ? 2.5f : 2.0f));
    for (const int n : m_visible) {
        const core::HeadLine& l = lines.lines[static_cast<std::size_t>(n)];
        const int alpha = std::clamp(static_cast<int>(std::lround(255.0f * l.weight)), 0, 255);
        if (alpha == 0) continue;
        list->AddLine(ImVec2(queryX, rowY(l.query)), ImVec2(keyX, rowY(l.key)), widgets::toImColor(core::headColour(l.head), alpha),
                      thickness);
    }

    // Token labels, the visible rows only; the keys' sums of the picked tokens as bars behind them.
    const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text), dim = ImGui::GetColorU32(ImGuiCol_TextDisabled);
    const ImU32 accent = ImGui::GetColorU32(ImGuiCol_PlotHistogram), sumColour = ImGui::GetColorU32(ImGuiCol_PlotHistogram, 0.35f);
    const float textH = ImGui::GetFontSize();
    const auto keys = static_cast<std::size_t>(maps.keys);
    // tokens a model generated: their labels in amber (when the map is the shown pass's)
    const Eigen::Index generated = static_cast<Eigen::Index>(maps.labels.size()) == s.model.tq() ? generatedFrom(s) : -1;
    const ImU32 amber = widgets::generatedColour();
    for (int i = first; i <= last && T > 0; ++i) {
        const std::string shown = widgets::fitLabel(maps.labels[static_cast<std::size_t>(i)], labelW - gap);
        const float tw = ImGui::CalcTextSize(shown.c_str()).x, y = rowY(i) - textH * 0.5f;
        const bool pickedRow = contains(picked, i), isolated = hoverQuery == i || pickedRow;
        const bool quiet = (hoverQuery >= 0 || !picked.empty()) && !isolated;
        if (pickedRow) list->AddRectFilled(ImVec2(queryX - gap - tw - 3, y - 1), ImVec2(queryX - gap + 3, y + textH + 1), sumColour, 3.0f);
        const ImU32 plain = generated >= 0 && i >= generated ? amber : text;
        list->AddText(ImVec2(queryX - gap - tw, y), quiet ? dim : (isolated ? accent : plain), shown.c_str());
        if (!sums.empty()) {  // Σ over the picked queries of the mean over the heads shown, as a share of their count
            float sum = 0;
            for (std::size_t n = 0; n < heads.size(); ++n) sum += sums[n * keys + static_cast<std::size_t>(i)];
            const float share = sum / static_cast<float>(heads.size() * picked.size());
            list->AddRectFilled(ImVec2(keyX + gap, y - 1), ImVec2(keyX + gap + share * (labelW - gap), y + textH + 1), sumColour, 2.0f);
        }
        list->AddText(ImVec2(keyX + gap, y), hoverKey == i ? accent : plain, shown.c_str());
    }
    list->PopClipRect();

    // Click a token: it alone (again: none); shift-click: add or remove it.
    if (mouseRow >= 0 && (hoverQuery >= 0 || hoverKey >= 0)) {
        const int i = mouseRow;
        std::string tip = (hoverQuery >= 0 ? "query " : "key ") + std::to_string(i + 1) + " \"" +
                          widgets::labelWithLength(maps.labels[static_cast<std::size_t>(i)], widgets::kTooltipGlyphs / 2) + "\"";
        if (hoverKey >= 0 && !sums.empty()) {
            char buf[64];
            for (std::size_t n = 0; n < heads.size(); ++n) {
                std::snprintf(buf, sizeof buf, "\nhead %d: Σ = %.3f", heads[n] + 1,
                              static_cast<double>(sums[n * keys + static_cast<std::size_t>(i)]));
                tip += buf;
                if (n == 15 && heads.size() > 16) {
                    tip += "\n…";
                    break;
                }
            }
            tip += "\n(over the " + std::to_string(picked.size()) + " picked queries)";
        } else if (hoverQuery >= 0) {
            tip += "\nclick: only its lines · shift-click: add it to the picked queries";
        }
        widgets::showTooltip(tip, 2 * widgets::kTooltipGlyphs);
        if (ImGui::IsMouseClicked(ImGuiMouseButton_Left)) ctx.actions.emit(action::PickViewToken{i, io.KeyShift});
    }
    // The footer: how many lines, the cap when it cut, where the scroll is.
    std::string foot =
        crossing > static_cast<std::size_t>(kMaxHeadViewLinesPerFrame)
            ? std::to_string(crossing) + " lines in view: the " + std::to_string(kMaxHeadViewLinesPerFrame) + " strongest drawn"
            : std::to_string(lines.lines.size()) + " of " + std::to_string(lines.readable) + " lines";
    if (scrolls) foot += " · rows " + std::to_string(first + 1) + "–" + std::to_string(last + 1) + " of " + std::to_string(T);
    widgets::flowTextDisabled(foot, true);
    ImGui::End();
}

}  // namespace attnviz::app
