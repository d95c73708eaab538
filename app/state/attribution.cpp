#include "app/state/attribution.hpp"

#include "app/state/source.hpp"
#include "core/base/error.hpp"

#include <new>

namespace attnviz::app {
namespace {

AttributionKey keyOf(const AppState& state) {
    PassKey pass = passKey(state);
    pass.skipFirstKey = false;
    pass.firstTokens = 0;
    return {pass, state.view.attributionQuery, state.view.attributionTarget};
}

core::decoder::AttributionTarget targetOf(const core::decoder::Checkpoint& model, const std::string& text) {
    return core::decoder::parseTarget(model, text, "--target");
}

}  // namespace

AttributionData makeAttribution(const AppState& state, const std::string& where) {
    const core::LoadedModel* pass = checkpointPass(state);
    if (pass == nullptr)
        throw core::InputError(where, "direct logit attribution reads a checkpoint's heads and unembedding: open a model (--model)");
    const core::decoder::Checkpoint& model = *pass->checkpoint;
    const core::decoder::Run& run = *pass->run;
    const Eigen::Index position = state.view.attributionQuery >= 0 ? state.view.attributionQuery : run.tokens() - 1;
    if (position >= run.tokens())
        throw core::InputError(where,
                               "position " + std::to_string(position) + " is outside the " + std::to_string(run.tokens()) + " tokens");
    AttributionData data;
    try {
        const core::Vec logits = core::decoder::positionLogits(model, run, position);
        core::decoder::AttributionTarget target;
        if (state.view.attributionTarget.empty()) {
            Eigen::Index top = 0;
            logits.maxCoeff(&top);
            target.target = static_cast<int>(top);
            data.defaultTarget = true;
        } else {
            target = targetOf(model, state.view.attributionTarget);
        }
        data.terms = core::decoder::logitAttribution(model, run, position, target.target, target.minus);
        data.probability =
            core::decoder::probabilities(logits, {core::decoder::NextToken{target.target, logits[target.target], 0.0f}}, 1.0f)[0];
    } catch (const core::InputError& e) {
        if (e.where() == "--target") throw;  // names the flag itself
        throw core::InputError(where, e.what());
    }
    data.position = static_cast<std::size_t>(position) < pass->labels.size() ? pass->labels[static_cast<std::size_t>(position)] : "";
    data.target = core::decoder::tokenLabel(model, data.terms.target);
    if (data.terms.minus >= 0) data.minus = core::decoder::tokenLabel(model, data.terms.minus);
    data.capped = model.config().logitSoftcap > 0.0f;
    return data;
}

bool refreshAttribution(AppState& state) {
    AttributionView& view = state.derived.get<AttributionView>();
    const AttributionKey key = keyOf(state);
    if (view.current(key)) return true;
    if (checkpointPass(state) == nullptr && capabilities(state).rerun) return false;  // the pass is not ready yet
    AttributionData& made = view.remake(key);
    try {
        made = makeAttribution(state, "attribution");
    } catch (const core::InputError& e) {
        view.value = {};
        view.why = e.message();
    } catch (const std::bad_alloc&) {
        view.value = {};
        view.why = "out of memory while attributing the logit";
    }
    return true;
}

const AttributionView* shownAttribution(const AppState& state) {
    const AttributionView* view = state.derived.find<AttributionView>();
    return view && view->current(keyOf(state)) ? view : nullptr;
}

}  // namespace attnviz::app
