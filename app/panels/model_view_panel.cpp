#include "app/panels/model_view_panel.hpp"

#include "app/gfx/texture_cache.hpp"
#include "app/state/attribution.hpp"
#include "app/state/generation.hpp"
#include "app/state/head_summary.hpp"
#include "app/state/model_view.hpp"
#include "app/state/source.hpp"
#include "app/views/attribution.hpp"
#include "app/views/view_table.hpp"
#include "app/widgets/charts.hpp"
#include "app/widgets/text.hpp"
#include "core/base/format.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace attnviz::app {
namespace {

constexpr const char* kOrders[] = {"head order", "sorted in each layer", "all heads ranked"};

// A stamp for the atlas: the pass, the order and the pooling (FNV-1a over them).
std::uint64_t atlasVersion(const HeadSummary& s, const std::vector<int>& order, core::BlockPooling pooling) {
    std::uint64_t h = 1469598103934665603ULL;
    const auto mix = [&](std::uint64_t v) { h = (h ^ v) * 1099511628211ULL; };
    mix(reinterpret_cast<std::uintptr_t>(s.key->run));
    mix(s.key->data);
    mix(static_cast<std::uint64_t>(pooling));
    for (const int k : order) mix(static_cast<std::uint64_t>(k));
    return h;
}

// The view's colouring, with one scale over every tile: a per-row scale would mix the rows of
// the heads side by side in a row of the atlas, so it is stretched over all of them instead.
gfx::Colouring atlasColouring(const AppState& s) {
    gfx::Colouring c = weightColouring(s);
    c.logFloor = core::logFloor(s.headSummary.keys);
    if (c.scale == core::ColourScale::Rows) c.scale = core::ColourScale::Stretch;
    return c;
}

std::string scaleWords(const gfx::HeatmapTexture& tex) {
    switch (tex.scale()) {
        case core::ColourScale::Stretch: return "colours: 0 … " + core::formatFixed(tex.maxValue(), 3) + " (stretched, all tiles)";
        case core::ColourScale::Log: return "colours: log10 of the weight (all tiles)";
        default: return "colours: 0 … 1 (all tiles)";
    }
}

std::string tileName(const HeadSummary& s, int index) {
    return std::to_string(s.firstLayer + index / s.heads + 1) + "." + std::to_string(index % s.heads + 1);
}

std::string tileTooltip(const AppState& st, int index, const std::optional<std::vector<double>>& test,
                        const std::optional<std::vector<double>>& retrieval, const std::optional<std::vector<double>>& moved,
                        const std::optional<std::vector<double>>& attribution) {
    const HeadSummary& s = st.headSummary;
    const core::HeadStats& h = s.stats[static_cast<std::size_t>(index)];
    const int layer = index / s.heads, head = index % s.heads;
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "layer %d · head %d%s\nentropy %.3f nats (share %.2f)\nmean distance %.2f\nself %.3f · previous %.3f · first %.3f\n"
                  "duplicate %.3f · induction %.3f",
                  s.firstLayer + layer + 1, head + 1, groupedQuery(st) ? (" · kv " + std::to_string(kvHeadOf(st, head) + 1)).c_str() : "",
                  h.entropy, h.entropyShare, h.distance, h.self, h.previous, h.first, h.duplicate, h.induction);
    std::string text = buf;
    // an encoder's next token; the special tokens a checkpoint's tokenizer knows
    text += "\n";
    if (capabilities(st).ownPass && !capabilities(st).readsBack) text += "next " + core::formatFixed(h.next, 3) + " · ";
    if (checkpointOf(st) != nullptr) text += "separator " + core::formatFixed(h.separator, 3) + " · ";
    text += "punctuation " + core::formatFixed(h.punctuation, 3);
    if (test) text += "\ninduction test " + core::formatFixed((*test)[static_cast<std::size_t>(index)], 3);
    if (retrieval) text += "\nretrieval test " + core::formatFixed((*retrieval)[static_cast<std::size_t>(index)], 3);
    if (moved) text += "\nmoved " + core::formatFixed((*moved)[static_cast<std::size_t>(index)], 3) + " (against the compared input)";
    if (attribution)
        text += "\nattribution " + core::formatFixed((*attribution)[static_cast<std::size_t>(index)], 3) + " (onto the target's logit)";
    return text + "\nclick to select";
}

