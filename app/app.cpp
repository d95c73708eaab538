#include "app/app.hpp"

#include "app/keys.hpp"
#include "app/state/generation.hpp"

#include "app/panels/lesson_panel.hpp"
#include "app/panels/panel_table.hpp"
#include "app/state/compare_view.hpp"
#include "app/state/head_summary.hpp"
#include "app/state/model_view.hpp"
#include "app/state/query_key_view.hpp"
#include "app/state/rollout_view.hpp"
#include "app/state/source.hpp"
#include "app/theme.hpp"
#include "app/views/view_table.hpp"
#include "app/widgets/text.hpp"
#include "core/base/error.hpp"
#include "core/base/files.hpp"
#include "core/base/format.hpp"
#include "core/io/export.hpp"
#include "core/io/npy.hpp"
#include "core/models/loaded_model.hpp"
#include "core/scenario/presets.hpp"

#include <nlohmann/json.hpp>

#include <imgui_stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <new>

namespace attnviz::app {

App::App(AppState state) : m_state(std::move(state)) {
    for (const PanelInfo& info : panelTable()) m_panels.push_back(info.make(info));
    recomputeStep(m_state, shownHead(m_state), 0);  // the first frame needs the visible head only
    syncDrafts();
    if (!m_state.view.compareText.empty()) revealPanel(panel_id::kCompare);  // --compare
}

std::vector<std::string> App::panelIds() const {
    std::vector<std::string> ids;
    for (const auto& p : m_panels) ids.emplace_back(p->id());
    return ids;
}

App::FontTexts App::fontTexts() const {
    // The user's text on screen: the tokens, a model's likely next tokens, the sentence being
    // typed, the scenario's name and description, the lesson's step and check, and messages;
    // apart, the lesson's lines, which are drawn whole, not as a tooltip's share.
    FontTexts out;
    std::vector<std::string_view>& texts = out.labels;
    const auto add = [](std::vector<std::string_view>& to, const std::vector<std::string>& list) {
        to.insert(to.end(), list.begin(), list.end());
    };
    add(texts, m_state.queryLabels);  // as panels draw them: a model's byte tokens as "⟨E6 97⟩"
    add(texts, m_state.keyLabels);
    if (const core::LoadedModel* pass = checkpointPass(m_state)) add(texts, pass->nextLabels);
    add(texts, m_state.compare.labels);
    texts.emplace_back(m_drafts.sentence);
    texts.emplace_back(m_drafts.pair);
    texts.emplace_back(m_drafts.compare);
    texts.emplace_back(m_state.scenario.name);
    texts.emplace_back(m_state.scenario.description);
    texts.emplace_back(m_state.error);
    texts.emplace_back(m_toast);
    if (m_state.lesson) {
        texts.emplace_back(m_state.lesson->lesson.title);
        const auto& steps = m_state.lesson->lesson.steps;
        if (m_state.lesson->step >= 0 && m_state.lesson->step < static_cast<int>(steps.size())) {
            const core::LessonStep& step = steps[static_cast<std::size_t>(m_state.lesson->step)];
            texts.emplace_back(step.title);
            if (step.check) texts.emplace_back(step.check->question);
            add(out.lines, step.text);
        }
    }
    return out;
}

bool App::prepareFonts(float contentScale, float pixelScale) {
    m_effectiveScale = m_state.view.uiScale * contentScale;
    // Glyphs are rasterised at the pixels they cover, up to kMaxRasterScale (UI scale 4 on a 2x
    // display exported at 4x would be 32: an atlas no texture holds); beyond it they are scaled up.
    const float raster = std::min(m_effectiveScale * pixelScale, FontSet::kMaxRasterScale);
    // The characters the text on screen needs, found again only when that text changed.
    const FontTexts texts = fontTexts();
    const auto same = [](const std::vector<std::string_view>& now, const std::vector<std::string>& before) {
        return std::equal(now.begin(), now.end(), before.begin(), before.end());
    };
    if (!same(texts.labels, m_fontLabels) || !same(texts.lines, m_fontLines)) {
        m_fontLabels.assign(texts.labels.begin(), texts.labels.end());
        m_fontLines.assign(texts.lines.begin(), texts.lines.end());
        m_fontNeeds = FontSet::neededCharacters(texts.labels);
        const std::set<ImWchar> longNeeds = FontSet::neededCharacters(texts.lines, widgets::kLongTextGlyphs);
        for (ImWchar c : longNeeds)
            if (m_fontNeeds.size() < FontSet::kMaxExtraGlyphs) m_fontNeeds.insert(c);
    }
    if (!m_fontSet.needsRebuild(raster, m_fontNeeds)) return false;
    m_fontSet.build(raster, m_fontNeeds);
    ImGui::GetIO().FontGlobalScale = m_effectiveScale / raster;
    return true;
}

void App::prepareStyle(float contentScale) {
    const float scale = m_state.view.uiScale * contentScale;
    const int theme = static_cast<int>(m_state.view.theme);
    if (theme == m_styleTheme && scale == m_styleScale) return;
    applyTheme(m_state.view.theme, scale);
    m_styleTheme = theme;
    m_styleScale = scale;
}

void App::notify(std::string message, bool error) {
    m_toast = std::move(message);
    m_toastError = error;
    m_toastUntil = ImGui::GetTime() + 6.0;
}

void App::syncDrafts() {
    // The sentence box shows the sentence, or the explicit tokens joined by spaces.
    std::string sentence = m_state.scenario.sentence.value_or("");
    if (!m_state.scenario.sentence && m_state.scenario.tokens) sentence = core::joinStrings(*m_state.scenario.tokens, " ");
    if (sentence != m_drafts.sentenceSource) {
        m_drafts.sentence = sentence;
        m_drafts.sentenceSource = sentence;
    }
    if (const std::string pair = m_state.scenario.pair.value_or(""); pair != m_drafts.pairSource) {
        m_drafts.pair = pair;
        m_drafts.pairSource = pair;
    }
}

std::string App::defaultExportPath(const char* extension) const {
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::path dir = ".";
    if (const char* home = std::getenv("HOME"); home && fs::is_directory(fs::path(home) / "Pictures", ec))
        dir = fs::path(home) / "Pictures";
    const std::time_t now = std::time(nullptr);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&now));
    const std::string name = m_state.presetId.empty() ? "custom" : m_state.presetId;
    return (dir / ("attnviz-" + name + "-" + stamp + extension)).string();
}

