#include "app/panels/controls_panel.hpp"

#include "app/fonts/font_atlas.hpp"
#include "app/state/rollout_view.hpp"
#include "app/state/source.hpp"
#include "app/widgets/text.hpp"
#include "core/base/error.hpp"
#include "core/base/format.hpp"
#include "core/scenario/presets.hpp"
#include "core/text/byte_bpe.hpp"

#include <imgui_stdlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

namespace attnviz::app {

float temperatureToSlider(float tau) {
    const float lo = std::log10(kMinTemperature), hi = std::log10(kMaxTemperature);
    return std::clamp((std::log10(std::clamp(tau, kMinTemperature, kMaxTemperature)) - lo) / (hi - lo), 0.0f, 1.0f);
}

float sliderToTemperature(float position) {
    if (std::abs(position - 0.5f) < 0.012f) return 1.0f;  // the detent at τ = 1
    const float lo = std::log10(kMinTemperature), hi = std::log10(kMaxTemperature);
    return std::pow(10.0f, lo + std::clamp(position, 0.0f, 1.0f) * (hi - lo));
}

namespace {

bool intField(const char* label, int value, int lo, int hi, int& out) {
    int v = value;
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 7.0f);
    if (ImGui::InputInt(label, &v, 1, 4) && v != value) {
        out = std::clamp(v, lo, hi);
        return true;
    }
    return false;
}

constexpr std::size_t kDescriptionGlyphs = 400;  // a description or an error: the shipped ones whole
// ImGui's one-line field draws only the part inside its frame, but reserves 4 vertices a byte
// every frame; a longer sentence is shown cut instead, and can be cleared to type a new one.
constexpr std::size_t kEditableBytes = 64 * 1024;

// The description, scrolling in at most a third of the panel: the controls below stay in view;
// `compact`, cut to the room left above the `below` section headers that follow (the whole in its
// tooltip).
void description(const std::string& text, bool compact, int below) {
    const std::string shown = widgets::tooltipBody(text, kDescriptionGlyphs);
    if (compact) {
        const float room = ImGui::GetContentRegionAvail().y - static_cast<float>(below) * ImGui::GetFrameHeightWithSpacing();
        const std::string fitted = widgets::fitWrapped(shown, ImGui::GetContentRegionAvail().x, room);
        const ImVec4 disabled = ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled);
        widgets::shownWrapped(fitted, &disabled);
        if (fitted != shown) widgets::hoverTooltip(text, kDescriptionGlyphs);
        return;
    }
    const float most = ImGui::GetWindowHeight() * 0.33f;
    const bool scrolls = ImGui::CalcTextSize(shown.c_str(), nullptr, false, ImGui::GetContentRegionAvail().x).y > most;
    if (scrolls) ImGui::BeginChild("##description", ImVec2(0.0f, most));
    const ImVec4 disabled = ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled);
    widgets::shownWrapped(shown, &disabled);
    if (scrolls) ImGui::EndChild();
}

void sentenceField(PanelContext& ctx) {
    std::string& draft = ctx.drafts.sentence;
    // Edited with its emoji in the atlas's slots: ImGui's 16-bit characters would lose them.
    const std::optional<std::string> slotted = draft.size() <= kEditableBytes ? slottedText(draft) : std::nullopt;
    if (slotted) {
        ImGui::SetNextItemWidth(-1);
        std::string field = *slotted;
        if (ImGui::InputText("##sentence", &field)) {
            draft = unslottedText(field, *slotted);
            ctx.actions.emit(action::SetSentence{draft});
        }
        tooltip("Type anything: attention is recomputed as you type.");
        return;
    }
    const float clearW = ImGui::CalcTextSize("clear").x + ImGui::GetStyle().FramePadding.x * 2.0f;
    ImGui::TextDisabled(
        "%s", widgets::fitLabel(draft, ImGui::GetContentRegionAvail().x - clearW - ImGui::GetStyle().ItemSpacing.x, widgets::kTitleGlyphs)
                  .c_str());
    widgets::hoverTooltip(draft);
    ImGui::SameLine();
    if (ImGui::SmallButton("clear")) draft.clear();  // the model keeps its sentence until one is typed
    tooltip(
        "Too long (or holding too many different emoji) to edit here: clear the field to type a new sentence, or open a scenario file.");
}

