// Tokens, embeddings, positional encodings and the deterministic PRNG.
#include "core/base/prng.hpp"
#include "core/scenario/embedding.hpp"
#include "core/text/tokenizer.hpp"

#include <gtest/gtest.h>

#include <cmath>

using namespace attnviz::core;

TEST(Tokenizer, WordsSplitOffPunctuation) {
    EXPECT_EQ(tokenize("The cat sat on the mat.", Tokenizer::Word),
              (std::vector<std::string>{"The", "cat", "sat", "on", "the", "mat", "."}));
    EXPECT_EQ(tokenize("  don't,  stop!\tnow ", Tokenizer::Word), (std::vector<std::string>{"don't", ",", "stop", "!", "now"}));
    // An apostrophe between letters stays in its word (straight or curly); a quote at a word's
    // edge is a token.
    EXPECT_EQ(tokenize("'O'Brien's rock’n’roll' dogs'", Tokenizer::Word),
              (std::vector<std::string>{"'", "O'Brien's", "rock’n’roll", "'", "dogs", "'"}));
    EXPECT_EQ(tokenize("«naïve» café…", Tokenizer::Word), (std::vector<std::string>{"«", "naïve", "»", "café", "…"}));
    EXPECT_TRUE(tokenize("   \t\n ", Tokenizer::Word).empty());
    EXPECT_TRUE(tokenize("", Tokenizer::Char).empty());
}

TEST(Tokenizer, CharactersIncludeSpacesAndKeepCombiningMarks) {
    const auto t = tokenize("the cat sat on the mat", Tokenizer::Char);
    EXPECT_EQ(t.size(), 22u);  // seed 000 §39.5: T = 22
    EXPECT_EQ(t[3], " ");
    // e + combining acute stays one token; an emoji with a skin-tone modifier too.
    EXPECT_EQ(tokenize("e\xCC\x81x", Tokenizer::Char), (std::vector<std::string>{"e\xCC\x81", "x"}));
    EXPECT_EQ(tokenize("\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD!", Tokenizer::Char).size(), 2u);
    EXPECT_EQ(tokenize("αβγ", Tokenizer::Char), (std::vector<std::string>{"α", "β", "γ"}));
}

TEST(Tokenizer, InvalidUtf8BecomesReplacementCharacter) {
    const std::string bad = "ab\xFF\xC3(c\xE2\x82";  // stray byte, bad continuation, truncated
    const auto words = tokenize(bad, Tokenizer::Word);
    for (const auto& w : words) EXPECT_EQ(sanitizeUtf8(w), w) << "token is valid UTF-8";
    EXPECT_EQ(sanitizeUtf8("ok\xFF"), "ok\xEF\xBF\xBD");
    EXPECT_EQ(sanitizeUtf8("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
    EXPECT_EQ(sanitizeUtf8("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");                  // overlong
}

TEST(Prng, SplitMix64ReferenceValues) {
    // splitmix64 from state 0: the published reference sequence.
    Prng rng(0);
    EXPECT_EQ(rng.nextU64(), 0xe220a8397b1dcdafULL);
    EXPECT_EQ(rng.nextU64(), 0x6e789e6aa1b965f4ULL);
    EXPECT_EQ(rng.nextU64(), 0x06c45d188009454fULL);
}

TEST(Prng, NormalHasUnitMoments) {
    Prng rng(123);
    double sum = 0, sumSq = 0;
    const int n = 200000;
    for (int i = 0; i < n; ++i) {
        const double x = rng.normal();
        sum += x;
        sumSq += x * x;
    }
    EXPECT_NEAR(sum / n, 0.0, 0.01);
    EXPECT_NEAR(sumSq / n, 1.0, 0.01);
}

TEST(Embedding, SameTokenSameVectorWhateverTheSentence) {
    const Mat a = randomEmbeddings({"the", "cat", "the"}, 8, 5);
    const Mat b = randomEmbeddings({"mat", "the"}, 8, 5);
    EXPECT_EQ(a.row(0), a.row(2));
    EXPECT_EQ(a.row(0), b.row(1));
    EXPECT_NE(a.row(0), a.row(1));
    EXPECT_NE(randomEmbeddings({"the"}, 8, 6).row(0), a.row(0));  // another seed, another vector
}

TEST(Embedding, OneHotUsesSortedVocabulary) {
    const Mat x = oneHotEmbeddings({"the", "cat", "the"}, 3);
    EXPECT_EQ(vocabulary({"the", "cat", "the"}), (std::vector<std::string>{"cat", "the"}));
    EXPECT_EQ(x(0, 1), 1.0f);
    EXPECT_EQ(x(1, 0), 1.0f);
    EXPECT_EQ(x(2, 1), 1.0f);
    EXPECT_EQ(x.sum(), 3.0f);
}

TEST(Embedding, SinusoidalMatchesVaswaniFormula) {
    const Mat pe = sinusoidalEncoding(50, 16);
    for (int pos : {0, 1, 7, 49})
        for (int i = 0; i < 8; ++i) {
            const double angle = pos / std::pow(10000.0, 2.0 * i / 16.0);
            EXPECT_NEAR(pe(pos, 2 * i), std::sin(angle), 1e-6);
            EXPECT_NEAR(pe(pos, 2 * i + 1), std::cos(angle), 1e-6);
        }
    EXPECT_EQ(pe(0, 0), 0.0f);
    EXPECT_EQ(pe(0, 1), 1.0f);
    // odd width: the last column is a sine
    EXPECT_NEAR(sinusoidalEncoding(3, 5)(2, 4), std::sin(2 / std::pow(10000.0, 4.0 / 5.0)), 1e-6);
}

TEST(Embedding, XavierScale) {
    const Mat w = xavierMatrix(256, 256, 64, 1, "W_Q");
    const double expected = std::sqrt(2.0 / (256 + 64));
    const double rms = std::sqrt(w.squaredNorm() / w.size());
    EXPECT_NEAR(rms, expected, 0.03 * expected);
    EXPECT_EQ(w, xavierMatrix(256, 256, 64, 1, "W_Q"));
    EXPECT_NE(w, xavierMatrix(256, 256, 64, 1, "W_K"));
}