namespace {

// `before`, the group, then `after`: a strip of tabs with a group of the view table's in it.
std::vector<std::string_view> joined(std::vector<std::string_view> before, const std::vector<std::string_view>& group,
                                     const std::vector<std::string_view>& after) {
    before.insert(before.end(), group.begin(), group.end());
    before.insert(before.end(), after.begin(), after.end());
    return before;
}

}  // namespace

// Where each panel goes, by the room there is counted in ems (the font's height at this UI
// scale): the full layout when every panel has the room its content needs (1280 × 720 at scale
// 1); else the heatmap beside one group of tabs that shows one panel at a time, full size,
// rather than every panel squeezed until it clips.
void App::layout() {
    m_tabbed.clear();
    m_onStrips.clear();
    const ImGuiIO& io = ImGui::GetIO();
    const float W = io.DisplaySize.x;
    float H = io.DisplaySize.y;
    const float top = ImGui::GetFrameHeight();
    const float s = m_effectiveScale, em = ImGui::GetFontSize();
    m_rects.clear();
    const auto put = [&](std::string_view id, float x0, float y0, float x1, float y1) {
        m_rects[std::string(id)] = {ImVec2(x0, y0), ImVec2(x1, y1)};
    };
    const bool roomy = W >= kRoomyWidthEms * em && H - top >= kRoomyHeightEms * em;
    // A view asked for by name (View menu, --panel), or chosen on a tab strip.
    const auto wanted = [&](std::string_view id) {
        return m_reveal == id || std::any_of(m_tabs.begin(), m_tabs.end(), [&](const auto& group) { return group.second == id; });
    };
    // The views the source feeds (an import has no weights for the stages, say), and those asked for.
    const auto offered = [&](std::vector<std::string_view> ids) {
        std::erase_if(ids, [&](std::string_view id) { return !feedsView(m_state, id) && !wanted(id); });
        return ids;
    };
    // The heatmap, the head view and the neuron view share a place: tabs in the full layout; on a
    // small screen the one revealed last (View menu) takes the heatmap's place beside the tabs.
    const std::vector<std::string_view> weightsGroup = offered(viewsAt(Place::Weights)), layersGroup = offered(viewsAt(Place::Layers));
    for (const std::string_view id : weightsGroup)
        if (m_reveal == id) m_weightsView = std::string(id);
    if (std::find(weightsGroup.begin(), weightsGroup.end(), m_weightsView) == weightsGroup.end())
        m_weightsView = std::string(panel_id::kHeatmap);
    const std::string_view weights = m_weightsView;
    // The heatmap (or another first panel) on the left, the others as tabs on the right.
    // The strip of tabs runs across the whole window when it would need two rows over the
    // right-hand side alone.
    const auto tabbed = [&](std::string_view first, std::vector<std::string_view> others) {
        const float split = std::round(W * (W >= 1.4f * (H - top) ? 0.58f : 0.5f));
        if (tabRows(others, W - split) == 1) {
            put(first, 0, top, split, H);
            tabGroup(others, PanelRect{ImVec2(split, top), ImVec2(W, H)}, false);
        } else {
            const float below = top + tabGroup(others, PanelRect{ImVec2(0, top), ImVec2(W, H)}, true);
            put(first, 0, below, split, H);
            m_rects[m_tabs[std::string(others.front())]] = {ImVec2(split, below), ImVec2(W, H)};
        }
    };
    if (m_state.lesson) {
        // The lesson strip along the bottom, as tall as its text needs, with the step's panels
        // (or the usual layout) above it. When the strip would take more than 45 % of the window,
        // the lesson is a tab beside the step's first panel instead, full height, brought to the
        // front at each new step.
        const auto& panels = m_state.lesson->lesson.steps[static_cast<std::size_t>(m_state.lesson->step)].panels;
        const float need = lessonPanelHeight(*m_state.lesson, W, m_fontSet.fonts(), m_state.view.presenter);
        if (!roomy || need > (H - top) * 0.45f) {
            const std::string shown = m_state.lesson->lesson.id + "#" + std::to_string(m_state.lesson->step);
            if (shown != m_lessonShown) revealPanel(panel_id::kLesson), m_lessonShown = shown;
            std::vector<std::string_view> tabs = {panel_id::kLesson};
            if (panels.empty()) {
                if (m_state.view.lab != Lab::None) tabs.emplace_back(labName(m_state.view.lab));
                for (const auto id : {panel_id::kBars, panel_id::kHeads, panel_id::kControls}) tabs.emplace_back(id);
                return tabbed(panel_id::kHeatmap, tabs);
            }
            tabs.insert(tabs.end(), panels.begin() + 1, panels.end());
            return tabbed(panels.front(), tabs);
        }
        const float strip = std::max(need, (H - top) * 0.24f);
        put(panel_id::kLesson, 0, H - strip, W, H);
        H -= strip;
        if (panels.size() == 1) return put(panels.front(), 0, top, W, H);
        if (!panels.empty()) {
            if (!roomy) return tabbed(panels.front(), {panels.begin() + 1, panels.end()});
            const float split = W * 0.6f;
            m_rects[panels.front()] = {ImVec2(0, top), ImVec2(split, H)};
            const float rowH = (H - top) / static_cast<float>(panels.size() - 1);
            for (std::size_t i = 1; i < panels.size(); ++i)
                m_rects[panels[i]] = {ImVec2(split, top + rowH * static_cast<float>(i - 1)), ImVec2(W, top + rowH * static_cast<float>(i))};
            return;
        }
    }
    // Every layer × head (the model view, the head statistics): on tabs beside what shares their
    // place, first, whenever the source has many layers (a model, an import), for a scenario once
    // asked for (View menu, --panel).
    const std::vector<std::string_view> everyLayerViews = viewsAt(Place::Layers);
    const bool wholeModel = capabilities(m_state).manyLayers || std::any_of(everyLayerViews.begin(), everyLayerViews.end(), wanted);
    if (m_state.view.presenter) {
        if (!roomy && wholeModel) return tabbed(weights, joined({panel_id::kBars, panel_id::kHeads}, layersGroup, {}));
        if (!roomy) return tabbed(weights, {panel_id::kBars, panel_id::kHeads});
        if (wholeModel) {
            const float split = W * 0.5f, mid = top + (H - top) * 0.4f;
            tabGroup(weightsGroup, PanelRect{ImVec2(0, top), ImVec2(split, H)}, false);
            put(panel_id::kBars, split, top, W, mid);
            std::vector<std::string_view> tabs = layersGroup;
            tabs.insert(tabs.begin() + 1, panel_id::kHeads);
            tabGroup(tabs, PanelRect{ImVec2(split, mid), ImVec2(W, H)}, false);
            return;
        }
        const float split = W * 0.64f, mid = top + (H - top) * 0.55f;
        tabGroup(weightsGroup, PanelRect{ImVec2(0, top), ImVec2(split, H)}, false);
        put(panel_id::kBars, split, top, W, mid);
        put(panel_id::kHeads, split, mid, W, H);
        return;
    }
    if (!roomy) {
        if (m_state.view.lab != Lab::None)
            return tabbed(weights, {labName(m_state.view.lab), panel_id::kBars, panel_id::kHeads, panel_id::kControls});
        if (wholeModel)
            return tabbed(weights, offered(joined({panel_id::kBars, panel_id::kHeads}, layersGroup,
                                                  {panel_id::kControls, panel_id::kSwap, panel_id::kStages, panel_id::kPositional})));
        return tabbed(weights, offered({panel_id::kBars, panel_id::kHeads, panel_id::kControls, panel_id::kSwap, panel_id::kStages,
                                        panel_id::kPositional}));
    }
    const float left = std::min(340.0f * s, W * 0.28f);
    // A model's bottom row holds the model view: a little more room for it.
    const float mainW = W - left, rowY = top + (H - top) * (wholeModel ? 0.54f : 0.60f);
    const float heatR = left + mainW * 0.56f, barsY = top + (rowY - top) * 0.55f;
    put(panel_id::kControls, 0, top, left, H);
    // The head view and the neuron view share the heatmap's place, on tabs.
    tabGroup(weightsGroup, PanelRect{ImVec2(left, top), ImVec2(heatR, rowY)}, false);
    put(panel_id::kBars, heatR, top, W, barsY);
    put(panel_id::kHeads, heatR, barsY, W, rowY);
    if (m_state.view.lab != Lab::None) return put(labName(m_state.view.lab), left, rowY, W, H);  // the lab's panel id
    if (wholeModel) {
        tabGroup(offered(joined({}, layersGroup, {panel_id::kSwap, panel_id::kStages, panel_id::kPositional})),
                 PanelRect{ImVec2(left, rowY), ImVec2(W, H)}, false);
        return;
    }
    const float swapR = left + mainW * 0.40f, stagesR = left + mainW * 0.76f;
    put(panel_id::kSwap, left, rowY, swapR, H);
    put(panel_id::kStages, swapR, rowY, stagesR, H);
    put(panel_id::kPositional, stagesR, rowY, W, H);
}

