// libFuzzer target: bytes as a scenario file, through the app's path: parse, build the model
// (and, when tokens are swapped, the model before the swaps), settings, labels, forward pass;
// then save the scenario as a session does and load it back.
// Expected outcomes: the scenario runs, or core::InputError says what is wrong. Anything else
// is a bug: another exception, a crash, a sanitizer report, a model over its limits, a
// non-finite weight, or a row of weights that does not sum to 1 (0 when every key is blocked).
#include "core/attention/permutation.hpp"
#include "core/base/error.hpp"
#include "core/scenario/model.hpp"
#include "core/scenario/scenario.hpp"
#include "core/text/tokenizer.hpp"
#include "fuzz/check.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

namespace {

using namespace attnviz::core;
using attnviz::fuzz::check;
using attnviz::fuzz::isValidUtf8;

// Small, so that one input costs at most a few MiB and milliseconds. The byte limit is what
// binds; d_model may be wide so that a model that slips past it shows.
constexpr Limits kLimits{64, 4096, 4ULL << 20};

std::uint64_t matrixBytes(const Mat& m) { return 4ULL * static_cast<std::uint64_t>(m.size()); }

// Bytes of every matrix a model holds.
std::uint64_t modelBytes(const Model& m) {
    std::uint64_t bytes = 0;
    for (const Mat* x : {&m.embeddings, &m.positional, &m.x, &m.wq, &m.wk, &m.wv, &m.wo, &m.q, &m.k, &m.v}) bytes += matrixBytes(*x);
    return bytes;
}

// weights: [T_q, T_k] per head. Finite, in [0, 1], exactly 0 where blocked; each row sums to 1,
// or is all zeros when the query may read no key.
void checkForward(const Model& model, const Settings& settings, const Forward& forward) {
    check(forward.heads.size() == static_cast<std::size_t>(model.heads), "wrong number of heads");
    const Eigen::Index tq = model.tq(), tk = model.tk();
    for (const HeadTensors& head : forward.heads) {
        check(head.weights.rows() == tq && head.weights.cols() == tk, "weights have the wrong shape");
        for (Eigen::Index i = 0; i < tq; ++i) {
            double sum = 0.0;
            bool open = false;
            for (Eigen::Index j = 0; j < tk; ++j) {
                const float w = head.weights(i, j);
                check(std::isfinite(w) && w >= 0.0f && w <= 1.0f + 1e-6f, "weight not finite or outside [0, 1]", std::to_string(w));
                const bool blocked = isBlocked(settings, i, j);
                check(!blocked || w == 0.0f, "a blocked key has weight");
                open = open || !blocked;
                sum += w;
            }
            // float rounding: about one unit in the last place per key
            if (open) check(std::abs(sum - 1.0) <= 1e-6 * static_cast<double>(tk + 4), "row does not sum to 1", std::to_string(sum));
            else check(sum == 0.0, "a fully masked row is not all zeros");
        }
    }
    const Eigen::Index width = model.wo.size() != 0 ? model.wo.cols() : static_cast<Eigen::Index>(model.heads) * model.dv;
    check(forward.output.rows() == tq && forward.output.cols() == width, "output has the wrong shape");
    for (const HeadTensors& head : forward.heads) check(head.output.allFinite(), "a head's A·V is not finite");
    check(forward.output.allFinite(), "the output is not finite");
}

// The app's makeState + first recompute for one model.
void run(const Scenario& scenario, const Model& model) {
    check(modelBytes(model) <= kLimits.maxBytes, "the model's matrices exceed the byte limit", std::to_string(modelBytes(model)));
    check(model.tq() >= 1 && model.tk() >= 1 && model.tq() <= kLimits.maxTokens && model.tk() <= kLimits.maxTokens,
          "token count outside the limits");
    for (const auto* labels : {&model.queryTokens, &model.keyTokens})
        for (const std::string& t : *labels) check(isValidUtf8(visibleToken(t)), "label is not valid UTF-8");
    const Settings settings = buildSettings(scenario, model);
    Forward forward;
    try {
        runForward(model, settings, forward);
    } catch (const InputError&) {
        return;  // Q Kᵀ, A·V or concat·W_O overflowed: reported to the user
    }
    checkForward(model, settings, forward);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    try {
        // 1. file -> scenario -> model(s) -> forward pass
        const Scenario scenario = parseScenario(text, "fuzz.json");
        const Model model = buildModel(scenario, true, kLimits);
        run(scenario, model);
        if (!isIdentity(model.perm)) run(scenario, buildModel(scenario, false, kLimits));

        // 2. a session saves the scenario as JSON; loading it back gives the same scenario
        const nlohmann::json saved = scenarioToJson(scenario);
        Scenario loaded;
        try {
            loaded = parseScenario(saved.dump(), "session.json");
        } catch (const InputError& e) {
            check(false, "a saved scenario does not load", e.message() + "\n" + saved.dump());
        }
        check(scenarioToJson(loaded) == saved, "a saved scenario loads differently", saved.dump());
    } catch (const InputError& e) {
        check(!e.message().empty(), "an InputError without a message");
    }
    return 0;
}