// A model: what it is, the sentence its tokenizer reads, and what it predicts next.
// An encoder's second sentence: typed, the pass reads the pair ([CLS] A [SEP] B [SEP]); emptied, A alone.
void pairField(PanelContext& ctx) {
    std::string& draft = ctx.drafts.pair;
    const std::optional<std::string> slotted = draft.size() <= kEditableBytes ? slottedText(draft) : std::nullopt;
    if (!slotted) {
        ImGui::TextDisabled("%s", widgets::fitLabel(draft, ImGui::GetContentRegionAvail().x, widgets::kTitleGlyphs).c_str());
        widgets::hoverTooltip(draft);
        return;
    }
    ImGui::SetNextItemWidth(-1);
    std::string field = *slotted;
    if (ImGui::InputTextWithHint("##pair", "sentence B (optional)", &field)) {
        draft = unslottedText(field, *slotted);
        ctx.actions.emit(action::SetPair{draft});
    }
    tooltip(
        "A second sentence: the model reads the pair, [CLS] A [SEP] B [SEP] (token types 0 and 1). The maps mark where B "
        "starts, and the heatmap's pair filter shows A → B, B → A, …");
}

void modelSection(PanelContext& ctx, const core::decoder::Checkpoint& checkpoint) {
    const AppState& s = ctx.state;
    const auto& c = checkpoint.config();
    // Wrapped at the panel's edge, never cut: the folder's name is the user's and any length.
    const std::string heads = std::to_string(c.nLayer) + " layers × " + std::to_string(c.nHead) + " heads" +
                              (c.nKvHead != c.nHead ? " reading " + std::to_string(c.nKvHead) + " kv heads" : std::string());
    widgets::wrappedText("Model " + widgets::clipText(checkpoint.name(), widgets::kLabelGlyphs, false).text + " (" + c.family +
                         "): " + heads + ", d = " + std::to_string(c.nEmbd));
    tooltip(checkpoint.folder().c_str());
    ImGui::TextUnformatted(c.causal ? "Sentence" : "Sentence A, and B for a pair");
    sentenceField(ctx);
    if (!c.causal) pairField(ctx);
    widgets::wrappedTextColored(ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled),
                                "T = " + std::to_string(s.model.tq()) + " tokens (" +
                                    (c.family == "gpt2"                   ? "GPT-2 byte-level BPE"
                                     : checkpoint.tokenizer().wordPiece() ? "WordPiece"
                                                                          : "the model's tokenizer.json") +
                                    ", at most " + std::to_string(c.longestInput()) + ")");
}

// Attention computed elsewhere: the file, its sizes and tokens, the mask found in it. Nothing to
// edit: the maps are fixed (no τ, no scaling, no mask to change).
void importedSection(PanelContext& ctx, const core::ImportedAttention& a) {
    const AppState& s = ctx.state;
    widgets::wrappedText(a.describe(), kDescriptionGlyphs);
    tooltip(core::clipPlace(a.path(), 400).c_str());
    const ImVec4 dim = ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled);
    if (a.positionsOnly()) {
        widgets::wrappedTextColored(dim, "tokens: the positions 0 … " + std::to_string(a.keys() - 1) + " (no tokens.txt beside the file)");
    } else {
        widgets::wrappedTextColored(
            dim, "tokens: " + std::to_string(a.keys()) + " from " +
                     widgets::fitLabel(std::filesystem::path(a.tokensPath()).filename().string(), ImGui::GetFontSize() * 12.0f));
        tooltip(core::clipPlace(a.tokensPath(), 400).c_str());
    }
    if (a.queriesAndKeys()) {
        const std::string window = s.settings.window > 0 ? ", a window of " + std::to_string(s.settings.window) + " keys" : std::string();
        widgets::wrappedTextColored(dim,
                                    "layer " + std::to_string(s.scenario.layer + 1) +
                                        (s.settings.causal ? ": causal" + window + " (the file's)" : ": reads both ways (the file's)"));
        widgets::wrappedTextColored(dim,
                                    "Each map is softmax(scaling · q kᵀ) of the file's queries and keys: the temperature, "
                                    "scaling and mask are the file's.");
        return;
    }
    widgets::wrappedTextColored(dim,
                                "layer " + std::to_string(s.scenario.layer + 1) +
                                    (s.settings.causal ? ": causal (detected: every map is 0 above the diagonal)" : ": reads both ways"));
    widgets::wrappedTextColored(dim, "The maps were computed elsewhere: the temperature, scaling and mask are fixed.");
}