namespace {

// The width of a tab: its name on a button.
float tabWidth(std::string_view id) { return ImGui::CalcTextSize(findPanel(id)->tab).x + ImGui::GetStyle().FramePadding.x * 2.0f; }

}  // namespace

int App::tabRows(const std::vector<std::string_view>& panels, float width) {
    const ImGuiStyle& style = ImGui::GetStyle();
    const float room = width - style.WindowPadding.x * 2.0f;
    int rows = 1;
    float x = 0;
    for (const std::string_view id : panels) {
        const float w = tabWidth(id);
        if (x > 0 && x + w > room) ++rows, x = 0;
        x += w + style.ItemSpacing.x;
    }
    return rows;
}

// A strip of tabs across the top of `rect`, one per panel, in as many rows as their whole names
// need; the chosen panel fills the rest of `rect` unless `stripOnly`. Returns the strip's height.
float App::tabGroup(const std::vector<std::string_view>& panels, PanelRect rect, bool stripOnly) {
    // Several groups may share a layout: each keeps its own choice, and a panel revealed (View
    // menu, --panel) is chosen in the group that holds it (the reveal is cleared after the layout).
    std::string& tab = m_tabs[std::string(panels.front())];
    if (std::find(panels.begin(), panels.end(), m_reveal) != panels.end()) tab = m_reveal;
    if (std::find(panels.begin(), panels.end(), tab) == panels.end()) tab = std::string(panels.front());
    const ImGuiStyle& style = ImGui::GetStyle();
    const float width = rect.max.x - rect.min.x, room = width - style.WindowPadding.x * 2.0f;
    const int rows = tabRows(panels, width);
    const float height = static_cast<float>(rows) * ImGui::GetFrameHeight() + static_cast<float>(rows - 1) * style.ItemSpacing.y +
                         style.WindowPadding.y * 2.0f;
    ImGui::SetNextWindowPos(rect.min, ImGuiCond_Always);
    ImGui::SetNextWindowSize(ImVec2(width, height), ImGuiCond_Always);
    ImGui::Begin(("##panel tabs " + std::string(panels.front())).c_str(), nullptr,
                 ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoNav);
    float x = 0;
    for (const std::string_view id : panels) {
        const float w = tabWidth(id);
        if (x > 0 && x + w <= room) ImGui::SameLine();
        if (x > 0 && x + w > room) x = 0;
        x += w + style.ItemSpacing.x;
        const bool chosen = tab == id;
        ImGui::PushStyleColor(ImGuiCol_Button, ImGui::GetStyleColorVec4(chosen ? ImGuiCol_TabActive : ImGuiCol_Tab));
        ImGui::PushStyleColor(ImGuiCol_ButtonHovered, ImGui::GetStyleColorVec4(ImGuiCol_TabHovered));
        if (ImGui::Button(findPanel(id)->tab)) tab = std::string(id);
        ImGui::PopStyleColor(2);
    }
    ImGui::End();
    m_tabbed.push_back(tab);
    m_onStrips.insert(m_onStrips.end(), panels.begin(), panels.end());
    if (!stripOnly) m_rects[tab] = {ImVec2(rect.min.x, rect.min.y + height), rect.max};
    return height;
}

