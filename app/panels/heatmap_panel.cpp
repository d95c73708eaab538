#include "app/panels/heatmap_panel.hpp"

#include "app/gfx/texture_cache.hpp"
#include "app/state/generation.hpp"
#include "app/state/rollout_view.hpp"
#include "app/state/source.hpp"
#include "app/widgets/charts.hpp"
#include "app/widgets/text.hpp"
#include "core/base/format.hpp"
#include "core/models/run_maps.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace attnviz::app {

namespace {

// A map read from the pass, coloured with Auto's quantile read from its reference texels: the same
// top of the bar whatever the pooling the window's size asks for.
gfx::Colouring shownMapColouring(const AppState& s, const ShownMap& shown) {
    gfx::Colouring colouring = weightColouring(s);
    colouring.clipQuantile = shown.map.referenceQuantile;
    return colouring;
}

// The tokens are quoted at half a tooltip each: the numbers after them always show.
std::string cellTooltip(const AppState& s, const core::Settings& mask, int head, int i, int j, float weight, bool rollout) {
    constexpr std::size_t kQuote = widgets::kTooltipGlyphs / 2;
    std::string text = "query " + std::to_string(i + 1) + " \"" +
                       widgets::labelWithLength(s.queryLabels[static_cast<std::size_t>(i)], kQuote) + "\"  →  key " +
                       std::to_string(j + 1) + " \"" + widgets::labelWithLength(s.keyLabels[static_cast<std::size_t>(j)], kQuote) + "\"\n";
    char buf[160];
    if (core::isBlocked(mask, i, j)) {
        std::snprintf(buf, sizeof buf, "masked%s: weight 0", mask.causal && j > i ? " (causal: a future key)" : "");
        return text + buf;
    }
    if (rollout)
        std::snprintf(buf, sizeof buf, "rollout R = %.4f: the share of token %d that flows into position %d", weight, j + 1, i + 1);
    else std::snprintf(buf, sizeof buf, "weight α = %.4f", weight);
    text += buf;
    if (head >= 0 && !rollout && !capabilities(s).givenMaps && capabilities(s).wholeLayer) {  // imported maps have no scores
        const float score = s.forward.heads[static_cast<std::size_t>(head)].scores(i, j);
        const float c = core::logitScale(s.model.dk, s.settings);
        std::snprintf(buf, sizeof buf, "\nscore q·k = %.4f\nscaled = %.4f  (÷ %s%.3g)", score, score * c,
                      s.settings.scaled ? "√d_k·τ = " : "τ = ", 1.0 / c);
        text += buf;
    }
    return text;
}

// While the model view's mouse is over a head of another layer: that head's map from the model's
// own pass (causal, τ = 1), with its tokens and the colour bar; a click there selects it.
void drawLayerPreview(PanelContext& ctx, const char* title, std::string_view id, int layer, int head) {
    const AppState& s = ctx.state;
    if (!beginPanel(ctx, title)) return;
    // Maps made on demand: the previewed map pooled on the worker, never made whole here.
    const bool fromWorker = shownMapFromWorker(s);
    const ShownMap* shown = fromWorker ? shownMapOf(s, head) : nullptr;
    if (fromWorker && !(shown && shown->current(shownMapKey(s, head)))) ctx.requests.stale.insert(std::string(id));
    const core::LoadedModel& pass = *checkpointPass(s);
    const core::decoder::Run& run = *pass.run;
    const int t = static_cast<int>(run.tokens());
    if (ctx.fonts.large) ImGui::PushFont(ctx.fonts.large);
    ImGui::Text("Layer %d · head %d", layer + 1, head + 1);
    if (ctx.fonts.large) ImGui::PopFont();
    widgets::flowTextDisabled("preview: the model's pass (" + ownSoftmaxNote(ctx.state) + "); click the tile to select it");
    widgets::flowTextDisabled("rows: queries · columns: keys");
    const ImVec2 origin = ImGui::GetCursorScreenPos(), avail = ImGui::GetContentRegionAvail();
    const float lineH = ImGui::GetTextLineHeight(), em = ImGui::GetFontSize();
    const float labelW = std::min(160.0f * ctx.scale, avail.x * 0.2f), barW = 70.0f * ctx.scale;
    const float side = std::max(40.0f, std::min(avail.x - labelW - barW, avail.y - lineH - 8.0f * ctx.scale));
    const ImVec2 mMin(origin.x + labelW, origin.y + lineH + 8.0f * ctx.scale), mMax(mMin.x + side, mMin.y + side);
    const float cell = side / static_cast<float>(std::max(1, t));
    const int factor = headPooling(cell);
    core::Settings settings;
    settings.causal = true;
    settings.window = pass.checkpoint->config().window(layer);
    if (fromWorker && shown == nullptr) {
        const ShownMapJob* job = pendingShownMap(s);
        widgets::flowTextDisabled(
            "reading the map from the pass: " + std::to_string(static_cast<int>((job ? job->fraction() : 0.0) * 100.0)) + " %");
        ImGui::End();
        return;
    }
    const gfx::TextureStamp stamp{reinterpret_cast<std::uintptr_t>(&run), layer * run.headCount() + head, factor, t, t};
    const gfx::HeatmapTexture& tex =
        shown ? ctx.textures.get("heat-layer-preview", gfx::TextureStamp{shown->version, -4, shown->map.factor},
                                 shownMapColouring(s, *shown), gfx::pooledView(shown->map.maxima, t, t, shown->map.factor))
              : ctx.textures.get("heat-layer-preview", stamp, weightColouring(s), [&] {
                    return gfx::texelsOf(core::runMaps(run, pass.checkpoint->config()).weights(layer, head), settings, factor);
                });
    if (fromWorker && factor != s.view.heatmapPooling) ctx.actions.emit(action::SetHeatmapPooling{factor});
    ImDrawList* list = ImGui::GetWindowDrawList();
    ctx.heatmaps.draw(list, tex, mMin, mMax, ImVec2(0, 0), ImVec2(1, 1));
    widgets::matrixLabels(list, mMin, mMax, s.queryLabels, s.keyLabels, labelW);
    const ImVec2 barMin(mMax.x + em, mMin.y), barMax(mMax.x + em * 1.8f, mMax.y);
    if (tex.scale() == core::ColourScale::Stretch)
        widgets::colorBar(list, barMin, barMax, s.view.colormap, 0.0f, std::max(tex.maxValue(), 1e-30f), 5);
    else if (tex.scale() == core::ColourScale::Log)
        widgets::colorBar(list, barMin, barMax, s.view.colormap, std::log10(tex.colouring().logFloor), 0.0f,
                          static_cast<int>(-std::log10(tex.colouring().logFloor)) + 1, true);
    else widgets::colorBar(list, barMin, barMax, s.view.colormap, 0.0f, 1.0f, 5);
    ImGui::End();
}

// The part of the matrix on screen, in cells (fractions at its edges).
struct Visible {
    float firstRow, firstCol, rows, cols;
};

// A map read from the pass, zoomed in past its texels: the cells on screen (and half as many
// again around them) are asked for at the pooling the screen needs (view.zoomRegion), made on
// the worker after the whole map, and drawn over it where they lie, in the whole map's colours
// (its stretch, its log floor; per-row colours need whole rows, so there the whole map stays).
void zoomedRegion(PanelContext& ctx, std::string_view viewId, int head, const gfx::HeatmapTexture& whole, float cell, const Visible& v,
                  ImVec2 mMin, ImVec2 mMax) {
    const AppState& s = ctx.state;
    const Eigen::Index tq = s.model.tq(), tk = s.model.tk();
    const ShownMap* shown = shownMapOf(s, head);
    const int fine = headPooling(cell);
    const bool perRow = whole.scale() == core::ColourScale::Rows;
    ZoomRegion want;
    if (shown && !perRow && fine < shown->map.factor) {
        const ZoomRegion& have = s.view.zoomRegion;
        const auto first = [](float f) { return static_cast<Eigen::Index>(std::floor(f)); };
        const auto end = [](float f, Eigen::Index size) { return std::min(size, static_cast<Eigen::Index>(std::ceil(f))); };
        const bool covers = have.rows > 0 && have.factor == fine && have.firstRow <= first(v.firstRow) &&
                            have.firstCol <= first(v.firstCol) && have.firstRow + have.rows >= end(v.firstRow + v.rows, tq) &&
                            have.firstCol + have.cols >= end(v.firstCol + v.cols, tk);
        if (covers) {
            want = have;
        } else {
            const auto span = [&](float from, float count, Eigen::Index size, Eigen::Index& start, Eigen::Index& n) {
                const float margin = count * 0.5f;
                start = std::clamp<Eigen::Index>(first(from - margin), 0, size - 1) / fine * fine;
                n = std::clamp<Eigen::Index>(end(from + count + margin, size), start + 1, size) - start;
            };
            want.factor = fine;
            span(v.firstRow, v.rows, tq, want.firstRow, want.rows);
            span(v.firstCol, v.cols, tk, want.firstCol, want.cols);
        }
    }
    if (!(want == s.view.zoomRegion)) ctx.actions.emit(action::SetZoomRegion{want});
    if (want.rows > 0) {  // the region asked for (this frame's action not yet applied) made unless current
        const std::optional<ShownMapKey> key = shownRegionKey(s, head);
        const ShownRegion* made = shownRegionOf(s, head);
        if (!(want == s.view.zoomRegion) || !key || !made || !made->current(*key)) ctx.requests.stale.insert(std::string(viewId));
    }

    const ShownRegion* region = shownRegionOf(s, head);
    if (!region || !shown || perRow || region->map.factor >= shown->map.factor) return;
    const core::PooledMap& r = region->map;
    gfx::Colouring colouring = weightColouring(s);
    colouring.scale = whole.scale();  // Auto as the whole map resolved it
    if (whole.scale() == core::ColourScale::Stretch)
        colouring = {.colormap = s.view.colormap, .lo = 0.0f, .hi = std::max(whole.top(), 1e-30f), .scale = core::ColourScale::Fixed};
    const gfx::HeatmapTexture& tex = ctx.textures.get("heat-region", gfx::TextureStamp{region->version, head, r.factor}, colouring,
                                                      gfx::pooledView(r.maxima, r.cellRows, r.cellCols, r.factor));
    // where the region lies on screen, cut to the matrix
    const float x0 = mMin.x + (static_cast<float>(r.firstCol) - v.firstCol) * cell;
    const float y0 = mMin.y + (static_cast<float>(r.firstRow) - v.firstRow) * cell;
    const float x1 = x0 + static_cast<float>(r.cellCols) * cell, y1 = y0 + static_cast<float>(r.cellRows) * cell;
    const ImVec2 a(std::max(x0, mMin.x), std::max(y0, mMin.y)), b(std::min(x1, mMax.x), std::min(y1, mMax.y));
    if (b.x <= a.x || b.y <= a.y) return;
    ctx.heatmaps.draw(ImGui::GetWindowDrawList(), tex, a, b, ImVec2((a.x - x0) / (x1 - x0), (a.y - y0) / (y1 - y0)),
                      ImVec2((b.x - x0) / (x1 - x0), (b.y - y0) / (y1 - y0)));
}

}  // namespace