void generation(PanelContext& ctx);

// The next token: softmax(logits / temperature), the ten most likely.
// An encoder's: the token its masked-LM head puts at the first [MASK], or why there is none.
void nextTokens(PanelContext& ctx, const core::LoadedModel& pass) {
    const AppState& s = ctx.state;
    const core::decoder::Checkpoint& model = *pass.checkpoint;
    const bool encoder = !model.config().causal;
    if (encoder && pass.run->predicted < 0) {
        const ImVec4 dim = ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled);
        if (!model.predicts())
            widgets::wrappedTextColored(dim, "This checkpoint has no masked-LM head (cls.predictions): it predicts no token.");
        else if (const std::optional<int> mask = model.tokenizer().maskId())
            widgets::wrappedTextColored(dim, "No " + core::decoder::tokenLabel(model, *mask) +
                                                 " in the sentence: write it where a word should be, and the model fills it in.");
        else widgets::wrappedTextColored(dim, "The tokenizer has no mask token: this model's head has nothing to fill in.");
        return;
    }
    if (encoder)
        ImGui::Text("%s at token %lld  (temperature %.3g)",
                    core::decoder::tokenLabel(model, pass.run->ids[static_cast<std::size_t>(pass.run->predicted)]).c_str(),
                    static_cast<long long>(pass.run->predicted), s.view.nextTemperature);
    else ImGui::Text("Next token  (temperature %.3g)", s.view.nextTemperature);
    float position = temperatureToSlider(s.view.nextTemperature);
    ImGui::SetNextItemWidth(-1);
    if (ImGui::SliderFloat("##next-tau", &position, 0.0f, 1.0f, "", ImGuiSliderFlags_NoRoundToFormat))
        ctx.actions.emit(action::SetNextTemperature{sliderToTemperature(position)});
    tooltip("Divides the logits of the next token before their softmax, as sampling does. The attention's own temperature is below.");
    const float barW = ImGui::GetContentRegionAvail().x * 0.45f, rowH = ImGui::GetTextLineHeight();
    for (std::size_t i = 0; i < pass.next.size() && i < s.nextProbs.size(); ++i) {
        const core::decoder::NextToken& n = pass.next[i];
        const float prob = s.nextProbs[i];
        const std::string& label = pass.nextLabels[i];
        const ImVec2 p = ImGui::GetCursorScreenPos();
        ImDrawList* draw = ImGui::GetWindowDrawList();
        draw->AddRectFilled(p, ImVec2(p.x + barW, p.y + rowH), ImGui::GetColorU32(ImGuiCol_FrameBg));
        draw->AddRectFilled(p, ImVec2(p.x + barW * prob, p.y + rowH), ImGui::GetColorU32(ImGuiCol_PlotHistogram));
        ImGui::Dummy(ImVec2(barW, rowH));
        ImGui::SameLine();
        ImGui::Text(
            "%5.1f%%  %s", 100.0 * prob,
            widgets::fitLabel(label, ImGui::GetContentRegionAvail().x - ImGui::GetFontSize() * 4.0f, widgets::kTitleGlyphs).c_str());
        tooltip(("token id " + std::to_string(n.id) + ", logit " + core::formatFixed(n.logit, 3)).c_str());
    }
    if (!encoder) generation(ctx);
}