void App::revealPanel(std::string_view id) { m_reveal = std::string(id); }

bool App::offers(std::string_view id) const {
    return m_rects.count(std::string(id)) > 0 || std::find(m_onStrips.begin(), m_onStrips.end(), id) != m_onStrips.end();
}

void App::frame() {
    m_heatmaps.beginFrame();
    syncDrafts();
    menuBar();
    layout();
    m_reveal.clear();
    PanelContext ctx{m_state,
                     m_actions,
                     m_heatmaps,
                     m_textures,
                     m_drafts,
                     m_fontSet.fonts(),
                     m_requests,
                     m_effectiveScale,
                     ImGuiWindowFlags_NoCollapse | ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoSavedSettings};
    const bool presenter = m_state.view.presenter;
    const int flags = ctx.windowFlags;
    for (const auto& panel : m_panels) {
        const auto it = m_rects.find(std::string(panel->id()));
        if (it == m_rects.end()) continue;
        // A panel on a tab is named by its tab.
        const bool tabbed = std::find(m_tabbed.begin(), m_tabbed.end(), panel->id()) != m_tabbed.end();
        ctx.windowFlags = tabbed ? flags | ImGuiWindowFlags_NoTitleBar : flags;
        ImGui::SetNextWindowPos(it->second.min, ImGuiCond_Always);
        ImGui::SetNextWindowSize(ImVec2(it->second.max.x - it->second.min.x, it->second.max.y - it->second.min.y), ImGuiCond_Always);
        // Presenter mode: every panel in the large font, read from the back of the room.
        const bool large = presenter && m_fontSet.fonts().large;
        if (large) ImGui::PushFont(m_fontSet.fonts().large);
        panel->draw(ctx);
        if (large) ImGui::PopFont();
    }
    dialogs();
    openingStatus();
    if (!m_toast.empty() && ImGui::GetTime() < m_toastUntil) {
        const ImVec2 size = ImGui::GetIO().DisplaySize;
        ImGui::SetNextWindowPos(ImVec2(size.x - 12, size.y - 12), ImGuiCond_Always, ImVec2(1, 1));
        ImGui::SetNextWindowBgAlpha(0.9f);
        ImGui::Begin("##toast", nullptr,
                     ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_AlwaysAutoResize | ImGuiWindowFlags_NoSavedSettings |
                         ImGuiWindowFlags_NoFocusOnAppearing | ImGuiWindowFlags_NoNav);
        // A message may quote a user's path or value: a few lines of it at most, 36 ems wide.
        widgets::wrappedTextColored(m_toastError ? ImVec4(1.0f, 0.45f, 0.4f, 1.0f) : ImGui::GetStyleColorVec4(ImGuiCol_Text), m_toast, 400,
                                    ImGui::GetFontSize() * 36.0f);
        ImGui::End();
    }
    keys();
    applyActions();
}

