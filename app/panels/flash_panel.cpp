#include "app/panels/flash_panel.hpp"

#include "app/widgets/text.hpp"
#include "core/attention/colormap.hpp"
#include "core/scenario/model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace attnviz::app {
namespace {

// "2.4e-08 (float rounding)", or the number alone when it is more than rounding.
std::string gapText(float gap) {
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, gap <= 1e-5f ? "%.2g (float rounding)" : "%.3g", static_cast<double>(gap));
    return buffer;
}

// Wrapped text cut to the room left in the panel (whole on hover); nothing without a line's room.
void say(const std::string& text, const ImVec4& colour) {
    const ImVec2 room = ImGui::GetContentRegionAvail();
    if (room.y < ImGui::GetTextLineHeight()) return;
    const std::string shown = widgets::tooltipBody(text);
    const std::string fitted = widgets::fitWrapped(shown, room.x, room.y);
    widgets::shownWrapped(fitted, &colour);
    if (fitted != shown) widgets::hoverTooltip(text);
}

// A number of the tile's table: m may be −inf (a row that has read no key yet).
std::string cell(float v) {
    if (std::isinf(v)) return v < 0 ? "−∞" : "∞";
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.4g", static_cast<double>(v));
    return buffer;
}

// The map as the walk has filled it up to `step` (inclusive): the weights of the tiles walked,
// dark for those to come, hatched for skipped ones, the current tile outlined.
void drawMap(const AppState& s, const FlashMaps& f, int step, ImVec2 at, float side) {
    ImDrawList* list = ImGui::GetWindowDrawList();
    const core::Mat& a = f.walk.weights;
    const float cw = side / static_cast<float>(a.cols()), ch = side / static_cast<float>(a.rows());
    const ImU32 pending = IM_COL32(60, 60, 70, 255), hatch = IM_COL32(150, 150, 160, 110);
    list->AddRectFilled(at, ImVec2(at.x + side, at.y + side), pending);
    const auto& steps = f.walk.steps;
    for (int n = 0; n <= step && n < static_cast<int>(steps.size()); ++n) {
        const core::FlashStep& t = steps[static_cast<std::size_t>(n)];
        const ImVec2 t0(at.x + static_cast<float>(t.k0) * cw, at.y + static_cast<float>(t.q0) * ch);
        const ImVec2 t1(t0.x + static_cast<float>(t.cols) * cw, t0.y + static_cast<float>(t.rows) * ch);
        if (t.skipped) {
            list->AddRectFilled(t0, t1, IM_COL32(40, 40, 48, 255));
            list->AddLine(t0, t1, hatch);
            continue;
        }
        for (Eigen::Index i = 0; i < t.rows; ++i)
            for (Eigen::Index j = 0; j < t.cols; ++j) {
                const Eigen::Index qi = t.q0 + i, kj = t.k0 + j;
                const ImVec2 c0(at.x + static_cast<float>(kj) * cw, at.y + static_cast<float>(qi) * ch);
                if (core::isBlocked(s.settings, qi, kj)) {
                    list->AddLine(c0, ImVec2(c0.x + cw, c0.y + ch), hatch);
                    continue;
                }
                const core::Rgb rgb = core::colormapColor(s.view.colormap, a(qi, kj));
                list->AddRectFilled(c0, ImVec2(c0.x + cw, c0.y + ch), IM_COL32(rgb.r, rgb.g, rgb.b, 255));
            }
    }
    // Tile edges, and the current tile in the selection colour.
    const ImU32 grid = IM_COL32(20, 20, 24, 255);
    const int br = std::min<int>(f.tiles.queries, static_cast<int>(a.rows())), bc = std::min<int>(f.tiles.keys, static_cast<int>(a.cols()));
    for (Eigen::Index r = br; r < a.rows(); r += br)
        list->AddLine(ImVec2(at.x, at.y + static_cast<float>(r) * ch), ImVec2(at.x + side, at.y + static_cast<float>(r) * ch), grid);
    for (Eigen::Index c = bc; c < a.cols(); c += bc)
        list->AddLine(ImVec2(at.x + static_cast<float>(c) * cw, at.y), ImVec2(at.x + static_cast<float>(c) * cw, at.y + side), grid);
    if (step >= 0 && step < static_cast<int>(steps.size())) {
        const core::FlashStep& t = steps[static_cast<std::size_t>(step)];
        const ImVec2 t0(at.x + static_cast<float>(t.k0) * cw, at.y + static_cast<float>(t.q0) * ch);
        list->AddRect(t0, ImVec2(t0.x + static_cast<float>(t.cols) * cw, t0.y + static_cast<float>(t.rows) * ch),
                      IM_COL32(239, 68, 68, 255), 0.0f, 0, 2.0f);
    }
}