// Generate: tokens written after the text one a frame (greedy, or sampled at the temperature
// above), Stop, and taking them back.
void generation(PanelContext& ctx) {
    const AppState& s = ctx.state;
    const std::vector<int>& made = s.scenario.generated;
    if (s.generation.left > 0) {
        ImGui::Text("writing… %d to go", s.generation.left);
        ImGui::SameLine();
        if (ImGui::Button("Stop")) ctx.actions.emit(action::StopGenerating{});
    } else {
        for (const int count : {1, 16}) {
            const std::string label = "Generate " + std::to_string(count) + "##gen" + std::to_string(count);
            if (ImGui::Button(label.c_str())) {
                core::decoder::Sampling sampling;
                sampling.greedy = !s.view.generateSampled;
                sampling.temperature = s.view.nextTemperature;
                sampling.topK = s.view.generateTopK;
                sampling.seed = s.view.generateSeed;
                ctx.actions.emit(action::StartGenerating{count, sampling});
            }
            tooltip(
                "Writes the next token (or 16) after the text, each chosen from the bars above and read through the "
                "incremental pass: every view follows, one token a frame.");
            ImGui::SameLine();
        }
        bool sampled = s.view.generateSampled;
        if (ImGui::Checkbox("sample", &sampled))
            ctx.actions.emit(action::SetGenerateSampled{sampled, s.view.generateTopK, s.view.generateSeed});
        tooltip("Sample each token from softmax(logits / the temperature above) instead of taking the most likely.");
        if (sampled) {
            // top-k and the seed: the same seed writes the same tokens (--top-k, --sample-seed)
            const float em = ImGui::GetFontSize();
            int topK = s.view.generateTopK, seed = static_cast<int>(std::min<std::uint64_t>(s.view.generateSeed, 1u << 30));
            ImGui::SetNextItemWidth(em * 5.0f);
            const bool k = ImGui::InputInt("top-k", &topK, 0, 0);
            tooltip("Sample among the k most likely tokens (0: every token).");
            ImGui::SameLine();
            ImGui::SetNextItemWidth(em * 5.0f);
            const bool sd = ImGui::InputInt("seed", &seed, 0, 0);
            tooltip("The draws' seed: the same seed, temperature and top-k write the same tokens.");
            if ((k || sd) && topK >= 0 && seed >= 0)
                ctx.actions.emit(action::SetGenerateSampled{true, topK, static_cast<std::uint64_t>(seed)});
        }
    }
    if (!made.empty()) {
        ImGui::TextDisabled("%d generated", static_cast<int>(made.size()));
        ImGui::SameLine();
        if (ImGui::SmallButton("undo")) ctx.actions.emit(action::SetGenerated{std::vector<int>(made.begin(), made.end() - 1)});
        tooltip("Takes the last generated token back.");
        ImGui::SameLine();
        if (ImGui::SmallButton("clear")) ctx.actions.emit(action::SetGenerated{});
        tooltip("Takes every generated token back: the text as typed.");
        // Back to any step at once: the slider keeps the first k (applied when it is let go).
        if (made.size() > 1 && s.generation.left == 0) {
            const int count = static_cast<int>(made.size());
            int* keep = ImGui::GetStateStorage()->GetIntRef(ImGui::GetID("##keep-draft"), count);  // while dragged
            *keep = std::clamp(*keep, 0, count);
            ImGui::SetNextItemWidth(ImGui::GetContentRegionAvail().x - ImGui::CalcTextSize("keep").x -
                                    ImGui::GetStyle().ItemInnerSpacing.x);
            ImGui::SliderInt("keep", keep, 0, count, "%d tokens");
            if (ImGui::IsItemDeactivatedAfterEdit() && *keep < count)
                ctx.actions.emit(action::SetGenerated{std::vector<int>(made.begin(), made.begin() + *keep)});
            if (!ImGui::IsItemActive()) *keep = count;
            tooltip("Takes the generated tokens back to any step: the first k kept, the rest dropped when the slider is let go.");
        }
    }
}

}  // namespace