// While a model opens on its worker thread: its name, how far it is, and a way to stop it.
void App::openingStatus() {
    const ModelOpening& opening = *m_state.opening;
    if (!opening.active()) return;
    const float em = ImGui::GetFontSize();
    ImGui::SetNextWindowPos(ImVec2(ImGui::GetMainViewport()->GetCenter().x, ImGui::GetFrameHeight() + em * 0.5f), ImGuiCond_Always,
                            ImVec2(0.5f, 0.0f));
    ImGui::SetNextWindowBgAlpha(0.95f);
    ImGui::Begin("##opening", nullptr,
                 ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_AlwaysAutoResize | ImGuiWindowFlags_NoSavedSettings |
                     ImGuiWindowFlags_NoFocusOnAppearing | ImGuiWindowFlags_NoNav);
    const std::string name = widgets::fitLabel(opening.name(), em * 16.0f, widgets::kTitleGlyphs);
    ImGui::Text("Opening %s: reading and packing its weights", name.c_str());
    ImGui::ProgressBar(static_cast<float>(opening.fraction()), ImVec2(em * 14.0f, 0));
    ImGui::SameLine();
    if (ImGui::Button("Cancel")) m_actions.emit(action::CancelOpening{});
    ImGui::End();
}

void App::applyActions() {
    if (adoptOpenedModel(m_state)) {
        if (!m_state.error.empty()) notify(m_state.error, true);
        else notify("Opened " + sourceName(m_state, m_state.scenario.name));
        m_computeFailed = false;
    }
    std::vector<Action> actions = m_actions.take();
    if (!actions.empty()) m_computeFailed = false;
    for (const Action& a : actions) apply(m_state, a);
    // A generation under way: one token a frame, through the action layer (the pass grows by a row).
    if (m_state.generation.left > 0 && !stepGeneration(m_state) && !m_state.error.empty()) notify(m_state.error, true);
    if (m_computeFailed) return;  // reported once; the next change tries again
    // The visible head now (what the user waits for); the other heads follow, one a frame.
    try {
        recomputeStep(m_state, shownHead(m_state), 1, m_state.view.heatmapPooling);
    } catch (const core::InputError& e) {
        notify(e.message(), true);
        m_computeFailed = true;
    } catch (const std::bad_alloc&) {
        notify("out of memory while computing the heads; make the model smaller (fewer tokens or heads)", true);
        m_computeFailed = true;
    }
    // Attention rollout, when the heatmap shows it: once per pass, layer and rule.
    if (m_state.view.rollout) refreshRollout(m_state);
    // The other sentence's pass, when one is compared: once per pass and text.
    if (!m_state.view.compareText.empty()) refreshCompare(m_state);
    // What the views drew out of date (the summary of every head, the query–key map, the shift
    // check), each by its row's refresh: made once for what it depends on, once it is ready.
    m_viewsSettled = m_requests.stale.empty();
    for (const std::string& id : std::exchange(m_requests.stale, {})) {
        const ViewInfo* view = findView(id);
        if (!view || !view->refresh) continue;
        try {
            view->refresh(m_state);
        } catch (const std::bad_alloc&) {
            notify("out of memory while bringing " + std::string(view->title) + " up to date", true);
        }
    }
}

