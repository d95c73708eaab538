#include "app/state/compare_view.hpp"

#include "app/state/head_summary.hpp"
#include "core/base/error.hpp"
#include "core/models/pass_maps.hpp"
#include "core/text/tokenizer.hpp"

#include <map>
#include <new>

namespace attnviz::app {
namespace {

// Ids for two label lists from one dictionary, so that equal labels in either get equal ids.
std::pair<std::vector<int>, std::vector<int>> sharedIds(const std::vector<std::string>& a, const std::vector<std::string>& b) {
    std::map<std::string, int> ids;
    const auto idsOf = [&ids](const std::vector<std::string>& labels) {
        std::vector<int> out;
        out.reserve(labels.size());
        for (const std::string& l : labels) out.push_back(ids.emplace(l, static_cast<int>(ids.size())).first->second);
        return out;
    };
    auto first = idsOf(a);
    return {std::move(first), idsOf(b)};
}

}  // namespace

core::Scenario compareScenario(const core::Scenario& scenario, const std::string& text, const std::string& where) {
    if (scenario.attention) throw core::InputError(where, "imported attention has no model behind it to run over another sentence");
    if (!scenario.model) {
        if (scenario.x || scenario.q || scenario.k || scenario.v)
            throw core::InputError(where, "this scenario gives its vectors (X or Q, K, V), not a sentence to replace");
        if (scenario.keyTokens)
            throw core::InputError(where, "this scenario is cross-attention: its keys are another sequence, not a sentence");
        if (scenario.mask) throw core::InputError(where, "this scenario's mask is drawn for its own tokens");
    }
    core::Scenario other = scenario;
    other.sentence = text;
    other.tokens.reset();
    other.swaps.clear();
    other.padding.clear();
    return other;
}

int compareLayer(const AppState& state) { return shownMapLayer(state); }

CompareView::Key compareKey(const AppState& state) { return {passKey(state), state.view.compareText}; }

bool compareCurrent(const AppState& state) { return state.compare.current(compareKey(state)) && mapsFresh(state); }

core::AttentionMaps compareMaps(const AppState& state) {
    const CompareView& c = state.compare;
    if (!c.ready()) return {};
    if (c.loaded) return core::passMaps(c.loaded);
    return core::forwardMaps(c.model, c.forward, c.settings, c.labels);
}

bool refreshCompare(AppState& state) {
    if (state.view.compareText.empty()) {
        if (state.compare.key) state.compare = CompareView{};
        return true;
    }
    if (compareCurrent(state)) return true;
    const core::AttentionMaps maps = attentionMaps(state);
    if (!maps) return false;
    CompareView& c = state.compare;
    const CompareView::Key key = compareKey(state);
    // The other input's pass: a model's is kept while its text and checkpoint are (another layer
    // of the same pass needs no new one); a scenario's follows every change of the state's.
    const core::LoadedModel* own = checkpointPass(state);
    const bool keepPass = c.key && c.key->text == key.text && c.loaded && own && c.loaded.checkpoint == own->checkpoint && c.why.empty();
    c.restart(key);
    c.moved.clear();
    try {
        // Either input too long for the window's thread: said, nothing run (the other text is
        // read by the model's tokenizer first, which takes milliseconds).
        const auto tooLong = [](const std::string& which, long long tokens) {
            return which + " has " + std::to_string(tokens) + " tokens: inputs of up to " + std::to_string(kCompareMostTokens) +
                   " tokens are compared (both passes and every head's maps are made in the window)";
        };
        if (maps.queries > kCompareMostTokens) {
            c.why = tooLong("the shown input", maps.queries);
            c.loaded = {};
            return true;
        }
        if (own && !keepPass)
            if (const auto n = static_cast<long long>(own->checkpoint->tokenizer().encode(key.text).size()); n > kCompareMostTokens) {
                c.why = tooLong("the compared sentence", n);
                c.loaded = {};
                return true;
            }
        if (!keepPass) {
            c.scenario = compareScenario(state.scenario, key.text, "");
            c.loaded = {};
            c.labels.clear();
            if (own) {
                c.loaded = core::loadModel(c.scenario, own, state.limits);
                for (const std::string& l : c.loaded.labels) c.labels.push_back(core::visibleToken(l));
            } else {
                c.scenario.temperature = state.settings.temperature;
                c.scenario.scaled = state.settings.scaled;
                c.scenario.causal = state.settings.causal;
                c.model = core::buildModel(c.scenario, true, state.limits);
                c.settings = core::buildSettings(c.scenario, c.model);
                c.forward = core::runForward(c.model, c.settings);
                for (const auto& t : c.model.keyTokens) c.labels.push_back(core::visibleToken(t));
            }
        }
        if (own) c.alignment = core::alignTokens(own->run->ids, c.loaded.run->ids);
        else {
            const auto [a, b] = sharedIds(state.keyLabels, c.labels);
            c.alignment = core::alignTokens(a, b);
        }
        const core::AttentionMaps other = own ? core::passMaps(c.loaded) : core::forwardMaps(c.model, c.forward, c.settings, c.labels);
        c.moved = core::headsMoved(maps, other, c.alignment);
        ++state.work.compares;
    } catch (const core::InputError& e) {
        // The other pass's errors are about the other sentence, never the shown one's fields:
        // "the compared sentence: 301 tokens are more than …", "… hide_tokens[0]: …".
        c.why = (e.where() == "sentence" ? core::InputError("", e.what()) : e).within("the compared sentence").message();
        c.loaded = {};
    } catch (const std::bad_alloc&) {
        c.why = "out of memory while running the other input";
        c.loaded = {};
    }
    return true;
}

}  // namespace attnviz::app