bool ControlsPanel::section(const char* name, int index) {
    if (!m_compact) {
        if (index > 0) ImGui::Separator();
        return true;
    }
    ImGui::SetNextItemOpen(m_open == index, ImGuiCond_Always);
    if (ImGui::CollapsingHeader(name)) {
        m_open = index;
        return true;
    }
    if (m_open == index) m_open = -1;
    return false;
}

void ControlsPanel::draw(PanelContext& ctx) {
    const AppState& s = ctx.state;
    if (!beginPanel(ctx, title())) return;
    // Compact when the whole did not fit the last time it was drawn whole.
    const float top = ImGui::GetCursorPosY();
    m_compact = m_wholeHeight > ImGui::GetContentRegionAvail().y + 0.5f;
    if (m_compact) ImGui::PushID("compact");
    // Scenario: presets and the sentence.
    if (section("Scenario", 0)) scenarioSection(ctx);
    const bool editable = !s.model.explicitQkv && !s.scenario.x;
    if (const core::LoadedModel* pass = checkpointPass(s)) {
        if (section("Model and sentence", 1)) modelSection(ctx, *pass->checkpoint);
        if (section(pass->checkpoint->config().causal ? "Next token" : "Masked token", 2)) nextTokens(ctx, *pass);
    } else if (const core::ImportedAttention* file = mapsFile(s)) {
        if (section("Imported attention", 1)) importedSection(ctx, *file);
    } else if (section(editable ? "Sentence and sizes" : "Inputs", 1)) {
        inputsSection(ctx);
    }
    if (!capabilities(s).givenMaps && section("Softmax", 3)) softmaxSection(ctx);
    if (section("View", 4)) viewSection(ctx);
    if (!s.error.empty()) {
        ImGui::Separator();
        widgets::wrappedTextColored(ImVec4(0.95f, 0.35f, 0.30f, 1.0f), s.error, kDescriptionGlyphs);
        if (ImGui::SmallButton("dismiss")) ctx.actions.emit(action::ClearError{});
    }
    if (m_compact) ImGui::PopID();
    else m_wholeHeight = ImGui::GetCursorPosY() - top;
    ImGui::End();
}

void ControlsPanel::scenarioSection(PanelContext& ctx) {
    const AppState& s = ctx.state;
    ImGui::SetNextItemWidth(-1);
    const core::Preset* preset = core::findPreset(s.presetId);
    const std::string& name = preset ? preset->scenario.name : s.scenario.name.empty() ? "(custom)" : s.scenario.name;
    const float previewW = ImGui::GetContentRegionAvail().x - ImGui::GetFrameHeight() - ImGui::GetStyle().FramePadding.x * 2.0f;
    const std::string current = widgets::escapeIdMarks(widgets::fitLabel(name, previewW, widgets::kTitleGlyphs));
    if (ImGui::BeginCombo("##preset", current.c_str())) {
        for (const core::Preset& p : core::presets()) {
            if (ImGui::Selectable(p.scenario.name.c_str(), p.id == s.presetId))
                ctx.actions.emit(action::LoadScenario{p.scenario, p.id, ""});
            tooltip(p.scenario.description.c_str());
        }
        ImGui::EndCombo();
    }
    if (current != name) widgets::hoverTooltip(name);
    else tooltip("Presets: every worked example of the lessons, the anagram sentences and random-head demos.");
    if (!s.scenario.description.empty()) description(s.scenario.description, m_compact, capabilities(s).ownPass ? 4 : 3);
}