const HeatmapPanel::Rows& HeatmapPanel::rowsFromPass(const AppState& s, int head, Eigen::Index r0, Eigen::Index n) {
    ShownMapKey of = shownMapKey(s, head);
    of.factor = 0;
    if (m_rows.of == of && m_rows.has(r0) && m_rows.has(r0 + n - 1)) return m_rows;
    m_rows.of = of;
    m_rows.r0 = r0;
    m_rows.rows = shownRows(s, head, r0, n);
    return m_rows;
}

void HeatmapPanel::draw(PanelContext& ctx) {
    const AppState& s = ctx.state;
    if (previewingLayer(s)) return drawLayerPreview(ctx, title(), id(), s.view.previewLayer, s.view.previewHead);
    // Rollout (view.rollout): R up to the selected layer in place of a head's weights.
    const bool rollout = s.view.rollout;
    const int head = rollout ? -1 : shownHead(s);
    if (!beginPanelFor(ctx, title(), head, true)) return;
    const core::Mat* flow = shownRollout(s);
    const core::Settings flowMask = flow ? rolloutMask(s) : core::Settings{};
    const core::Settings& mask = flow ? flowMask : s.settings;  // the cells hatched as masked
    if (rollout && flow == nullptr) {
        widgets::flowTextDisabled(rolloutCurrent(s) ? "Rollout: " + s.rollout.why : std::string("Rollout: computing…"));
        ImGui::End();
        return;
    }
    // A layer read from the model's pass: its map pooled on a worker (the last one drawn meanwhile),
    // the numbers on screen made from the pass.
    const bool fromPass = !flow && !capabilities(s).wholeLayer;
    const ShownMap* shown = fromPass ? shownMapOf(s, head) : nullptr;
    if (fromPass && !(shown && shown->current(shownMapKey(s, head)))) ctx.requests.stale.insert(std::string(id()));
    if (fromPass && shown == nullptr) {
        const ShownMapJob* job = pendingShownMap(s);
        const std::string error = job ? job->errorAt(shownMapKey(s, head)) : std::string();
        if (!error.empty()) widgets::wrappedTextColored(ImVec4(0.95f, 0.35f, 0.30f, 1.0f), error);
        else
            widgets::flowTextDisabled("reading " + headLabel(s, head) +
                                      (capabilities(s).givenMaps ? " from the file: " : " from the model's pass: ") +
                                      std::to_string(static_cast<int>((job ? job->fraction() : 0.0) * 100.0)) + " %");
        ImGui::End();
        return;
    }
    const int tq = static_cast<int>(s.model.tq()), tk = static_cast<int>(s.model.tk());
    const auto weight = [&](int i, int j) {
        if (flow) return (*flow)(i, j);
        if (fromPass) {
            const Rows& r = rowsFromPass(s, head, i, 1);
            return r.rows(i - r.r0, j);
        }
        if (head >= 0) return s.forward.heads[static_cast<std::size_t>(head)].weights(i, j);
        float sum = 0.0f;
        for (const auto& h : s.forward.heads) sum += h.weights(i, j);
        return sum / static_cast<float>(s.forward.heads.size());
    };
    const auto rowSum = [&](int i) {
        if (flow) return flow->row(i).sum();
        if (fromPass) {  // only rows already made (a zoomed map's): the rest are not made for their sums
            ShownMapKey of = shownMapKey(s, head);
            of.factor = 0;
            return m_rows.of == of && m_rows.has(i) ? m_rows.rows.row(i - m_rows.r0).sum() : std::nanf("");
        }
        if (head >= 0) return s.forward.heads[static_cast<std::size_t>(head)].weights.row(i).sum();
        float sum = 0.0f;
        for (const auto& h : s.forward.heads) sum += h.weights.row(i).sum();
        return sum / static_cast<float>(s.forward.heads.size());
    };

    // Header: what is shown, in words.
    if (ctx.fonts.large) ImGui::PushFont(ctx.fonts.large);
    // the rollout's title is cut to the panel ("Rollout up to layer 12 · mean over heads" is long at UI scale 2)
    ImGui::TextUnformatted(flow ? widgets::fitLabel(rolloutCaption(s), ImGui::GetContentRegionAvail().x).c_str()
                                : headLabel(s, head).c_str());
    if (ctx.fonts.large) ImGui::PopFont();
    if (flow) {  // the rule in short pieces that wrap; in full, with what rollout ignores, on the title
        const core::RolloutOptions options = rolloutOptions(s.view);
        tooltip(core::rolloutRule(options).append("\n\n").append(kRolloutIgnores).c_str());
        widgets::flowTextDisabled("rows: positions · columns: input tokens");
        widgets::flowTextDisabled(std::string("Â = ½·") + core::rolloutHeadsName(options.heads) + " of heads + ½·I");
        widgets::flowTextDisabled(capabilities(s).ownPass     ? "R = Â^L … Â^1 (the model's own pass)"
                                  : capabilities(s).givenMaps ? "R = Â^L … Â^1 (the imported maps)"
                                                              : "R = Â (one layer)");
    }
    if (capabilities(s).givenMaps && !flow) {
        widgets::flowTextDisabled(givenMapsNote(s).substr(3));  // without the leading " · "
    } else if (!flow || !capabilities(s).ownPass) {             // a model's rollout reads its own pass at τ = 1, not this layer's what-ifs
        char settings[96];
        std::snprintf(settings, sizeof settings, "τ = %.3g%s%s", s.settings.temperature, s.settings.scaled ? "" : " · unscaled (÷1)",
                      s.settings.causal ? " · causal mask" : "");
        widgets::flowTextDisabled(settings);
    }
    if (!flow) widgets::flowTextDisabled("rows: queries · columns: keys");
    if (fromPass) {
        const int f = shown->map.factor;
        const bool file = capabilities(s).givenMaps;  // a file of queries and keys
        widgets::flowTextDisabled(f > 1 ? std::string(file ? "from queries and keys" : "from the pass") + " · a texel: the largest of " +
                                              std::to_string(f) + " × " + std::to_string(f)
                                        : std::string(file ? "made from the file's queries and keys" : "read from the model's pass"));
        if (const ShownMapJob* job = pendingShownMap(s); job && shown->map.factor != shownMapKey(s, head).factor)
            widgets::flowTextDisabled("finer: " + std::to_string(static_cast<int>(job->fraction() * 100.0)) + " %");
    }
    if (!ctx.state.view.presenter) {
        static constexpr const char* kScales[] = {"auto", "0 … 1", "stretched", "per row", "log"};
        const float comboW = ImGui::CalcTextSize("stretched").x + ImGui::GetFrameHeight() + ImGui::GetStyle().FramePadding.x * 2.0f;
        widgets::sameLineIfFits(comboW + ImGui::GetStyle().ItemInnerSpacing.x + ImGui::CalcTextSize("colours").x);
        ImGui::SetNextItemWidth(comboW);
        int scale = static_cast<int>(s.view.colourScale);
        if (ImGui::Combo("colours##scale", &scale, kScales, core::kColourScaleCount))
            ctx.actions.emit(action::SetColourScale{static_cast<core::ColourScale>(scale)});
        tooltip(
            "How weights become colours. 0 … 1: comparable across heads and sentences. Stretched: 0 … the largest weight "
            "shown. Per row: each row over its own largest weight. Log: log10 of the weight. Auto: stretched when every "
            "weight is far below 1 (a long sentence, where each is near 1/T); on a long map whose few sharp rows hold the "
            "largest weights, stretched to the 99th percentile of its weights, the top 1 % clipped (the bar says how many), "
            "never below the uniform weight 1/T (a sharp head keeps 0 … 1); else 0 … 1.");
    }
    // A sentence pair: which block of queries and keys stands out (BertViz's filter).
    if (pairSegments(s).pair) {
        static constexpr PairFilter kFilters[] = {PairFilter::All, PairFilter::AtoA, PairFilter::AtoB, PairFilter::BtoA, PairFilter::BtoB};
        const float comboW = ImGui::CalcTextSize("A → B").x + ImGui::GetFrameHeight() + ImGui::GetStyle().FramePadding.x * 2.0f;
        widgets::sameLineIfFits(comboW + ImGui::GetStyle().ItemInnerSpacing.x + ImGui::CalcTextSize("pair").x);
        ImGui::SetNextItemWidth(comboW);
        if (ImGui::BeginCombo("pair##filter", pairFilterName(s.view.pairFilter))) {
            for (const PairFilter f : kFilters)
                if (ImGui::Selectable(pairFilterName(f), f == s.view.pairFilter)) ctx.actions.emit(action::SetPairFilter{f});
            ImGui::EndCombo();
        }
        tooltip(
            "A sentence pair: A is [CLS] A [SEP], B is B [SEP]. A → B keeps A's queries reading B's keys and dims the rest; "
            "the lines are the boundary between the sentences.");
    }

    ImDrawList* list = ImGui::GetWindowDrawList();
    const ImVec2 origin = ImGui::GetCursorScreenPos();
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const float lineH = ImGui::GetTextLineHeight();
    // Row labels: as wide as the widest of the first rows' tokens, at most 160 px and a fifth of
    // the panel (then "…"): the matrix keeps the room.
    const float maxNameW = std::min(160.0f * ctx.scale, avail.x * 0.2f);
    float labelW = 0.0f;
    for (int i = 0; i < std::min(tq, 256) && labelW < maxNameW; ++i)
        labelW = std::max(labelW, ImGui::CalcTextSize(widgets::clipLabel(s.queryLabels[static_cast<std::size_t>(i)]).c_str()).x);
    labelW = std::min(labelW, maxNameW) + 10.0f * ctx.scale;
    const float sumW = ImGui::CalcTextSize("Σ 1.00").x + 12.0f * ctx.scale;
    const float barW = 70.0f * ctx.scale;
    const float topH = lineH + 8.0f * ctx.scale;
    const float zoom = s.view.zoom;
    const float hintH = zoom > 1.0f ? lineH + 4.0f * ctx.scale : 0.0f;  // the zoom's hint under the matrix keeps its line
    const auto sideFor = [&](float labels) {
        return std::max(40.0f, std::min(avail.x - labels - sumW - barW, avail.y - topH - 4.0f - hintH));
    };
    // Cells lower than a line of text: the labels are thinned out and numbered ("1021 the"), so
    // the number gets its room (the rule rowStep below follows); the cells only shrink with it.
    if (std::min(sideFor(labelW) / tk, sideFor(labelW) / tq) * zoom < lineH)
        labelW += ImGui::CalcTextSize((std::to_string(tq) + " ").c_str()).x;
    const float side = sideFor(labelW);
    const float cell = std::min(side / tk, side / tq) * zoom;  // pixels per cell at this zoom
    const float matW = std::min(side, cell * tk), matH = std::min(side, cell * tq);
    const ImVec2 mMin(origin.x + labelW, origin.y + topH), mMax(mMin.x + matW, mMin.y + matH);

    // Visible window of the matrix, as fractions (u = keys, v = queries).
    const float fu = std::min(1.0f, matW / (cell * tk)), fv = std::min(1.0f, matH / (cell * tq));
    const float u0 = std::clamp(s.view.panX - fu * 0.5f, 0.0f, 1.0f - fu), v0 = std::clamp(s.view.panY - fv * 0.5f, 0.0f, 1.0f - fv);
    // One texture, whichever head is shown.
    // Colour range: 0 … 1 (comparable across heads), or 0 … the largest weight shown (contrast
    // for long sequences, where every weight is near 1/T).
    const gfx::HeatmapTexture& tex =
        flow       ? ctx.textures.get("heat-rollout", gfx::TextureStamp{s.rollout.version, -3, headPooling(cell)}, weightColouring(s),
                                      [&] { return gfx::texelsOf(*flow, mask, headPooling(cell)); })
        : fromPass ? ctx.textures.get("heat-pass", gfx::TextureStamp{shown->version, head, shown->map.factor}, shownMapColouring(s, *shown),
                                      gfx::pooledView(shown->map.maxima, tq, tk, shown->map.factor))
                   : headWeightsTexture(ctx, "heat", head, cell);
    // the next softmax of the shown head pools its texels for this map (the next map made from the
    // pass, of any head)
    // (a map read from the pass is pooled whole for the map unzoomed: a zoomed view's cells are a
    // region made finer, zoomedRegion; per-row colours need whole rows, so there the whole map is)
    if (const int pooling = headPooling(fromPass && s.view.colourScale != core::ColourScale::Rows ? cell / zoom : cell);
        !flow && (head >= 0 || fromPass) && pooling != s.view.heatmapPooling)
        ctx.actions.emit(action::SetHeatmapPooling{pooling});
    // the map read from the pass: zoomed in far enough for numbers, its visible rows are made
    if (fromPass && cell >= lineH + 2.0f) {
        const int i0 = std::max(0, static_cast<int>(v0 * static_cast<float>(tq)));
        const int n = std::min(tq - i0, static_cast<int>(std::ceil(matH / cell)) + 1);
        if (n > 0 && n <= 128) rowsFromPass(s, head, i0, n);
    }
    // The colour a cell was given, for its number's ink.
    const auto cellColour = [&](int i, float w) {
        float rowMax = 0.0f;  // only drawn for small maps: a row's scan is cheap
        if (tex.scale() == core::ColourScale::Rows)
            for (int j = 0; j < tk; ++j)
                if (!core::isBlocked(mask, i, j)) rowMax = std::max(rowMax, weight(i, j));
        return core::colormapColor(s.view.colormap, tex.position(w, rowMax), 0.0f, 1.0f);
    };
    ctx.heatmaps.draw(list, tex, mMin, mMax, ImVec2(u0, v0), ImVec2(u0 + fu, v0 + fv));
    const float firstCol = u0 * tk, firstRow = v0 * tq;
    const auto cellX = [&](float j) { return mMin.x + (j - firstCol) * cell; };
    const auto cellY = [&](float i) { return mMin.y + (i - firstRow) * cell; };
    if (fromPass) zoomedRegion(ctx, id(), head, tex, cell, {firstRow, firstCol, matH / cell, matW / cell}, mMin, mMax);
    const int iBegin = std::max(0, static_cast<int>(firstRow)), iEnd = std::min(tq, static_cast<int>(std::ceil(firstRow + matH / cell)));
    const int jBegin = std::max(0, static_cast<int>(firstCol)), jEnd = std::min(tk, static_cast<int>(std::ceil(firstCol + matW / cell)));

    const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);
    const ImU32 accent = IM_COL32(239, 68, 68, 255);
    // Everything drawn on the cells stays inside the matrix (a zoomed map's edge cells are cut,
    // their numbers and outlines with them); the row labels and the Σ column stay in their own
    // strips, beside the rows they name.
    list->PushClipRect(mMin, mMax, true);
    // Values inside cells when they fit.
    if (cell >= ImGui::CalcTextSize("0.00").x + 6.0f && cell >= lineH + 2.0f) {
        for (int i = iBegin; i < iEnd; ++i)
            for (int j = jBegin; j < jEnd; ++j) {
                if (core::isBlocked(mask, i, j)) continue;
                const float w = weight(i, j);
                char buf[16];
                std::snprintf(buf, sizeof buf, "%.2f", w);
                const ImVec2 ts = ImGui::CalcTextSize(buf);
                list->AddText(ImVec2(cellX(j + 0.5f) - ts.x * 0.5f, cellY(i + 0.5f) - ts.y * 0.5f),
                              widgets::contrastingText(cellColour(i, w)), buf);
            }
    }
    // A sentence pair: the filter's block bright, the rest dimmed, and the boundary between A and B on both axes.
    if (const PairSegments pair = pairSegments(s); pair.pair) {
        if (s.view.pairFilter != PairFilter::All) {
            const PairBlock b = pairBlock(s, s.view.pairFilter);
            const ImVec2 lo(cellX(static_cast<float>(b.firstCol)), cellY(static_cast<float>(b.firstRow)));
            const ImVec2 hi(cellX(static_cast<float>(b.firstCol + b.cols)), cellY(static_cast<float>(b.firstRow + b.rows)));
            const ImU32 dim = IM_COL32(0, 0, 0, 170);
            list->AddRectFilled(mMin, ImVec2(mMax.x, lo.y), dim);
            list->AddRectFilled(ImVec2(mMin.x, hi.y), mMax, dim);
            list->AddRectFilled(ImVec2(mMin.x, lo.y), ImVec2(lo.x, hi.y), dim);
            list->AddRectFilled(ImVec2(hi.x, lo.y), ImVec2(mMax.x, hi.y), dim);
        }
        const ImU32 boundary = IM_COL32(255, 255, 255, 220);
        const float width = std::max(1.5f, 0.1f * ImGui::GetFontSize());
        for (const Eigen::Index at : {pair.aEnd, pair.bStart}) {
            list->AddLine(ImVec2(cellX(static_cast<float>(at)), mMin.y), ImVec2(cellX(static_cast<float>(at)), mMax.y), boundary, width);
            list->AddLine(ImVec2(mMin.x, cellY(static_cast<float>(at))), ImVec2(mMax.x, cellY(static_cast<float>(at))), boundary, width);
        }
    }
    // Tokens a model generated after the text: where they start, on both axes, in amber.
    if (const Eigen::Index from = generatedFrom(s); from > 0) {
        const auto at = static_cast<float>(from);
        const ImU32 amber = widgets::generatedColour(230);
        const float width = std::max(1.5f, 0.12f * ImGui::GetFontSize());
        list->AddLine(ImVec2(cellX(at), mMin.y), ImVec2(cellX(at), mMax.y), amber, width);
        list->AddLine(ImVec2(mMin.x, cellY(at)), ImVec2(mMax.x, cellY(at)), amber, width);
    }
    // Selected query row outline.
    if (s.view.selectedQuery >= iBegin && s.view.selectedQuery < iEnd)
        list->AddRect(ImVec2(mMin.x, cellY(static_cast<float>(s.view.selectedQuery))), ImVec2(mMax.x, cellY(s.view.selectedQuery + 1.0f)),
                      accent, 0.0f, 0, 2.0f);
    list->PopClipRect();
    list->PushClipRect(ImVec2(origin.x, mMin.y), ImVec2(mMax.x + sumW, mMax.y), true);
    // Row labels (queries) and the Σ column, where rows are tall enough to read.
    // Thinned out, every rowStep-th position is labelled counting from 1 (1, 10, 20, … at a step of
    // 10): a step of 1, 2 or 5 × 10ⁿ reads plainly and rarely lines up with a repeated sentence.
    // Position 1 is labelled too unless the step is 2, where it would touch position 2's label.
    const int rowStep = widgets::niceStep(lineH / cell);
    const auto labelled = [](int i, int step) { return step == 1 || (i == 0 && step > 2) || (i + 1) % step == 0; };
    // Where rows are thinner than a line, a label is kept whole inside the matrix's height (the
    // first and last rows' would be cut in half), and one that would then touch the label before
    // it or the selected row's (always drawn) is left out.
    const auto labelTop = [&](int i) {
        const float y = cellY(i + 0.5f) - lineH * 0.5f;
        return rowStep > 1 ? std::clamp(y, mMin.y, std::max(mMin.y, mMax.y - lineH)) : y;
    };
    const float selectedTop = labelTop(s.view.selectedQuery);
    float lastTop = -1e9f;
    for (int i = iBegin; i < iEnd; ++i) {
        const bool selected = i == s.view.selectedQuery;
        if (!labelled(i, rowStep) && !selected) continue;
        if (!selected && rowStep > 1 && (labelTop(i) < lastTop + lineH || std::abs(labelTop(i) - selectedTop) < lineH)) continue;
        // When rows are thinned out, say which position each label belongs to.
        const std::string& token = s.queryLabels[static_cast<std::size_t>(i)];
        const std::string fitted = widgets::fitLabel(
            rowStep > 1 ? std::to_string(i + 1) + " " + widgets::clipText(token, widgets::kLabelGlyphs, false).text : token,
            labelW - 10.0f * ctx.scale + 0.5f);
        const char* label = fitted.c_str();
        const ImVec2 ts = ImGui::CalcTextSize(label);
        const float y = rowStep > 1 ? labelTop(i) : cellY(i + 0.5f) - ts.y * 0.5f;
        lastTop = y;
        list->AddText(ImVec2(mMin.x - ts.x - 6.0f, y), selected ? accent : text, label);
        char buf[24];
        if (const float sum = rowSum(i); !std::isnan(sum)) {
            std::snprintf(buf, sizeof buf, "%.2f", sum);
            list->AddText(ImVec2(mMax.x + 8.0f, y), ImGui::GetColorU32(ImGuiCol_TextDisabled), buf);
        }
    }
    list->PopClipRect();
    list->AddText(ImVec2(mMax.x + 8.0f, origin.y + 4.0f), text, "Σ");
    // Column labels (keys) above the matrix: each key's token when every one in view fits its
    // cell (at least four ems, then "…"); else positions, counted from 1, at a step of 1, 2 or
    // 5 × 10ⁿ that keeps them apart (never "the on on on …" from a repeated sentence).
    float lastEnd = -1e9f;
    const float columnW = std::max(cell - 4.0f, ImGui::GetFontSize() * 4.0f);
    const widgets::LabelThinning thin = widgets::thinLabels(s.keyLabels, jBegin, jEnd, cell, columnW);
    const bool tokens = thin.tokens;
    const int columnStep = thin.step;
    for (int j = jBegin; j < jEnd; ++j) {
        if (tokens ? j % columnStep != 0 : !labelled(j, columnStep)) continue;
        if (cellX(j + 0.5f) < lastEnd + 4.0f) continue;  // overlaps whatever its width
        const std::string label = tokens ? widgets::fitLabel(s.keyLabels[static_cast<std::size_t>(j)], thin.width) : std::to_string(j + 1);
        const ImVec2 ts = ImGui::CalcTextSize(label.c_str());
        const float x = cellX(j + 0.5f) - ts.x * 0.5f;
        if (x < lastEnd + 4.0f || x + ts.x > mMax.x + 4.0f) continue;  // clear of the Σ header at mMax.x + 8
        list->AddText(ImVec2(x, origin.y + 4.0f), text, label.c_str());
        lastEnd = x + ts.x;
    }
    // The token under the mouse in the query–key map: its row (a query) or column (a key).
    list->PushClipRect(mMin, mMax, true);
    if (s.view.hoverToken >= 0) {
        const ImU32 hoverInk = ImGui::GetColorU32(ImGuiCol_PlotLinesHovered);
        const auto t = static_cast<float>(s.view.hoverToken);
        if (!s.view.hoverKey && s.view.hoverToken >= iBegin && s.view.hoverToken < iEnd)
            list->AddRect(ImVec2(mMin.x, cellY(t)), ImVec2(mMax.x, cellY(t + 1.0f)), hoverInk, 0.0f, 0, 2.0f);
        if (s.view.hoverKey && cellX(t + 1.0f) > mMin.x && cellX(t) < mMax.x)
            list->AddRect(ImVec2(std::max(mMin.x, cellX(t)), mMin.y), ImVec2(std::min(mMax.x, cellX(t + 1.0f)), mMax.y), hoverInk, 0.0f, 0,
                          2.0f);
    }
    list->PopClipRect();
    // The colour bar in the scale's own terms, and under it what the scale is.
    const ImVec2 barMin(mMax.x + sumW, mMin.y), barMax(mMax.x + sumW + barW, mMax.y);
    const char* caption = "";
    const std::string clipped = core::clipCaption(tex.scaleChoice());
    switch (tex.scale()) {
        case core::ColourScale::Stretch:
            widgets::colorBar(list, barMin, barMax, s.view.colormap, 0.0f, std::max(tex.top(), 1e-30f), 5);
            caption = "stretched";
            break;
        case core::ColourScale::Rows:
            widgets::colorBar(list, barMin, barMax, s.view.colormap, 0.0f, 1.0f, 5);
            caption = "÷ row max";
            break;
        case core::ColourScale::Log:
            widgets::colorBar(list, barMin, barMax, s.view.colormap, std::log10(tex.colouring().logFloor), 0.0f,
                              static_cast<int>(-std::log10(tex.colouring().logFloor)) + 1, true);
            caption = "log scale";
            break;
        default: widgets::colorBar(list, barMin, barMax, s.view.colormap, 0.0f, 1.0f, 5);
    }
    const float windowBottom = ImGui::GetWindowPos().y + ImGui::GetWindowHeight() - ImGui::GetStyle().WindowPadding.y;
    if (*caption && barMax.y + 4.0f + ImGui::GetTextLineHeight() <= windowBottom) {
        // A clipped bar says so under it ("1.0 % clipped": its top tick is where); the tooltip in full.
        const core::ScaleChoice& choice = tex.scaleChoice();
        char share[48] = "";
        if (!clipped.empty())
            std::snprintf(share, sizeof share, "%.*f %% clipped", choice.clipped * 100.0 < 0.095 ? 2 : 1, choice.clipped * 100.0);
        // up to the content's right edge, a scrollbar left out
        const float roomW = std::min(barW + sumW, ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x - barMin.x);
        const std::string shown = widgets::fitLabel(*share                                          ? share
                                                    : s.view.colourScale == core::ColourScale::Auto ? std::string("auto: ") + caption
                                                                                                    : caption,
                                                    roomW);
        list->AddText(ImVec2(barMin.x, barMax.y + 4.0f), ImGui::GetColorU32(ImGuiCol_TextDisabled), shown.c_str());
        // The clip in full where the caption's line is hovered: "top 0.8 % of weights clipped at 0.043".
        if (!clipped.empty() && ImGui::IsMouseHoveringRect(ImVec2(barMin.x, barMin.y), ImVec2(barMax.x + sumW, barMax.y + 4.0f + lineH)))
            widgets::showTooltip(clipped +
                                     ": the colour bar stops there so that the rest of this long map shows; the clipped weights "
                                     "have the top colour. Choose \"0 … 1\" to see every weight unclipped.",
                                 2 * widgets::kTooltipGlyphs);
    }

    // Interaction: hover, click a cell or a label, wheel zoom, right/middle drag pan.
    ImGui::SetCursorScreenPos(ImVec2(origin.x, mMin.y));
    ImGui::InvisibleButton("##matrix", ImVec2(mMax.x - origin.x, matH),
                           ImGuiButtonFlags_MouseButtonLeft | ImGuiButtonFlags_MouseButtonRight | ImGuiButtonFlags_MouseButtonMiddle);
    const ImGuiIO& io = ImGui::GetIO();
    if (ImGui::IsItemHovered()) {
        const int i = static_cast<int>(std::floor(firstRow + (io.MousePos.y - mMin.y) / cell));
        const int j = static_cast<int>(std::floor(firstCol + (io.MousePos.x - mMin.x) / cell));
        if (i >= 0 && i < tq) {
            if (io.MousePos.x >= mMin.x && j >= 0 && j < tk) {
                list->PushClipRect(mMin, mMax, true);
                list->AddRect(ImVec2(cellX(static_cast<float>(j)), cellY(static_cast<float>(i))), ImVec2(cellX(j + 1.0f), cellY(i + 1.0f)),
                              IM_COL32(255, 255, 255, 255), 0.0f, 0, 1.5f);
                list->PopClipRect();
                widgets::showTooltip(cellTooltip(s, mask, head, i, j, weight(i, j), flow != nullptr), 2 * widgets::kTooltipGlyphs);
            } else {
                widgets::showTooltip("query " + std::to_string(i + 1) + " \"" +
                                         widgets::labelWithLength(s.queryLabels[static_cast<std::size_t>(i)], widgets::kTooltipGlyphs) +
                                         "\": click to select",
                                     2 * widgets::kTooltipGlyphs);
            }
            if (ImGui::IsItemClicked(ImGuiMouseButton_Left)) {
                // A cell picks its query and key (the neuron view's); a row label, the query.
                if (io.MousePos.x >= mMin.x && j >= 0 && j < tk) ctx.actions.emit(action::SelectCell{i, j});
                else ctx.actions.emit(action::SelectQuery{i});
            }
        }
        if (io.MouseWheel != 0.0f) {
            const float factor = std::pow(1.25f, io.MouseWheel);
            const float mu = u0 + (io.MousePos.x - mMin.x) / matW * fu, mv = v0 + (io.MousePos.y - mMin.y) / matH * fv;
            const float newZoom = std::clamp(zoom * factor, 1.0f, 512.0f);
            const float k = zoom / newZoom;  // keep the point under the mouse fixed
            ctx.actions.emit(action::SetView{newZoom, mu + (s.view.panX - mu) * k, mv + (s.view.panY - mv) * k});
        }
        if (ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) ctx.actions.emit(action::SetView{1.0f, 0.5f, 0.5f});
    }
    if (ImGui::IsItemActive() && (ImGui::IsMouseDragging(ImGuiMouseButton_Right) || ImGui::IsMouseDragging(ImGuiMouseButton_Middle)))
        ctx.actions.emit(action::SetView{zoom, s.view.panX - io.MouseDelta.x / (cell * tk), s.view.panY - io.MouseDelta.y / (cell * tq)});
    if (zoom > 1.0f) {  // the hint fitted to the panel, ending in "…" where it is cut
        ImGui::SetCursorScreenPos(ImVec2(origin.x, mMax.y + 4.0f));
        char hint[96];
        std::snprintf(hint, sizeof hint, "zoom %.1fx: wheel to zoom, right-drag to pan, double-click to reset", zoom);
        // beside the colour bar's caption, never over it
        const std::string fitted = widgets::fitLabel(hint, std::max(0.0f, mMax.x + sumW - 8.0f * ctx.scale - origin.x));
        ImGui::TextDisabled("%s", fitted.c_str());
    }
    ImGui::End();
}

}  // namespace attnviz::app