void App::keys() {
    ImGuiIO& io = ImGui::GetIO();
    if (io.WantTextInput || ImGui::IsAnyItemActive()) return;
    const bool ctrl = io.KeyCtrl;
    const auto pressed = [](int key) { return ImGui::IsKeyPressed(key, true); };
    if (ctrl && pressed(keys::kS)) m_captures.push_back({defaultExportPath(".png"), "", 1.0f});
    if (ctrl && pressed(keys::kO)) m_requests.openDialog = true;
    if (ctrl && (pressed(keys::kEqual) || pressed(keys::kKeypadAdd))) m_actions.emit(action::SetUiScale{m_state.view.uiScale * 1.1f});
    if (ctrl && (pressed(keys::kMinus) || pressed(keys::kKeypadSubtract))) m_actions.emit(action::SetUiScale{m_state.view.uiScale / 1.1f});
    if (ctrl && pressed(keys::kZero)) m_actions.emit(action::SetUiScale{1.0f});
    if (ctrl) return;
    if (pressed(keys::kSpace)) m_actions.emit(action::ToggleCausal{});
    if (pressed(keys::kLeftBracket)) m_actions.emit(action::StepHead{-1});
    if (pressed(keys::kRightBracket)) m_actions.emit(action::StepHead{+1});
    if (pressed(keys::kComma)) m_actions.emit(action::StepLayer{-1});
    if (pressed(keys::kPeriod)) m_actions.emit(action::StepLayer{+1});
    if (pressed(keys::kUp)) m_actions.emit(action::StepQuery{-1});
    if (pressed(keys::kDown)) m_actions.emit(action::StepQuery{+1});
    if (pressed(keys::kLeft)) m_actions.emit(action::StepStage{-1});
    if (pressed(keys::kRight)) m_actions.emit(action::StepStage{+1});
    if (pressed(keys::kF5)) m_actions.emit(action::SetPresenter{!m_state.view.presenter});
    if (pressed(keys::kEscape) && m_state.view.presenter) m_actions.emit(action::SetPresenter{false});
    if (pressed(keys::kF11)) m_requests.toggleFullscreen = true;
    if (m_state.lesson && pressed(keys::kPageDown)) m_actions.emit(action::StepLesson{+1});
    if (m_state.lesson && pressed(keys::kPageUp)) m_actions.emit(action::StepLesson{-1});
}

void App::menuBar() {
    if (!ImGui::BeginMainMenuBar()) return;
    if (ImGui::BeginMenu("File")) {
        if (ImGui::MenuItem("Open scenario…", "Ctrl+O")) m_requests.openDialog = true;
        if (ImGui::MenuItem("Open model folder…")) m_requests.modelDialog = true;
        if (ImGui::MenuItem("Save scenario…")) m_requests.saveDialog = true;
        if (ImGui::MenuItem("Export image, CSV or .npy…")) m_requests.exportDialog = true;
        if (ImGui::MenuItem("Screenshot now", "Ctrl+S")) m_captures.push_back({defaultExportPath(".png"), "", 1.0f});
        ImGui::Separator();
        if (ImGui::MenuItem("Quit")) m_quit = true;
        ImGui::EndMenu();
    }
    if (ImGui::BeginMenu("Presets")) {
        for (const core::Preset& p : core::presets())
            if (ImGui::MenuItem(p.scenario.name.c_str(), nullptr, p.id == m_state.presetId))
                m_actions.emit(action::LoadScenario{p.scenario, p.id, ""});
        ImGui::EndMenu();
    }
    if (ImGui::BeginMenu("Lessons")) {
        for (const core::Lesson& lesson : core::lessons())
            if (ImGui::MenuItem(lesson.title.c_str(), nullptr, m_state.lesson && m_state.lesson->lesson.id == lesson.id))
                m_actions.emit(action::OpenLesson{lesson});
        if (ImGui::MenuItem("Close lesson", nullptr, false, m_state.lesson.has_value())) m_actions.emit(action::CloseLesson{});
        ImGui::EndMenu();
    }
    if (ImGui::BeginMenu("View")) {
        const Theme theme = m_state.view.theme;
        if (ImGui::MenuItem("Dark theme", nullptr, theme == Theme::Dark)) m_actions.emit(action::SetTheme{Theme::Dark});
        if (ImGui::MenuItem("Light theme", nullptr, theme == Theme::Light)) m_actions.emit(action::SetTheme{Theme::Light});
        if (ImGui::MenuItem("High contrast", nullptr, theme == Theme::HighContrast)) m_actions.emit(action::SetTheme{Theme::HighContrast});
        ImGui::Separator();
        if (ImGui::MenuItem("Presenter mode", "F5", m_state.view.presenter)) m_actions.emit(action::SetPresenter{!m_state.view.presenter});
        for (const LabInfo& l : kLabs)
            if (ImGui::MenuItem(("Lab: " + std::string(l.title)).c_str(), nullptr, m_state.view.lab == l.lab))
                m_actions.emit(action::SetLab{m_state.view.lab == l.lab ? Lab::None : l.lab});
        ImGui::Separator();
        for (const Place place : {Place::Layers, Place::Weights})
            for (const std::string_view id : viewsAt(place)) {
                const ViewInfo& view = *findView(id);
                const bool fed = feedsView(m_state, id);
                if (ImGui::MenuItem(view.title, nullptr, false, fed)) revealPanel(id);
                if (!fed && ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) ImGui::SetTooltip("%s", needText(view.needs));
            }
        ImGui::Separator();
        if (ImGui::MenuItem("Fullscreen", "F11")) m_requests.toggleFullscreen = true;
        ImGui::Separator();
        if (ImGui::MenuItem("Larger", "Ctrl+=")) m_actions.emit(action::SetUiScale{m_state.view.uiScale * 1.1f});
        if (ImGui::MenuItem("Smaller", "Ctrl+-")) m_actions.emit(action::SetUiScale{m_state.view.uiScale / 1.1f});
        if (ImGui::MenuItem("Actual size", "Ctrl+0")) m_actions.emit(action::SetUiScale{1.0f});
        float uiScale = m_state.view.uiScale;
        ImGui::SetNextItemWidth(ImGui::GetFontSize() * 8.0f);
        if (ImGui::SliderFloat("UI scale", &uiScale, kMinUiScale, kMaxUiScale, "%.2fx", ImGuiSliderFlags_AlwaysClamp))
            m_actions.emit(action::SetUiScale{uiScale});
        ImGui::EndMenu();
    }
    if (ImGui::BeginMenu("Help")) {
        ImGui::TextUnformatted(
            "Space        causal mask on/off\n[ and ]      previous / next head\n↑ and ↓      previous / next query\n← and →      previous / next stage\n"
            "Ctrl+S       screenshot\nCtrl+O       open a scenario\nCtrl+= / − / 0   UI scale\nF5           presenter mode\nF11          fullscreen\n"
            "Heatmap: click a row to select it, wheel to zoom, right-drag to pan.");
        ImGui::Separator();
        ImGui::TextUnformatted("About: attnviz " ATTNVIZ_VERSION ", see self-attention work (man attnviz)");
        ImGui::EndMenu();
    }
    const std::string& name = m_state.scenario.name.empty() ? std::string("attnviz") : m_state.scenario.name;
    const std::string shown = widgets::fitLabel(name, ImGui::GetContentRegionAvail().x - ImGui::GetFontSize(), widgets::kTitleGlyphs);
    ImGui::TextDisabled("  %s", shown.c_str());
    if (shown != name) widgets::hoverTooltip(name);
    ImGui::EndMainMenuBar();
}