void ControlsPanel::inputsSection(PanelContext& ctx) {
    const AppState& s = ctx.state;
    const bool editable = !s.model.explicitQkv && !s.scenario.x;
    if (editable) {
        ImGui::TextUnformatted("Sentence");
        sentenceField(ctx);
        int tokenizer = s.scenario.tokenizer == core::Tokenizer::Char ? 1 : 0;
        if (ImGui::RadioButton("words", &tokenizer, 0)) ctx.actions.emit(action::SetTokenizer{core::Tokenizer::Word});
        tooltip("One token per word; punctuation becomes its own token, except an apostrophe inside a word (didn't).");
        ImGui::SameLine();
        if (ImGui::RadioButton("characters", &tokenizer, 1)) ctx.actions.emit(action::SetTokenizer{core::Tokenizer::Char});
        tooltip("One token per character, spaces included (as in the character-level lesson).");
        ImGui::SameLine();
        ImGui::TextDisabled("T = %d", static_cast<int>(s.model.tq()));
    } else {
        ImGui::TextWrapped("Inputs given as numbers (%s): %d queries, %d keys.", s.model.explicitQkv ? "Q, K, V" : "X",
                           static_cast<int>(s.model.tq()), static_cast<int>(s.model.tk()));
    }

    if (!s.model.explicitQkv && !capabilities(s).ownPass) {
        int v = 0;
        if (!s.scenario.x && s.scenario.embedding == core::EmbeddingKind::Random && intField("d_model", s.model.dModel, 1, 1024, v))
            ctx.actions.emit(action::SetDModel{v});
        if (!s.scenario.x && s.scenario.embedding == core::EmbeddingKind::Random)
            tooltip("Width of each token vector. Changes every embedding and weight.");
        if (intField("heads", s.model.heads, 1, 64, v)) ctx.actions.emit(action::SetHeads{v});
        tooltip("Number of attention heads. Each gets its own W_Q, W_K, W_V; d_k = d_model / heads.");
        const int kv = s.model.kvHeads > 0 ? s.model.kvHeads : s.model.heads;
        if (intField("kv heads", kv, 1, s.model.heads, v)) {
            // The arrows step through the divisors of the heads; a typed value is taken as it is.
            if (v == kv - 1 || v == kv + 1) {
                const int step = v < kv ? -1 : 1;
                for (v = kv + step; v > 1 && v < s.model.heads && s.model.heads % v != 0; v += step) {}
                v = std::clamp(v, 1, s.model.heads);
            }
            ctx.actions.emit(action::SetKvHeads{v == s.model.heads ? 0 : v});
        }
        tooltip(
            "Key/value heads (grouped-query attention): the query heads share this many K and V heads, query head i reading "
            "K/V head ⌊i · kv / heads⌋. 1 = multi-query; = heads: every head its own (multi-head). Fewer K/V heads shrink the "
            "KV cache by heads / kv.");
        if (intField("d_k", s.model.dk, 1, 1024, v)) ctx.actions.emit(action::SetDk{v});
        tooltip("Query/key width per head: the √d_k in the scaling.");
        if (intField("seed", static_cast<int>(s.scenario.seed % 1000000), 0, 999999, v))
            ctx.actions.emit(action::SetSeed{static_cast<std::uint64_t>(v)});
        tooltip("Random seed for embeddings and weights: the same seed gives the same numbers on every machine.");
        if (!s.scenario.x) {
            int kind = s.scenario.embedding == core::EmbeddingKind::OneHot ? 1 : 0;
            if (ImGui::RadioButton("random embeddings", &kind, 0)) ctx.actions.emit(action::SetEmbedding{core::EmbeddingKind::Random});
            tooltip("Each distinct token gets a random vector; a repeated word gets the same vector.");
            ImGui::SameLine();
            if (ImGui::RadioButton("one-hot", &kind, 1)) ctx.actions.emit(action::SetEmbedding{core::EmbeddingKind::OneHot});
            tooltip("Each distinct token is a unit vector (d_model = vocabulary size).");
        }
        int positional = static_cast<int>(s.scenario.positional);
        ImGui::SetNextItemWidth(ImGui::GetFontSize() * 9.0f);
        if (ImGui::Combo("positions", &positional, "none\0sinusoidal\0RoPE\0ALiBi\0"))
            ctx.actions.emit(action::SetPositional{static_cast<core::Positional>(positional)});
        tooltip(
            "How attention sees where a token is. Sinusoidal: sin/cos signals of the position added to X, so the same word at "
            "two places looks different. RoPE: each head's q and k are turned by an angle that grows with the position, so a "
            "score depends on the distance i − j alone (Llama, Qwen, Mistral). ALiBi: a penalty m·|i − j| subtracted from each "
            "logit, a different slope m per head (BLOOM). The positional panel shows which survive a shift of the sentence.");
    }
}