// The tile's rows: the query, its running m and l, and the rescale of what came before.
void drawTile(const AppState& s, const core::FlashStep& t) {
    if (!ImGui::BeginTable("##tile", 4, ImGuiTableFlags_SizingStretchProp | ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY,
                           ImVec2(ImGui::GetContentRegionAvail().x,
                                  std::max(ImGui::GetTextLineHeightWithSpacing() * 3.0f, ImGui::GetContentRegionAvail().y))))
        return;
    ImGui::TableSetupScrollFreeze(0, 1);
    ImGui::TableSetupColumn("query");
    ImGui::TableSetupColumn("m");
    ImGui::TableSetupColumn("l");
    ImGui::TableSetupColumn("rescale");
    ImGui::TableHeadersRow();
    for (Eigen::Index i = 0; i < t.rows; ++i) {
        const Eigen::Index q = t.q0 + i;
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        const std::string label = std::to_string(q + 1) + " " + s.queryLabels[static_cast<std::size_t>(q)];
        ImGui::TextUnformatted(widgets::clipLabel(label, 8).c_str());
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(cell(t.rowMax(i)).c_str());
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(cell(t.rowSum(i)).c_str());
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(t.skipped ? "—" : cell(t.rescale(i)).c_str());
    }
    ImGui::EndTable();
}

}  // namespace

