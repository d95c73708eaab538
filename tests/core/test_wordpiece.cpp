// BERT's WordPiece (core/text/wordpiece.hpp) on a hand-made vocabulary whose ids are derived here
// by hand from the tokenizers library's rules: BertNormalizer (control characters, White_Space,
// CJK ideographs, accents, lower case), BertPreTokenizer (whitespace, punctuation), the greedy
// longest match with "##", the word length limit, [UNK] for a whole word, specials in the raw
// text, the sentence pair's template, and each loading error's one line. bert-base-uncased's real
// vocabulary is tests/oracle/test_wordpiece.py.
#include "core/base/error.hpp"
#include "core/text/wordpiece.hpp"
#include "tests/input_errors.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace attnviz::core {
namespace {

// Ids by line: [PAD] 0, [UNK] 1, [CLS] 2, [SEP] 3, [MASK] 4, the 5, cat 6, ##s 7, sat 8, ! 9,
// un 10, ##aff 11, ##able 12, cafe 13, 中 14, 国 15, "," 16, « 17, » 18, straw 19, ##berries 20,
// i 21, ##cat 22, σοφια 23, ##σ 24, a 25, ##b 26, ab 27, ##c 28.
const char* const kVocab =
    "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\ncat\n##s\nsat\n!\nun\n##aff\n##able\ncafe\n中\n国\n,\n«\n»\nstraw\n##berries\ni\n##cat\n"
    "σοφια\n##σ\na\n##b\nab\n##c\n";

WordPiece vocab(const WordPieceOptions& options = {}) { return WordPiece::fromVocabText(kVocab, "vocab.txt", options); }

using Ids = std::vector<int>;
using testfs::errorOf;

TEST(WordPiece, ReadsTheVocabularyByLine) {
    const WordPiece w = vocab();
    EXPECT_EQ(w.vocabSize(), 29);
    EXPECT_EQ(w.unkId(), 1);
    EXPECT_EQ(w.clsId(), 2);
    EXPECT_EQ(w.sepId(), 3);
    EXPECT_EQ(w.maskId(), 4);
    EXPECT_EQ(w.token(20), "##berries");
    EXPECT_EQ(w.idOf("中"), 14);
    EXPECT_FALSE(w.idOf("dog").has_value());
    // CRLF lines are trimmed; a token given twice takes the later line's id.
    const WordPiece crlf = WordPiece::fromVocabText("[UNK]\r\n[CLS]\r\n[SEP]\r\nx\r\nx\r\n", "vocab.txt", {});
    EXPECT_EQ(crlf.idOf("[CLS]"), 1);
    EXPECT_EQ(crlf.idOf("x"), 4);
    EXPECT_EQ(crlf.words("x"), Ids{4});
}

TEST(WordPiece, SplitsWordsAndPunctuationAndMatchesTheLongestPiece) {
    const WordPiece w = vocab();
    EXPECT_EQ(w.preTokens("The cats sat!"), (std::vector<std::string>{"the", "cats", "sat", "!"}));
    EXPECT_EQ(w.words("The cats sat!"), (Ids{5, 6, 7, 8, 9}));
    EXPECT_EQ(w.words("unaffable"), (Ids{10, 11, 12}));
    EXPECT_EQ(w.words("  straw,berries "), (Ids{19, 16, 1}));  // "berries" starts no word
    EXPECT_EQ(w.words("strawberries"), (Ids{19, 20}));
    // Longest first: "abc" is ab ##c, not a ##b ##c.
    EXPECT_EQ(w.words("abc"), (Ids{27, 28}));
    // A word with a rest no entry starts is [UNK] whole, not cat [UNK].
    EXPECT_EQ(w.words("catx"), Ids{1});
    EXPECT_EQ(w.words("the catx sat"), (Ids{5, 1, 8}));
    // Unicode punctuation is a word of its own.
    EXPECT_EQ(w.words("«the»"), (Ids{17, 5, 18}));
    EXPECT_EQ(w.words(""), Ids{});
}

TEST(WordPiece, TheLengthLimitCountsCharactersNotBytes) {
    const WordPiece w = vocab();
    // ab then ##b: 100 characters are read, 101 are [UNK].
    std::string word = "ab" + std::string(98, 'b');
    ASSERT_EQ(word.size(), 100u);
    Ids want{27};
    want.insert(want.end(), 98, 26);
    EXPECT_EQ(w.words(word), want);
    EXPECT_EQ(w.words(word + "b"), Ids{1});
    // 100 two-byte characters: σοφια then ##σ × 95 is 100 characters, 200 bytes.
    std::string greek = "σοφια";
    for (int i = 0; i < 95; ++i) greek += "σ";
    Ids greekIds{23};
    greekIds.insert(greekIds.end(), 95, 24);
    EXPECT_EQ(w.words(greek), greekIds);
    EXPECT_EQ(w.words(greek + "σ"), Ids{1});
    WordPieceOptions shortWords;
    shortWords.maxInputCharsPerWord = 3;
    EXPECT_EQ(vocab(shortWords).words("cat cats"), (Ids{6, 1}));
}

TEST(WordPiece, NormalizesAsBertNormalizerDoes) {
    const WordPiece w = vocab();
    // Accents stripped (precomposed or not) and lower case.
    EXPECT_EQ(w.normalize("Café"), "cafe");
    EXPECT_EQ(w.words("CAFÉ"), Ids{13});
    EXPECT_EQ(w.words("Cafe\xCC\x81"), Ids{13});  // e + U+0301
    // Greek: Ί is Ι + U+0301 stripped; each Σ alone lower-cases to σ (no final ς).
    EXPECT_EQ(w.normalize("ΣΟΦΊΑΣ"), "σοφιασ");
    EXPECT_EQ(w.words("ΣΟΦΊΑ"), Ids{23});
    // CJK ideographs are words of their own.
    EXPECT_EQ(w.normalize("中国"), " 中  国 ");
    EXPECT_EQ(w.words("中国"), (Ids{14, 15}));
    // Control characters dropped (U+0000, U+FFFD, a format character U+200B); tab, newline and
    // White_Space (U+00A0, U+3000) are spaces.
    EXPECT_EQ(w.words(std::string("the\0cat", 7)), (Ids{5, 22}));
    EXPECT_EQ(w.words("the\xEF\xBF\xBD"
                      "cat"),
              (Ids{5, 22}));
    EXPECT_EQ(w.words("the\xE2\x80\x8B"
                      "cat"),
              (Ids{5, 22}));
    EXPECT_EQ(w.words("the\tcat\nsat\xC2\xA0!\xE3\x80\x80i"), (Ids{5, 6, 8, 9, 21}));
    // Invalid UTF-8 is U+FFFD, dropped.
    EXPECT_EQ(w.words("the\xFF"
                      "cat"),
              (Ids{5, 22}));
}

TEST(WordPiece, OptionsTurnEachStepOff) {
    WordPieceOptions cased;
    cased.lowercase = false;
    EXPECT_EQ(vocab(cased).words("The cat"), (Ids{1, 6}));
    EXPECT_EQ(vocab(cased).normalize("Café"), "Café");  // accents follow lower case
    WordPieceOptions accents;
    accents.stripAccents = false;
    EXPECT_EQ(vocab(accents).normalize("Café"), "café");
    EXPECT_EQ(vocab(accents).words("café"), Ids{1});
    WordPieceOptions casedStripped;
    casedStripped.lowercase = false;
    casedStripped.stripAccents = true;
    EXPECT_EQ(vocab(casedStripped).normalize("Café"), "Cafe");
    WordPieceOptions noChinese;
    noChinese.chineseChars = false;
    EXPECT_EQ(vocab(noChinese).words("中国"), Ids{1});  // one word; ##国 is no entry
    WordPieceOptions raw;
    raw.cleanText = false;
    EXPECT_EQ(vocab(raw).words("the\xE2\x80\x8B"
                               "cat"),
              Ids{1});  // U+200B kept inside the word
}

TEST(WordPiece, SpecialsInTheTextAreTheirOwnIds) {
    const WordPiece w = vocab();
    EXPECT_EQ(w.words("[MASK] sat"), (Ids{4, 8}));
    EXPECT_EQ(w.words("the[MASK]cat"), (Ids{5, 4, 6}));
    EXPECT_EQ(w.words("[CLS][SEP][MASK][MASK]"), (Ids{2, 3, 4, 4}));
    // Matched before normalization: a lower-case [mask] is punctuation and words.
    EXPECT_EQ(w.words("[mask]"), (Ids{1, 1, 1}));
}

TEST(WordPiece, EncodesOneSentenceOrAPairWithTokenTypes) {
    const WordPiece w = vocab();
    const WordPiece::Encoding one = w.encode("The cats sat!");
    EXPECT_EQ(one.ids, (Ids{2, 5, 6, 7, 8, 9, 3}));
    EXPECT_EQ(one.typeIds, Ids(7, 0));
    const WordPiece::Encoding pair = w.encode("the cat", "sat!");
    EXPECT_EQ(pair.ids, (Ids{2, 5, 6, 3, 8, 9, 3}));
    EXPECT_EQ(pair.typeIds, (Ids{0, 0, 0, 0, 1, 1, 1}));
    EXPECT_EQ(w.encode("", "").ids, (Ids{2, 3, 3}));
}

TEST(WordPiece, BadVocabulariesAreRefusedInOneLine) {
    EXPECT_EQ(errorOf([] { WordPiece::fromVocabText("[CLS]\n[SEP]\nthe\n", "v.txt", {}); }),
              "v.txt: no [UNK] token: not a BERT vocabulary");
    EXPECT_EQ(errorOf([] { WordPiece::fromVocabText("[UNK]\n[SEP]\n", "v.txt", {}); }), "v.txt: no [CLS] token: not a BERT vocabulary");
    EXPECT_EQ(errorOf([] { WordPiece::fromVocabText("[UNK]\n[CLS]\n[SEP]\nca\xFF\n", "v.txt", {}); }), "v.txt: line 4: not UTF-8");
    EXPECT_EQ(errorOf([] { WordPiece::fromVocabText("[UNK]\n[CLS]\n[SEP]\n" + std::string(1025, 'x') + "\n", "v.txt", {}); }),
              "v.txt: line 4: a token of over 1024 bytes");
    WordPieceOptions zero;
    zero.maxInputCharsPerWord = 0;
    EXPECT_EQ(errorOf([&] { WordPiece::fromVocabText(kVocab, "v.txt", zero); }), "v.txt: max_input_chars_per_word must be at least 1");
    EXPECT_NE(errorOf([] { WordPiece::fromVocabTxt("/nonexistent/vocab.txt", {}); }).find("/nonexistent/vocab.txt"), std::string::npos);
}

}  // namespace
}  // namespace attnviz::core