// The pooling, order, statistic and tint; a column `columnW` wide when `side`, else a row.
void drawControls(PanelContext& ctx, ModelViewOptions options, bool side, float columnW) {
    const AppState& st = ctx.state;
    const float em = ImGui::GetFontSize();
    const float comboW = side ? columnW - ImGui::CalcTextSize("by").x - ImGui::GetStyle().ItemInnerSpacing.x : em * 8.5f;
    bool changed = false;
    int pooling = static_cast<int>(options.pooling);
    ImGui::SetNextItemWidth(comboW);
    changed |= ImGui::Combo("##pooling", &pooling, "block means\0block maxima\0");
    tooltip("Each tile is its head's map shrunk to a thumbnail: each texel the mean of its block of weights, or the largest.");
    int order = static_cast<int>(options.order);
    if (!side) widgets::sameLineIfFits(em * 10.0f);
    ImGui::SetNextItemWidth(side ? comboW : em * 10.0f);
    changed |= ImGui::Combo("##order", &order, kOrders, 3);
    const InductionSnapshot test = st.induction->snapshot();
    const bool testDone = inductionTestScores(test, checkpointOf(st)) != nullptr;
    const bool retrievalDone = retrievalTestScores(st.retrieval->snapshot(), checkpointOf(st)) != nullptr;
    const bool attributable = feedsView(st, panel_id::kAttribution);
    int score = static_cast<int>(options.score);
    if (!side) widgets::sameLineIfFits(em * 8.0f + ImGui::CalcTextSize("by").x);
    ImGui::SetNextItemWidth(side ? comboW : em * 8.0f);
    if (ImGui::BeginCombo("by", core::headScoreId(options.score))) {
        for (int k = 0; k < core::kHeadScoreCount; ++k) {
            const bool available = (k != static_cast<int>(core::HeadScore::InductionTest) || testDone) &&
                                   (k != static_cast<int>(core::HeadScore::RetrievalTest) || retrievalDone) &&
                                   (k != static_cast<int>(core::HeadScore::Moved) || st.compare.ready()) &&
                                   (k != static_cast<int>(core::HeadScore::Attribution) || attributable);
            if (ImGui::Selectable(core::headScoreId(static_cast<core::HeadScore>(k)), k == score,
                                  available ? 0 : ImGuiSelectableFlags_Disabled))
                score = k, changed = true;
        }
        ImGui::EndCombo();
    }
    tooltip(
        "The statistic tiles are sorted and tinted by (hover a tile for all of them). The induction test is run from the head "
        "statistics panel, and so is the retrieval test; \"moved\" compares with another sentence (the Compare tab); "
        "\"attribution\" is what each head writes onto the Attribution tab's target at its position (signed: the tint is blue "
        "where a head writes against it).");
    if (!side) widgets::sameLineIfFits(ImGui::GetFrameHeight() + ImGui::CalcTextSize("tint").x);
    changed |= ImGui::Checkbox("tint", &options.tint);
    tooltip(
        "A bar along each tile's top edge, as long as the head's score against the largest (a signed score such as attribution: "
        "its size against the largest size, orange for the target and blue against).");
    if (changed) {
        options.pooling = static_cast<core::BlockPooling>(pooling);
        options.order = static_cast<core::TileOrder>(order);
        options.score = static_cast<core::HeadScore>(score);
        ctx.actions.emit(action::SetModelView{options});
    }
}

}  // namespace

