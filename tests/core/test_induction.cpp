// The induction test (core/models/induction.hpp) on tiny checkpoints: the sequences' shape (the
// BOS first where the tokenizer puts one, no special id, the second copy equal to the first), the
// scores against the stripe read again from decoder::forward's kept weights, determinism, the
// passes counted and the stop honoured.
#include "core/base/error.hpp"
#include "core/models/induction.hpp"
#include "core/models/loaded_model.hpp"
#include "tests/test_folder.hpp"
#include "tests/tiny_gpt2.hpp"
#include "tests/tiny_llama.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <set>

namespace attnviz::core {
namespace {

// The score of one head straight from the definition: each sequence's second copy's queries i
// (positions offset + N … offset + 2N − 1) read at key i − N + 1, averaged.
class Induction : public testfs::TestFolder {};

double stripeScore(const decoder::Checkpoint& model, const std::vector<std::vector<int>>& sequences, int offset, int n, int layer,
                   int head) {
    double sum = 0;
    for (const std::vector<int>& ids : sequences) {
        const decoder::Run run = decoder::forward(model, ids);
        const decoder::KeptView a = run.weights(layer, head);
        for (int k = 0; k < n; ++k) sum += a(offset + n + k, offset + k + 1);
    }
    return sum / (static_cast<double>(n) * static_cast<double>(sequences.size()));
}

void expectScoresFromThePasses(const decoder::Checkpoint& model, const InductionSettings& settings, int offset) {
    const std::vector<double> scores = inductionScores(model, settings);
    const std::vector<std::vector<int>> sequences = inductionSequences(model, settings);
    const decoder::Config& c = model.config();
    ASSERT_EQ(scores.size(), static_cast<std::size_t>(c.nLayer * c.nHead));
    for (int l = 0; l < c.nLayer; ++l)
        for (int h = 0; h < c.nHead; ++h)
            EXPECT_NEAR(scores[static_cast<std::size_t>(l * c.nHead + h)], stripeScore(model, sequences, offset, settings.repeat, l, h),
                        1e-6)
                << "layer " << l << " head " << h;
}

TEST_F(Induction, Gpt2SequencesAndScores) {
    tinygpt2::writeCheckpoint(m_dir, tinygpt2::weights(3));
    const auto model = openCheckpoint(m_dir.string());
    const InductionSettings settings{.repeat = 7, .batch = 4, .seed = 9};
    const std::vector<std::vector<int>> sequences = inductionSequences(*model, settings);
    ASSERT_EQ(sequences.size(), 4u);
    std::set<int> drawn;
    for (const std::vector<int>& ids : sequences) {
        ASSERT_EQ(ids.size(), 14u);  // GPT-2 puts no BOS first
        for (int k = 0; k < 7; ++k) {
            EXPECT_EQ(ids[static_cast<std::size_t>(k)], ids[static_cast<std::size_t>(k + 7)]);
            EXPECT_NE(ids[static_cast<std::size_t>(k)], 259);  // <|endoftext|>
            EXPECT_LT(ids[static_cast<std::size_t>(k)], 259);
            drawn.insert(ids[static_cast<std::size_t>(k)]);
        }
    }
    EXPECT_GT(drawn.size(), 20u);  // 28 draws from 259 ids: random, not one repeated id
    EXPECT_NE(sequences[0], sequences[1]);
    expectScoresFromThePasses(*model, settings, 0);
    // Deterministic: the same seed, the same scores; another seed, other sequences.
    EXPECT_EQ(inductionScores(*model, settings), inductionScores(*model, settings));
    EXPECT_NE(inductionSequences(*model, {.repeat = 7, .batch = 4, .seed = 10})[0], sequences[0]);
}

TEST_F(Induction, LlamaWithABosScoresAfterIt) {
    const nlohmann::json c = tinyllama::config();
    tinyllama::writeCheckpoint(m_dir, c, tinyllama::weights(c, 5));
    // The tokenizer puts <|begin_of_text|> (259) first, as Llama 2's and 3's files do.
    testfs::writeFile(m_dir / "tokenizer.json", tinyllama::tokenizerJsonWithBos());
    const auto model = openCheckpoint(m_dir.string());
    ASSERT_EQ(model->tokenizer().bosId(), 259);
    const InductionSettings settings{.repeat = 20, .batch = 3, .seed = 1};
    for (const std::vector<int>& ids : inductionSequences(*model, settings)) {
        ASSERT_EQ(ids.size(), 41u);
        EXPECT_EQ(ids[0], 259);
        for (int k = 1; k <= 20; ++k) {
            EXPECT_EQ(ids[static_cast<std::size_t>(k)], ids[static_cast<std::size_t>(k + 20)]);
            EXPECT_NE(ids[static_cast<std::size_t>(k)], 259);
        }
    }
    expectScoresFromThePasses(*model, settings, 1);
}

TEST_F(Induction, CountsItsPassesAndStops) {
    tinygpt2::writeCheckpoint(m_dir, tinygpt2::weights(3));
    const auto model = openCheckpoint(m_dir.string());
    Progress progress;
    inductionScores(*model, {.repeat = 5, .batch = 6, .seed = 0}, &progress);
    EXPECT_DOUBLE_EQ(progress.fraction(), 1.0);
    Progress stopped;
    stopped.cancel();
    EXPECT_THROW(inductionScores(*model, {.repeat = 5, .batch = 6, .seed = 0}, &stopped), Cancelled);
    // Settings out of range name the test and the problem.
    EXPECT_THROW(inductionSequences(*model, {.repeat = 9, .batch = 1, .seed = 0}), InputError);  // 18 tokens > 16 positions
    EXPECT_THROW(inductionSequences(*model, {.repeat = 1, .batch = 1, .seed = 0}), InputError);
    EXPECT_THROW(inductionSequences(*model, {.repeat = 5, .batch = 0, .seed = 0}), InputError);
}

}  // namespace
}  // namespace attnviz::core