// Softmax: temperature on a log scale with a detent and reset at 1, scaling, mask.
void ControlsPanel::softmaxSection(PanelContext& ctx) {
    const AppState& s = ctx.state;
    // A layer read from the model's pass is the pass's own softmax: shown, not changed.
    const bool fixed = !capabilities(s).wholeLayer;
    if (fixed)
        widgets::wrappedTextColored(ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled),
                                    "The model's own softmax: " + readFromPassNote(s) + ".");
    ImGui::BeginDisabled(fixed);
    softmaxControls(ctx);
    ImGui::EndDisabled();
}

void ControlsPanel::softmaxControls(PanelContext& ctx) {
    const AppState& s = ctx.state;
    ImGui::Text("Temperature τ = %.3g", s.settings.temperature);
    float position = temperatureToSlider(s.settings.temperature);
    ImGui::SetNextItemWidth(-ImGui::CalcTextSize("reset").x - ImGui::GetStyle().FramePadding.x * 4);
    const ImVec2 sliderMin = ImGui::GetCursorScreenPos();
    if (ImGui::SliderFloat("##tau", &position, 0.0f, 1.0f, "", ImGuiSliderFlags_NoRoundToFormat))
        ctx.actions.emit(action::SetTemperature{sliderToTemperature(position)});
    {  // the detent mark at τ = 1
        const ImVec2 max = ImGui::GetItemRectMax();
        const float x = sliderMin.x + (max.x - sliderMin.x) * 0.5f;
        ImGui::GetWindowDrawList()->AddLine(ImVec2(x, sliderMin.y), ImVec2(x, max.y), ImGui::GetColorU32(ImGuiCol_Text), 2.0f);
    }
    tooltip(
        "Divides the scores before the softmax. Small τ: each row collapses onto its best key. Large τ: rows flatten. Log scale 0.01–100; snaps to 1.");
    ImGui::SameLine();
    if (ImGui::Button("reset")) ctx.actions.emit(action::SetTemperature{1.0f});
    tooltip("Back to τ = 1.");
    bool scaled = s.settings.scaled;
    if (ImGui::Checkbox("divide by √d_k", &scaled)) ctx.actions.emit(action::SetScaled{scaled});
    tooltip("Scaled dot-product attention. Off: divide by 1 and watch the softmax saturate for large d_k.");
    bool causal = s.settings.causal;
    if (ImGui::Checkbox("causal mask (space)", &causal)) ctx.actions.emit(action::SetCausal{causal});
    if (capabilities(s).ownPass && capabilities(s).readsBack) {
        tooltip(
            "The model reads causally. Off: what the same weights compute when every token may read every other, which the "
            "model never does.");
        if (!causal) widgets::wrappedTextColored(ImVec4(0.95f, 0.65f, 0.25f, 1.0f), "Bidirectional: not how the model reads.");
    } else if (capabilities(s).ownPass) {
        tooltip(
            "The model reads every key in both directions. On: what the same weights compute when each token reads only the ones "
            "before it, which the model never does.");
        if (causal) widgets::wrappedTextColored(ImVec4(0.95f, 0.65f, 0.25f, 1.0f), "Causal: not how the model reads.");
    } else {
        tooltip("Each query may read only itself and earlier keys, as in GPT-style decoders. Rows still sum to 1.");
    }
    if (!s.model.explicitQkv || s.model.tq() == s.model.tk()) {
        int window = 0;
        if (intField("window", s.scenario.window, 0, std::max<int>(1, static_cast<int>(s.model.tk())), window))
            ctx.actions.emit(action::SetWindow{window});
        tooltip(
            "Sliding window (Mistral, Longformer): each query reads only its nearest keys — the last w up to itself with the "
            "causal mask, |i − j| < w without. 0 = off. The keys outside are masked, and rows still sum to 1.");
    }
}