void FlashPanel::draw(PanelContext& ctx) {
    const AppState& s = ctx.state;
    const int head = std::clamp(s.view.selectedHead, 0, std::max(0, s.model.heads - 1));
    if (!beginPanelFor(ctx, title(), head, true)) return;
    if (noModelNote(ctx, "the flash-attention walk needs the scores Q Kᵀ and the values")) return;
    if (const std::string why = flashWhy(s); !why.empty()) {
        widgets::wrappedText(why);
        ImGui::End();
        return;
    }
    const FlashMaps* f = flashMaps(s);
    if (!f) {  // made by the state's next recompute (a frame after a change)
        ImGui::TextDisabled("computing…");
        ImGui::End();
        return;
    }
    const int last = static_cast<int>(f->walk.steps.size()) - 1;
    const int step = s.view.flashStep < 0 ? last : std::min(s.view.flashStep, last);
    const core::FlashStep& t = f->walk.steps[static_cast<std::size_t>(step)];
    const float em = ImGui::GetFontSize();
    // Controls: the step, and the tiles' sizes.
    if (ImGui::SmallButton("|<")) ctx.actions.emit(action::SetFlashStep{0});
    ImGui::SameLine();
    if (ImGui::SmallButton("<")) ctx.actions.emit(action::SetFlashStep{std::max(0, step - 1)});
    ImGui::SameLine();
    if (ImGui::SmallButton(">")) ctx.actions.emit(action::SetFlashStep{step + 1 >= last ? -1 : step + 1});
    ImGui::SameLine();
    if (ImGui::SmallButton(">|")) ctx.actions.emit(action::SetFlashStep{-1});
    if (ImGui::GetContentRegionAvail().x - ImGui::GetItemRectMax().x + ImGui::GetCursorScreenPos().x >= em * 6.0f) ImGui::SameLine();
    // The tile sizes beside the slider where there is room for both, else on a line of their own.
    const float tilesW = em * 5.0f + ImGui::CalcTextSize("B_r × B_c").x + ImGui::GetStyle().ItemSpacing.x * 2.0f;
    const bool oneLine = ImGui::GetContentRegionAvail().x >= tilesW + em * 8.0f;
    int shown = step + 1;
    ImGui::SetNextItemWidth(std::max(em * 4.0f, ImGui::GetContentRegionAvail().x - (oneLine ? tilesW : 0.0f)));
    if (ImGui::SliderInt("##step", &shown, 1, last + 1, "step %d"))
        ctx.actions.emit(action::SetFlashStep{shown - 1 >= last ? -1 : shown - 1});
    widgets::hoverTooltip("Each step reads one tile: B_r queries against B_c keys. The map fills in as the tiles are walked.");
    if (oneLine) ImGui::SameLine();
    int tiles[2] = {f->tiles.queries, f->tiles.keys};
    ImGui::SetNextItemWidth(em * 5.0f);
    if (ImGui::InputInt2("B_r × B_c", tiles, ImGuiInputTextFlags_EnterReturnsTrue))
        ctx.actions.emit(action::SetFlashTiles{
            {std::clamp(tiles[0], 1, static_cast<int>(kMaxFlashTokens)), std::clamp(tiles[1], 1, static_cast<int>(kMaxFlashTokens))}});
    widgets::hoverTooltip("The tile: B_r queries by B_c keys (on a GPU, what fits in on-chip memory).");
    char heading[160];
    std::snprintf(heading, sizeof heading, "head %d · step %d of %d: queries %lld–%lld × keys %lld–%lld%s", head + 1, step + 1, last + 1,
                  static_cast<long long>(t.q0 + 1), static_cast<long long>(t.q0 + t.rows), static_cast<long long>(t.k0 + 1),
                  static_cast<long long>(t.k0 + t.cols), t.skipped ? " · every cell masked: skipped" : "");
    say(heading, ImGui::GetStyleColorVec4(ImGuiCol_Text));
    // The end: the output against the materialised path, and the memory it never held.
    const long long floats = static_cast<long long>(f->walk.materialisedFloats);
    char memory[200];
    std::snprintf(memory, sizeof memory,
                  "held at once: %llu floats (a tile and its rows' m, l); never allocated: S and A, 2 × %lld = %lld floats (%s)",
                  static_cast<unsigned long long>(f->walk.peakFloats), floats, 2 * floats,
                  core::formatBytes(static_cast<std::uint64_t>(8 * floats)).c_str());
    if (step == last)
        say("O = Õ / l matches the materialised softmax's A·V: max |ΔO| = " + gapText(f->gap.output), ImVec4(0.30f, 0.80f, 0.45f, 1.0f));
    else
        say("m: running row maximum · l: running sum of exp(s − m) · rescale: exp(m_old − m), applied to l and Õ",
            ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    say(memory, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    // The map on the left, the tile's rows on the right.
    // The table needs some 15 ems; the map takes the rest, square. Without the room for both,
    // the map alone.
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const float tableW = em * 15.0f, gap = ImGui::GetStyle().ItemSpacing.x;
    const bool table = avail.x - tableW - gap >= em * 4.0f;
    const float side = std::max(0.0f, std::min(avail.y - 4.0f, table ? avail.x - tableW - gap : avail.x));
    if (side < em * 3.0f) {
        ImGui::End();
        return;
    }
    const ImVec2 at = ImGui::GetCursorScreenPos();
    drawMap(s, *f, step, at, side);
    ImGui::Dummy(ImVec2(side, side));
    if (table) {
        ImGui::SameLine();
        ImGui::BeginGroup();
        ImGui::PushItemWidth(tableW);
        drawTile(s, t);
        ImGui::PopItemWidth();
        ImGui::EndGroup();
    }
    ImGui::End();
}

}  // namespace attnviz::app
