// The induction test (induction.hpp): one pass per sequence, the stripe A[i, i − N + 1] of each
// head's kept weights read over the second copy.
#include "core/models/induction.hpp"

#include "core/base/error.hpp"
#include "core/base/prng.hpp"

#include <algorithm>
#include <string>

namespace attnviz::core {

int bosOffset(const decoder::Checkpoint& model) { return model.tokenizer().bosId() ? 1 : 0; }

std::vector<int> ordinaryTokens(const decoder::Checkpoint& model, const std::string& test) {
    const ModelTokenizer& tokenizer = model.tokenizer();
    const int vocab = std::min(model.config().vocabSize, tokenizer.vocabSize());
    const auto ordinary = [&](int id) {
        return tokenizer.hasId(id) && !tokenizer.isSpecial(id) && id != tokenizer.bosId() && id != tokenizer.endOfText();
    };
    std::vector<int> pool;
    for (int id = 0; id < vocab; ++id)
        if (ordinary(id)) pool.push_back(id);
    if (pool.empty()) throw InputError(test, "the tokenizer has no ordinary token to draw");
    return pool;
}

std::vector<std::vector<int>> inductionSequences(const decoder::Checkpoint& model, const InductionSettings& settings) {
    const decoder::Config& config = model.config();
    const ModelTokenizer& tokenizer = model.tokenizer();
    const int offset = bosOffset(model);
    if (!config.causal)
        throw InputError("induction test", "scores a decoder's heads reading back along the text; this " + config.family +
                                               " model reads every key in both directions");
    if (settings.repeat < 2)
        throw InputError("induction test", "expected a repeat of 2 tokens or more, got " + std::to_string(settings.repeat));
    if (settings.batch < 1)
        throw InputError("induction test", "expected a batch of 1 sequence or more, got " + std::to_string(settings.batch));
    const long long tokens = 2LL * settings.repeat + offset;
    if (tokens > config.nPositions)
        throw InputError("induction test", std::to_string(tokens) + " tokens (" + std::to_string(settings.repeat) + " twice" +
                                               (offset ? ", after the BOS" : "") + ") exceed the model's " +
                                               std::to_string(config.nPositions) + " positions");
    const std::vector<int> pool = ordinaryTokens(model, "induction test");
    // each sequence: N draws, written twice after the BOS
    Prng prng = Prng::stream(settings.seed, "induction");
    std::vector<std::vector<int>> sequences;
    for (int b = 0; b < settings.batch; ++b) {
        std::vector<int> ids;
        ids.reserve(static_cast<std::size_t>(tokens));
        if (offset) ids.push_back(*tokenizer.bosId());
        for (int k = 0; k < settings.repeat; ++k) ids.push_back(pool[static_cast<std::size_t>(prng.nextU64() % pool.size())]);
        ids.insert(ids.end(), ids.begin() + offset, ids.end());
        sequences.push_back(std::move(ids));
    }
    return sequences;
}

std::vector<double> inductionScores(const decoder::Checkpoint& model, const InductionSettings& settings, Progress* progress) {
    const std::vector<std::vector<int>> sequences = inductionSequences(model, settings);
    const decoder::Config& config = model.config();
    const int layers = config.nLayer, heads = config.nHead, offset = bosOffset(model), n = settings.repeat;
    std::vector<double> scores(static_cast<std::size_t>(layers) * static_cast<std::size_t>(heads), 0.0);
    expect(progress, sequences.size());
    for (const std::vector<int>& ids : sequences) {
        const decoder::Run run = decoder::forward(model, ids, progress);
        // the second copy's queries i = offset + N … offset + 2N − 1, each its key i − N + 1
        for (int l = 0; l < layers; ++l)
            for (int h = 0; h < heads; ++h) {
                const decoder::KeptView a = run.weights(l, h);
                double stripe = 0;
                for (int i = offset + n; i < offset + 2 * n; ++i) stripe += a(i, i - n + 1);
                scores[static_cast<std::size_t>(l) * static_cast<std::size_t>(heads) + static_cast<std::size_t>(h)] += stripe / n;
            }
        advance(progress, 1);
    }
    for (double& s : scores) s /= static_cast<double>(sequences.size());
    return scores;
}

}  // namespace attnviz::core
