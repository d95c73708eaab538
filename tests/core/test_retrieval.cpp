// The retrieval test (core/models/retrieval.hpp) on tiny checkpoints: each cell's sequence (the
// BOS first where the tokenizer puts one, the segment at its depth and again at the end, ordinary
// ids only), the scores against the weights a kept pass holds, determinism, the tokens counted and
// the stop honoured, and settings out of range.
#include "core/base/error.hpp"
#include "core/models/loaded_model.hpp"
#include "core/models/retrieval.hpp"
#include "tests/test_folder.hpp"
#include "tests/tiny_gpt2.hpp"
#include "tests/tiny_llama.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <set>

namespace attnviz::core {
namespace {

class Retrieval : public testfs::TestFolder {};

// Every head's mass and top-1 share at every cell read from a kept pass's whole weights.
void expectScoresFromKeptPasses(const decoder::Checkpoint& model, const RetrievalSettings& settings) {
    const RetrievalScores scores = retrievalScores(model, settings);
    const decoder::Config& c = model.config();
    const int n = settings.segment;
    ASSERT_EQ(scores.mass.size(), settings.lengths.size() * settings.depths.size() * static_cast<std::size_t>(c.nLayer * c.nHead));
    double largest = 0;
    for (std::size_t li = 0; li < settings.lengths.size(); ++li)
        for (std::size_t di = 0; di < settings.depths.size(); ++di) {
            const RetrievalCase rc = retrievalCase(model, settings, li, di);
            const decoder::Run run = decoder::forward(model, rc.ids);
            for (int l = 0; l < c.nLayer; ++l)
                for (int h = 0; h < c.nHead; ++h) {
                    const decoder::KeptView a = run.weights(l, h);
                    double mass = 0;
                    int hits = 0;
                    for (int k = 0; k < n; ++k) {
                        const Eigen::Index i = rc.length - n + k, target = rc.first + k + 1;
                        Eigen::Index best = 0;
                        a.row(i).head(i + 1).maxCoeff(&best);
                        mass += a(i, target);
                        hits += best == target ? 1 : 0;
                    }
                    const std::size_t at = scores.index(li, di, l, h);
                    EXPECT_NEAR(scores.mass[at], mass / n, 1e-6)
                        << "length " << rc.length << " depth " << rc.depth << " head " << l << "." << h;
                    EXPECT_DOUBLE_EQ(scores.top1[at], static_cast<double>(hits) / n);
                    largest = std::max(largest, mass / n);
                }
        }
    EXPECT_GT(largest, 0.0);
    // The table's column: each head's mean over the cells.
    const std::vector<double> means = scores.headMeans(scores.mass);
    double sum = 0;
    for (std::size_t li = 0; li < settings.lengths.size(); ++li)
        for (std::size_t di = 0; di < settings.depths.size(); ++di) sum += scores.mass[scores.index(li, di, c.nLayer - 1, c.nHead - 1)];
    EXPECT_NEAR(means.back(), sum / static_cast<double>(settings.lengths.size() * settings.depths.size()), 1e-15);
}

TEST_F(Retrieval, LlamaWithABosPlacesTheSegmentAtEachDepth) {
    const nlohmann::json c = tinyllama::config();
    tinyllama::writeCheckpoint(m_dir, c, tinyllama::weights(c, 5));
    testfs::writeFile(m_dir / "tokenizer.json", tinyllama::tokenizerJsonWithBos());
    const auto model = openCheckpoint(m_dir.string());
    ASSERT_EQ(model->tokenizer().bosId(), 259);
    const RetrievalSettings settings{.lengths = {40, 64}, .depths = {0, 0.5, 1}, .segment = 6, .seed = 3};
    // p = 1 + round(d · (L − 1 − 2N)): 1, 15, 28 at 40 tokens; 1, 27, 52 at 64
    const int firsts[2][3] = {{1, 15, 28}, {1, 27, 52}};
    for (std::size_t li = 0; li < 2; ++li)
        for (std::size_t di = 0; di < 3; ++di) {
            const RetrievalCase rc = retrievalCase(*model, settings, li, di);
            ASSERT_EQ(rc.ids.size(), static_cast<std::size_t>(settings.lengths[li]));
            EXPECT_EQ(rc.first, firsts[li][di]);
            EXPECT_EQ(rc.ids[0], 259);
            for (std::size_t i = 1; i < rc.ids.size(); ++i) {
                EXPECT_LT(rc.ids[i], 259);  // no special id after the BOS
            }
            for (int k = 0; k < 6; ++k) {
                EXPECT_EQ(rc.ids[static_cast<std::size_t>(rc.first + k)], rc.ids[static_cast<std::size_t>(rc.length - 6 + k)]);
            }
            // The filler holds none of the segment's ids: its first copy is the only one.
            const std::set<int> segment(rc.ids.begin() + rc.first, rc.ids.begin() + rc.first + 6);
            for (int i = 1; i < rc.length - 6; ++i) {
                if (i < rc.first || i >= rc.first + 6) {
                    EXPECT_FALSE(segment.contains(rc.ids[static_cast<std::size_t>(i)])) << "position " << i;
                }
            }
            // Deterministic per cell, and each cell its own draw.
            EXPECT_EQ(retrievalCase(*model, settings, li, di).ids, rc.ids);
            if (di > 0) {
                EXPECT_NE(retrievalCase(*model, settings, li, di - 1).ids, rc.ids);
            }
        }
    expectScoresFromKeptPasses(*model, settings);
}

TEST_F(Retrieval, Gpt2ScoresAreTheKeptWeights) {
    tinygpt2::writeCheckpoint(m_dir, tinygpt2::weights(3));
    const auto model = openCheckpoint(m_dir.string());
    const RetrievalSettings settings{.lengths = {12, 16}, .depths = {0, 0.25, 1}, .segment = 3, .seed = 0};
    EXPECT_EQ(retrievalCase(*model, settings, 0, 2).first, 6);  // no BOS: round(1 · (12 − 6))
    expectScoresFromKeptPasses(*model, settings);
    EXPECT_EQ(retrievalScores(*model, settings).mass, retrievalScores(*model, settings).mass);
    EXPECT_NE(retrievalCase(*model, {.lengths = {12}, .depths = {0}, .segment = 3, .seed = 1}, 0, 0).ids,
              retrievalCase(*model, settings, 0, 0).ids);
}

TEST_F(Retrieval, CountsItsTokensStopsAndChecksItsSettings) {
    tinygpt2::writeCheckpoint(m_dir, tinygpt2::weights(3));
    const auto model = openCheckpoint(m_dir.string());
    const RetrievalSettings settings{.lengths = {10, 16}, .depths = {0, 1}, .segment = 2, .seed = 0};
    Progress progress;
    retrievalScores(*model, settings, &progress);
    EXPECT_DOUBLE_EQ(progress.fraction(), 1.0);
    Progress stopped;
    stopped.cancel();
    EXPECT_THROW(retrievalScores(*model, settings, &stopped), Cancelled);
    const auto message = [&](const RetrievalSettings& s) {
        try {
            checkRetrievalSettings(*model, s);
        } catch (const InputError& e) {
            return e.message();
        }
        return std::string("no error");
    };
    EXPECT_EQ(message({.lengths = {17}, .depths = {0}, .segment = 2, .seed = 0}),
              "retrieval test: a length of 17 tokens exceeds the model's 16 positions");
    EXPECT_EQ(message({.lengths = {5}, .depths = {0}, .segment = 3, .seed = 0}),
              "retrieval test: a length of 5 tokens cannot hold two copies of 3 (at least 6)");
    EXPECT_EQ(message({.lengths = {10}, .depths = {1.5}, .segment = 2, .seed = 0}), "retrieval test: expected depths from 0 to 1, got 1.5");
    EXPECT_EQ(message({.lengths = {10}, .depths = {NAN}, .segment = 2, .seed = 0}), "retrieval test: expected depths from 0 to 1, got nan");
    EXPECT_EQ(message({.lengths = {}, .depths = {0}, .segment = 2, .seed = 0}), "retrieval test: expected 1 to 64 lengths, got 0");
    EXPECT_EQ(message({.lengths = {10}, .depths = {0}, .segment = 1, .seed = 0}),
              "retrieval test: expected a segment of 2 to 4096 tokens, got 1");
    EXPECT_EQ(message(settings), "no error");
}

}  // namespace
}  // namespace attnviz::core