void ModelViewPanel::draw(PanelContext& ctx) {
    const AppState& st = ctx.state;
    if (!beginPanel(ctx, title())) return;
    if (!headSummaryCurrent(st)) {
        if (headSweepNote(ctx, id())) {
            ImGui::End();
            return;
        }
        ctx.requests.stale.insert(std::string(id()));  // made after this frame, once the pass is ready
        if (const core::ImportedAttention* file = mapsFile(st); file && (!file->checkedAll() || file->changed())) {
            importCheckNote(st);
        } else if (!capabilities(st).ownPass && !weightsFresh(st, -1)) {
            const auto fresh = std::count_if(st.stale.begin(), st.stale.end(), [](Stage x) { return x <= Stage::Outputs; });
            ImGui::TextDisabled("computing every head: %d of %d", static_cast<int>(fresh), static_cast<int>(st.stale.size()));
        } else {
            ImGui::TextDisabled("summarizing every head…");
        }
        ImGui::End();
        return;
    }
    if (const core::ImportedAttention* file = mapsFile(st); file && file->changed())
        importCheckNote(st);  // the last good summary stays, said to be so
    const HeadSummary& s = st.headSummary;

    // Controls: pooling, order, statistic, tint; in a column right of the grid when the panel is
    // wide and low (a bottom row), else in a row above it.
    const float em = ImGui::GetFontSize();
    const ImVec2 start = ImGui::GetCursorScreenPos(), room = ImGui::GetContentRegionAvail();
    const float columnW = em * 16.0f;
    const bool controls = !st.view.presenter;  // presenter mode: the view as set, in the large font
    const bool side = controls && room.x >= room.y * 1.5f + columnW;
    if (side) {
        ImGui::SetCursorScreenPos(ImVec2(start.x + room.x - columnW, start.y));
        ImGui::BeginGroup();
    }
    if (controls) drawControls(ctx, st.view.modelView, side, columnW);

    // Sorted or tinted by attribution: made after this frame when it is not current.
    const bool byAttribution = st.view.modelView.score == core::HeadScore::Attribution && scoresTiles(st.view.modelView);
    if (byAttribution && shownAttribution(st) == nullptr) ctx.requests.stale.insert(std::string(panel_id::kAttribution));
    const TileLayout layout = modelViewLayout(st, st.view.modelView);
    const gfx::Colouring colouring = atlasColouring(st);
    const std::uint64_t version = atlasVersion(s, layout.order, st.view.modelView.pooling);
    // A sentence pair's filter: each tile its block's texels alone.
    const TileCrop crop = tileCrop(st);
    const gfx::TextureStamp stamp{.data = version,
                                  .head = 0,
                                  .pooling = s.factor,
                                  .rows = crop.r0 * (s.side + 1) + crop.r1,
                                  .cols = crop.c0 * (s.sideKeys + 1) + crop.c1};
    const gfx::HeatmapTexture& tex = ctx.textures.get("model-atlas", stamp, colouring, [&] {
        gfx::MatrixSource m;
        m.texels = thumbnailAtlas(s, layout.order, st.view.modelView.pooling, crop);
        m.rows = static_cast<int>(s.layers * crop.rows());
        m.cols = static_cast<int>(s.heads * crop.cols());
        return m;
    });
    std::string caption = std::to_string(s.layers) + (s.layers == 1 ? " layer × " : " layers × ") + std::to_string(s.heads) + " heads · " +
                          scaleWords(tex) + " · masked cells grey";
    if (crop.rows() != s.side || crop.cols() != s.sideKeys) caption += std::string(" · ") + pairFilterName(st.view.pairFilter) + " only";
    // Tokens a model generated: where they start, an amber line across the tiles (the pair filter's
    // crop aside, whose block the line may not cross).
    const Eigen::Index generated = generatedFrom(st);
    const bool markGenerated = generated > 0 && generated < s.keys && crop.rows() == s.side && crop.cols() == s.sideKeys;
    if (markGenerated) caption += " · amber: generated from token " + std::to_string(generated + 1);
    if (s.factor > 1)
        caption += " · block " + std::string(st.view.modelView.pooling == core::BlockPooling::Mean ? "means" : "maxima") + " of " +
                   std::to_string(s.factor) + " × " + std::to_string(s.factor);
    // Under the rule: what "moved" measures, or what attribution's terms are of (or why there are none).
    std::string note;
    if (layout.scores && st.view.modelView.score == core::HeadScore::Moved) note = core::movedRule();
    if (byAttribution) {
        const AttributionView* view = shownAttribution(st);
        if (view != nullptr && !view->why.empty()) note = "attribution: " + view->why;
        else if (view != nullptr && layout.scores) note = "each head's term of the " + attributionSubject(view->value);
    }
    if (side) {
        widgets::wrappedTextColored(ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled), caption, widgets::kLongTextGlyphs, columnW);
        if (!layout.rule.empty()) widgets::wrappedText(layout.rule, widgets::kLongTextGlyphs, columnW);
        if (!note.empty())
            widgets::wrappedTextColored(ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled), note, widgets::kLongTextGlyphs, columnW);
        ImGui::EndGroup();
        ImGui::SetCursorScreenPos(start);
    } else {
        widgets::wrappedTextColored(ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled), caption);
        if (!layout.rule.empty()) widgets::wrappedText(layout.rule);
        if (!note.empty()) widgets::wrappedTextColored(ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled), note);
    }

    // The grid: axis labels left and above, tiles at one size, the colour bar on the right. Few
    // heads over many layers wrap into groups of layers side by side, each labelled (tileGrid).
    ImDrawList* list = ImGui::GetWindowDrawList();
    const ImVec2 origin = ImGui::GetCursorScreenPos();
    const ImVec2 avail(ImGui::GetContentRegionAvail().x - (side ? columnW + em : 0.0f), ImGui::GetContentRegionAvail().y);
    const float lineH = ImGui::GetTextLineHeight();
    const bool ranked = st.view.modelView.order == core::TileOrder::Ranked && layout.scores;
    const std::string widestRow = ranked ? "#" + std::to_string(s.layers * s.heads) : "L" + std::to_string(s.firstLayer + s.layers);
    const float labelW = ImGui::CalcTextSize(widestRow.c_str()).x + em * 0.5f;
    const float barW = em * 3.5f, groupGap = em * 0.8f;
    const float aspect = static_cast<float>(crop.rows()) / static_cast<float>(std::max<Eigen::Index>(1, crop.cols()));
    const float roomW = avail.x - barW, roomH = avail.y - lineH - em * 0.5f;
    const TileGrid grid = tileGrid(s.layers, s.heads, aspect, roomW, roomH, labelW, groupGap);
    const float tile = grid.tile, tileH = grid.tileH;
    const float blockW = tile * static_cast<float>(s.heads), stride = labelW + blockW + groupGap;
    const auto groups = static_cast<float>(grid.groups);
    if (groups * (labelW + blockW) + (groups - 1.0f) * groupGap > roomW + 0.5f ||
        static_cast<float>(grid.perGroup) * tileH > roomH + 0.5f) {
        if (avail.y >= lineH) ImGui::TextDisabled("%s", widgets::fitLabel("enlarge the panel to see the tiles", avail.x).c_str());
        if (m_previewing && st.view.previewHead != -2) ctx.actions.emit(action::SetPreviewHead{-2});
        m_previewing = false;
        ImGui::End();
        return;
    }
    const float top = origin.y + lineH + em * 0.25f;
    const auto groupRows = [&](int g) { return std::min(grid.perGroup, s.layers - g * grid.perGroup); };
    const auto groupX = [&](int g) { return origin.x + stride * static_cast<float>(g) + labelW; };  // where its tiles start
    // slot k: row k / heads (a layer, or ranks), column k % heads
    const auto slotAt = [&](std::size_t k) {
        const int row = static_cast<int>(k / static_cast<std::size_t>(s.heads)),
                  col = static_cast<int>(k % static_cast<std::size_t>(s.heads));
        return ImVec2(groupX(row / grid.perGroup) + tile * static_cast<float>(col), top + tileH * static_cast<float>(row % grid.perGroup));
    };
    for (int g = 0; g < grid.groups; ++g) {
        const int first = g * grid.perGroup, rows = groupRows(g);
        const auto layers = static_cast<float>(s.layers);
        ctx.heatmaps.draw(list, tex, ImVec2(groupX(g), top), ImVec2(groupX(g) + blockW, top + tileH * static_cast<float>(rows)),
                          ImVec2(0, static_cast<float>(first) / layers), ImVec2(1, static_cast<float>(first + rows) / layers),
                          false);  // masked texels flat grey: stripes in every tile would hide the maps
    }

    // A line through every tile at token `at` on both axes (one through each row and each column of
    // tiles): a sentence pair's boundary, where generated tokens start.
    const auto acrossTiles = [&](Eigen::Index at, ImU32 colour) {
        const auto f = static_cast<float>(std::max(1, s.factor));
        const float fx = static_cast<float>(at) / f / static_cast<float>(s.sideKeys) * tile;
        const float fy = static_cast<float>(at) / f / static_cast<float>(s.side) * tileH;
        for (int g = 0; g < grid.groups; ++g) {
            const float bottom = top + tileH * static_cast<float>(groupRows(g));
            for (int c = 0; c < s.heads; ++c) {
                const float x = groupX(g) + tile * static_cast<float>(c) + fx;
                list->AddLine(ImVec2(x, top), ImVec2(x, bottom), colour);
            }
            for (int r = 0; r < groupRows(g); ++r) {
                const float y = top + tileH * static_cast<float>(r) + fy;
                list->AddLine(ImVec2(groupX(g), y), ImVec2(groupX(g) + blockW, y), colour);
            }
        }
    };
    // A sentence pair seen whole: the boundary between A and B, where the tiles are large enough.
    if (const PairSegments pair = pairSegments(st); pair.pair && crop.rows() == s.side && crop.cols() == s.sideKeys && tile >= 12.0f) {
        acrossTiles(pair.aEnd, IM_COL32(255, 255, 255, 150));
        if (pair.bStart != pair.aEnd) acrossTiles(pair.bStart, IM_COL32(255, 255, 255, 150));
    }
    // Tokens a model generated: where they start, in amber.
    if (markGenerated) acrossTiles(generated, widgets::generatedColour(200));

    // Gaps between tiles: lines of the window's colour over the tiles' edges (one quad each).
    const ImU32 bg = ImGui::GetColorU32(ImGuiCol_WindowBg);
    const float gap = tile >= 24.0f ? std::round(2.0f * ctx.scale) : 1.0f;
    if (tile >= 6.0f) {
        for (int g = 0; g < grid.groups; ++g) {
            const float bottom = top + tileH * static_cast<float>(groupRows(g));
            for (int c = 1; c < s.heads; ++c) {
                const float x = groupX(g) + tile * static_cast<float>(c);
                list->AddRectFilled(ImVec2(x - gap * 0.5f, top), ImVec2(x + gap * 0.5f, bottom), bg);
            }
            for (int r = 1; r < groupRows(g); ++r) {
                const float y = top + tileH * static_cast<float>(r);
                list->AddRectFilled(ImVec2(groupX(g), y - gap * 0.5f), ImVec2(groupX(g) + blockW, y + gap * 0.5f), bg);
            }
        }
    }

    // Axis labels, thinned to what fits: layers (or ranks) left of each group, heads (or ranks in a layer) above.
    const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text), dim = ImGui::GetColorU32(ImGuiCol_TextDisabled);
    // Thinned: the first, then every step-th counting from 1 (as the heatmap's positions), in each group.
    const auto labelled = [](int i, int step) { return step == 1 || (i == 0 && step > 2) || (i + 1) % step == 0; };
    const int rowStep = widgets::niceStep(lineH / tileH);
    for (int row = 0; row < s.layers; ++row) {
        const int r = row % grid.perGroup;
        if (!labelled(r, rowStep)) continue;
        const std::string label = ranked ? "#" + std::to_string(row * s.heads + 1) : "L" + std::to_string(s.firstLayer + row + 1);
        const ImVec2 size = ImGui::CalcTextSize(label.c_str());
        list->AddText(
            ImVec2(groupX(row / grid.perGroup) - size.x - em * 0.3f, top + tileH * (static_cast<float>(r) + 0.5f) - size.y * 0.5f), text,
            label.c_str());
    }
    if (!ranked) {
        const float widestHead = ImGui::CalcTextSize(std::to_string(s.heads).c_str()).x + em * 0.4f;
        const int colStep = widgets::niceStep(widestHead / tile);
        const bool sorted = st.view.modelView.order == core::TileOrder::WithinLayer && layout.scores;
        for (int g = 0; g < grid.groups; ++g) {
            for (int c = 0; c < s.heads; ++c) {
                if (!labelled(c, colStep)) continue;
                const std::string label = (sorted ? "#" : "") + std::to_string(c + 1);
                const ImVec2 size = ImGui::CalcTextSize(label.c_str());
                list->AddText(ImVec2(groupX(g) + tile * (static_cast<float>(c) + 0.5f) - size.x * 0.5f, origin.y), text, label.c_str());
            }
        }
    }
    const char* corner = ranked                                                                     ? "rank"
                         : st.view.modelView.order == core::TileOrder::WithinLayer && layout.scores ? "layer \\ rank"
                                                                                                    : "layer \\ head";
    // the corner's words where they end before the first column's number (or anywhere above the
    // first tile when the columns are unnumbered, as ranked)
    const float cornerRoom = ranked ? labelW + tile : labelW + tile * 0.5f - ImGui::CalcTextSize("#1").x * 0.5f - em * 0.3f;
    if (ImGui::CalcTextSize(corner).x <= cornerRoom) list->AddText(ImVec2(origin.x, origin.y), dim, corner);

    // Per tile: the tint bar, the name where it fits (sorted orders), the selection's frame.
    // The tint: 0 … the largest score, or for a signed score its size against the largest size,
    // orange for and blue against (tintStrength, as the figure's).
    std::vector<double> tint;
    if (layout.scores && st.view.modelView.tint) tint = core::tintStrengths(*layout.scores);
    const int selectedLayer = layerCount(st) > 0 ? st.scenario.layer - s.firstLayer : 0;
    const int selected = st.view.selectedHead >= 0 ? selectedLayer * s.heads + st.view.selectedHead : -1;
    const bool names = st.view.modelView.order != core::TileOrder::Natural && layout.scores &&
                       tile >= ImGui::CalcTextSize(tileName(s, s.layers * s.heads - 1).c_str()).x + em * 0.4f && tileH >= lineH * 1.6f;
    const ImU32 accent = IM_COL32(239, 68, 68, 255);
    for (std::size_t k = 0; k < layout.order.size(); ++k) {
        const int index = layout.order[k];
        const ImVec2 p = slotAt(k);
        if (!tint.empty()) {
            const double v = tint[static_cast<std::size_t>(index)];
            const float barH = std::max(2.0f, std::round(tileH * 0.12f)), width = (tile - gap) * static_cast<float>(std::abs(v));
            if (width >= 0.5f)
                list->AddRectFilled(ImVec2(p.x + gap * 0.5f, p.y + gap * 0.5f), ImVec2(p.x + gap * 0.5f + width, p.y + gap * 0.5f + barH),
                                    v < 0 ? IM_COL32(59, 130, 246, 255) : IM_COL32(255, 140, 0, 255));
        }
        if (names) {
            const std::string name =
                st.view.modelView.order == core::TileOrder::Ranked ? tileName(s, index) : "h" + std::to_string(index % s.heads + 1);
            list->AddRectFilled(ImVec2(p.x + gap, p.y + tileH - lineH - 2.0f),
                                ImVec2(p.x + gap + ImGui::CalcTextSize(name.c_str()).x + 4.0f, p.y + tileH - gap), IM_COL32(0, 0, 0, 150));
            list->AddText(ImVec2(p.x + gap + 2.0f, p.y + tileH - lineH - 1.0f), IM_COL32(255, 255, 255, 255), name.c_str());
        }
        if (index == selected)
            list->AddRect(ImVec2(p.x - 1.0f, p.y - 1.0f), ImVec2(p.x + tile + 1.0f, p.y + tileH + 1.0f), accent, 0.0f, 0,
                          std::max(2.0f, std::round(2.0f * ctx.scale)));
    }

    // The colour bar, right of the last group.
    const float gridH = tileH * static_cast<float>(grid.perGroup), right = groupX(grid.groups - 1) + blockW;
    const ImVec2 barMin(right + em * 0.6f, top), barMax(right + em * 1.3f, top + std::min(gridH, em * 14.0f));
    if (barMax.y - barMin.y >= em * 3.0f) {
        switch (tex.scale()) {
            case core::ColourScale::Stretch:
                widgets::colorBar(list, barMin, barMax, st.view.colormap, 0.0f, std::max(tex.maxValue(), 1e-30f), 3);
                break;
            case core::ColourScale::Log:
                widgets::colorBar(list, barMin, barMax, st.view.colormap, std::log10(colouring.logFloor), 0.0f,
                                  static_cast<int>(-std::log10(colouring.logFloor)) + 1, true);
                break;
            default: widgets::colorBar(list, barMin, barMax, st.view.colormap, 0.0f, 1.0f, 3);
        }
    }

    // Hover previews the head in the heatmap; a click selects its layer and head.
    ImGui::SetCursorScreenPos(ImVec2(groupX(0), top));
    ImGui::InvisibleButton("##model grid", ImVec2(std::max(1.0f, right - groupX(0)), std::max(1.0f, gridH)));
    int hovered = -1;
    if (ImGui::IsItemHovered()) {
        const ImVec2 m = ImGui::GetIO().MousePos;
        const int g = std::clamp(static_cast<int>(std::floor((m.x - origin.x) / stride)), 0, grid.groups - 1);
        const float x = m.x - groupX(g);
        const int r = static_cast<int>(std::floor((m.y - top) / tileH));
        if (x >= 0.0f && x < blockW && r >= 0 && r < groupRows(g)) {  // not a group's labels or the gap between groups
            const int c = std::clamp(static_cast<int>(x / tile), 0, s.heads - 1);
            hovered = layout.order[static_cast<std::size_t>((g * grid.perGroup + r) * s.heads + c)];
            widgets::showTooltip(tileTooltip(st, hovered, summaryScores(st, core::HeadScore::InductionTest),
                                             summaryScores(st, core::HeadScore::RetrievalTest), summaryScores(st, core::HeadScore::Moved),
                                             summaryScores(st, core::HeadScore::Attribution)));
            if (ImGui::IsItemClicked()) ctx.actions.emit(action::SelectLayerHead{s.firstLayer + hovered / s.heads, hovered % s.heads});
        }
    }
    if (hovered >= 0) {
        const int layer = s.firstLayer + hovered / s.heads, head = hovered % s.heads;
        const bool otherLayer = capabilities(st).ownPass && layer != st.scenario.layer;
        const int wantLayer = otherLayer ? layer : -1;
        if (st.view.previewHead != head || st.view.previewLayer != wantLayer)
            ctx.actions.emit(action::SetPreviewHead{head, otherLayer ? layer : -1});
        m_previewing = true;
    } else if (m_previewing) {
        if (st.view.previewHead != -2) ctx.actions.emit(action::SetPreviewHead{-2});
        m_previewing = false;
    }
    ImGui::End();
}

}  // namespace attnviz::app