std::string windowTitle(const AppState& state) {
    return "attnviz — " + (state.scenario.name.empty() ? std::string("self-attention")
                                                       : widgets::clipText(state.scenario.name, widgets::kTitleGlyphs, false).text);
}

bool App::beginDialog(const char* title) {
    const ImGuiViewport* viewport = ImGui::GetMainViewport();
    const float margin = ImGui::GetFontSize();
    const ImVec2 most(std::max(viewport->WorkSize.x - 2.0f * margin, 1.0f), std::max(viewport->WorkSize.y - 2.0f * margin, 1.0f));
    ImGui::SetNextWindowPos(viewport->GetWorkCenter(), ImGuiCond_Always, ImVec2(0.5f, 0.5f));
    ImGui::SetNextWindowSize(ImVec2(std::min(560.0f * m_effectiveScale, most.x), 0));
    ImGui::SetNextWindowSizeConstraints(ImVec2(0, 0), most);
    if (!ImGui::BeginPopupModal(title, nullptr, ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoMove)) return false;
    if (ImGui::IsKeyPressed(keys::kEscape, false)) ImGui::CloseCurrentPopup();
    return true;
}

void App::pathDialog(const char* title, const char* prompt, const char* button, std::string& path, const std::function<void()>& accept) {
    if (!beginDialog(title)) return;
    ImGui::TextUnformatted(prompt);
    ImGui::SetNextItemWidth(-1);
    const bool enter = ImGui::InputText("##path", &path, ImGuiInputTextFlags_EnterReturnsTrue);
    if (ImGui::Button(button) || enter) {
        try {
            accept();
            ImGui::CloseCurrentPopup();
        } catch (const core::InputError& e) {
            notify(e.message(), true);  // the dialog stays open with the path to correct
        }
    }
    ImGui::SameLine();
    if (ImGui::Button("Cancel")) ImGui::CloseCurrentPopup();
    ImGui::EndPopup();
}