// View: head, layer, colours.
void ControlsPanel::viewSection(PanelContext& ctx) {
    const AppState& s = ctx.state;
    std::string headName = s.view.rollout            ? "rollout"
                           : s.view.selectedHead < 0 ? "mean of heads"
                                                     : "head " + std::to_string(s.view.selectedHead + 1);
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 9.0f);
    if (ImGui::BeginCombo("head ([ ])", headName.c_str())) {
        // A head (or the mean) leaves the rollout view; "rollout" shows every layer's heads up to this one, multiplied.
        const auto pick = [&](int head) {
            if (s.view.rollout) ctx.actions.emit(action::SetRollout{false});
            ctx.actions.emit(action::SelectHead{head});
        };
        if (s.model.heads > 1 && ImGui::Selectable("mean of heads", !s.view.rollout && s.view.selectedHead < 0)) pick(-1);
        for (int h = 0; h < s.model.heads; ++h)
            if (ImGui::Selectable(("head " + std::to_string(h + 1)).c_str(), !s.view.rollout && h == s.view.selectedHead)) pick(h);
        if (ImGui::Selectable("rollout", s.view.rollout)) ctx.actions.emit(action::SetRollout{true});
        tooltip(kRolloutIgnores);
        ImGui::EndCombo();
    }
    tooltip("Which head the heatmap, bars and stages show, or the attention rollout up to this layer (the heatmap and bars).");
    if (s.view.rollout) {
        int rule = static_cast<int>(s.view.rolloutHeads);
        ImGui::SetNextItemWidth(ImGui::GetFontSize() * 9.0f);
        if (ImGui::Combo("rollout heads", &rule, "mean\0max\0"))
            ctx.actions.emit(action::SetRolloutHeads{static_cast<core::RolloutHeads>(rule)});
        tooltip((std::string("How a layer's heads are fused before the residual's ½·I is added: their mean (Abnar & Zuidema's "
                             "default) or the largest weight any head gives a cell.\n\n") +
                 core::rolloutRule(rolloutOptions(s.view)))
                    .c_str());
    }
    if (layerCount(s) > 0) {
        ImGui::SetNextItemWidth(ImGui::GetFontSize() * 9.0f);
        const std::string layerName = "layer " + std::to_string(s.scenario.layer + 1);
        if (ImGui::BeginCombo("layer (, .)", layerName.c_str())) {
            for (int l = 0; l < layerCount(s); ++l)
                if (ImGui::Selectable(("layer " + std::to_string(l + 1)).c_str(), l == s.scenario.layer))
                    ctx.actions.emit(action::SelectLayer{l});
            ImGui::EndCombo();
        }
        tooltip("Which layer's attention every panel shows. The model's pass over the sentence is kept: a new layer costs no new pass.");
    }
    int colormap = static_cast<int>(s.view.colormap);
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 9.0f);
    if (ImGui::Combo("colours", &colormap, "viridis\0magma\0grayscale\0cividis (colour-blind safe)\0"))
        ctx.actions.emit(action::SetColormap{static_cast<core::ColormapKind>(colormap)});
    tooltip("Colormap of every heatmap. Masked cells are always hatched grey.");
}

}  // namespace attnviz::app