void App::dialogs() {
    if (std::exchange(m_requests.openDialog, false)) ImGui::OpenPopup("Open scenario");
    if (std::exchange(m_requests.modelDialog, false)) ImGui::OpenPopup("Open model");
    if (std::exchange(m_requests.saveDialog, false)) {
        if (m_drafts.savePath.empty()) m_drafts.savePath = m_state.sourcePath.empty() ? "scenario.json" : m_state.sourcePath;
        ImGui::OpenPopup("Save scenario");
    }
    if (std::exchange(m_requests.exportDialog, false)) {
        m_drafts.exportPath = defaultExportPath(".png");
        ImGui::OpenPopup("Export");
    }
    pathDialog("Open scenario", "Scenario file (JSON):", "Open", m_drafts.openPath, [&] {
        m_actions.emit(action::LoadScenario{core::loadScenarioFile(m_drafts.openPath), "", m_drafts.openPath, true});
    });
    pathDialog(
        "Open model",
        "A Hugging Face model folder: GPT-2, Llama, Mistral, Qwen2, Qwen3, BERT, RoBERTa, DistilBERT or ModernBERT (config.json, model.safetensors, the tokenizer):",
        "Open", m_drafts.modelPath, [&] {
            // The files are looked for now (a wrong folder keeps the dialog open); they
            // are read on a worker thread. The sentence on screen stays: the model reads it.
            core::checkModelFolder(core::modelFolder(m_drafts.modelPath));
            core::Scenario model;
            model.model = core::modelFolder(m_drafts.modelPath);
            model.name = core::modelFolderName(m_drafts.modelPath);
            model.sentence = m_state.scenario.sentence.value_or(core::kDefaultSentence);
            model.causal = true;
            m_actions.emit(action::LoadScenario{model, "", "", true});
        });
    pathDialog("Save scenario", "Save the current scenario (swaps, temperature and mask included) to:", "Save", m_drafts.savePath, [&] {
        core::writeFileAtomic(m_drafts.savePath, core::prettyJson(core::scenarioToJson(m_state.scenario)));
        notify("Saved " + m_drafts.savePath);
    });
    if (beginDialog("Export")) {
        ImGui::TextUnformatted("Path:");
        ImGui::SetNextItemWidth(-1);
        ImGui::InputText("##export", &m_drafts.exportPath);
        std::string panels = std::string("whole window") + '\0';
        for (const auto& p : m_panels) panels += std::string(p->title()) + '\0';
        ImGui::SetNextItemWidth(ImGui::GetContentRegionAvail().x * 0.5f);
        ImGui::Combo("what", &m_exportPanel, panels.c_str());
        ImGui::RadioButton("1x", &m_exportScale, 1);
        ImGui::SameLine();
        ImGui::RadioButton("2x resolution", &m_exportScale, 2);
        if (ImGui::Button("Save PNG")) {
            const std::string panel =
                m_exportPanel > 0 ? std::string(m_panels[static_cast<std::size_t>(m_exportPanel - 1)]->id()) : std::string();
            if (!panel.empty()) revealPanel(panel);
            m_captures.push_back({m_drafts.exportPath, panel, static_cast<float>(m_exportScale)});
            ImGui::CloseCurrentPopup();
        }
        ImGui::SameLine();
        const int head = std::max(0, m_state.view.selectedHead);
        if (ImGui::Button("Save weights CSV")) {
            try {
                std::filesystem::path p(m_drafts.exportPath);
                p.replace_extension(".csv");
                writeExport(m_state, p.string(), core::weightsCsv(m_state.model, visibleWeights(m_state)));
                notify("Saved " + p.string());
                ImGui::CloseCurrentPopup();
            } catch (const core::InputError& e) {
                notify(e.message(), true);
            }
        }
        ImGui::SameLine();
        if (ImGui::Button("Save weights .npy")) {
            try {
                std::filesystem::path p(m_drafts.exportPath);
                p.replace_extension(".npy");
                writeExport(m_state, p.string(), core::encodeNpy(core::matrixTensor(visibleWeights(m_state))));
                notify("Saved " + p.string() + " (head " + std::to_string(head + 1) + ")");
                ImGui::CloseCurrentPopup();
            } catch (const core::InputError& e) {
                notify(e.message(), true);
            }
        }
        // The chosen view's figure (PNG, or SVG when the path says so), as its --export-… flag makes it.
        const ViewInfo* view = m_exportPanel > 0 ? findView(m_panels[static_cast<std::size_t>(m_exportPanel - 1)]->id()) : nullptr;
        ImGui::BeginDisabled(!view || !view->figure);
        if (ImGui::Button("Save figure")) {
            try {
                std::filesystem::path p(m_drafts.exportPath);
                if (p.extension() != ".svg") p.replace_extension(".png");
                saveFigure(view->id, p.string());
                notify("Saved " + p.string());
                ImGui::CloseCurrentPopup();
            } catch (const core::InputError& e) {
                notify(e.message(), true);
            }
        }
        ImGui::EndDisabled();
        if (!view || !view->figure) {
            std::string views;
            for (const ViewInfo& v : viewTable())
                if (v.figure) views += std::string(views.empty() ? "" : ", ") + v.tab;
            tooltip(("Choose a view with a figure of its own: " + views).c_str());
        }
        ImGui::SameLine();
        if (ImGui::Button("Cancel")) ImGui::CloseCurrentPopup();
        ImGui::EndPopup();
    }
}

void App::saveFigure(std::string_view id, const std::string& path) {
    const ViewInfo* view = findView(id);
    if (!view || !view->figure) throw core::InputError(path, "the view " + core::quoteValue(std::string(id)) + " has no figure");
    writeExport(m_state, path, view->figure.write(m_state, path, {.where = view->title}));
}

}  // namespace attnviz::app
