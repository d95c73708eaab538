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

// kVocab as a tokenizer.json, with `normalizer` and `post` in place of BERT's.
std::string tokenizerJson(
    const std::string& normalizer = R"({"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
                                                               "strip_accents": null, "lowercase": true})",
    const std::string& post = R"({"type": "TemplateProcessing",
      "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
      "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "[SEP]", "type_id": 0}},
               {"Sequence": {"id": "B", "type_id": 1}}, {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
      "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [2], "tokens": ["[CLS]"]}, "[SEP]": {"id": "[SEP]", "ids": [3], "tokens": ["[SEP]"]}}})",
    const std::string& model =
        R"("type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 100)",
    const std::string& added = R"([{"id": 0, "content": "[PAD]", "special": true, "normalized": false},
      {"id": 1, "content": "[UNK]", "special": true}, {"id": 2, "content": "[CLS]", "special": true},
      {"id": 3, "content": "[SEP]", "special": true}, {"id": 4, "content": "[MASK]", "special": true}])") {
    std::string vocab;
    int id = 0;
    for (std::size_t at = 0; kVocab[at] != '\0';) {
        const std::string_view rest(kVocab + at);
        const std::size_t end = rest.find('\n');
        vocab += (id ? ", \"" : "\"") + std::string(rest.substr(0, end)) + "\": " + std::to_string(id);
        ++id;
        at += end + 1;
    }
    return R"({"version": "1.0", "truncation": null, "padding": null, "added_tokens": )" + added + R"(, "normalizer": )" + normalizer +
           R"(, "pre_tokenizer": {"type": "BertPreTokenizer"}, "post_processor": )" + post + R"(, "model": {)" + model + R"(, "vocab": {)" +
           vocab + "}}}";
}

TEST(WordPiece, ReadsBertsTokenizerJsonAsItsVocabTxt) {
    const WordPiece fromJson = WordPiece::fromTokenizerJsonText(tokenizerJson(), "tokenizer.json");
    const WordPiece fromTxt = vocab();
    EXPECT_EQ(fromJson.vocabSize(), 29);
    EXPECT_EQ(fromJson.token(20), "##berries");
    for (const char* text : {"The cats sat!", "unaffable CAFÉ 中国", "the[MASK]cat «the»", "catx ab"}) {
        EXPECT_EQ(fromJson.encode(text).ids, fromTxt.encode(text).ids) << text;
        EXPECT_EQ(fromJson.encode(text, "sat").typeIds, fromTxt.encode(text, "sat").typeIds) << text;
    }
    // The normalizer's switches are read: cased, accents kept.
    const WordPiece cased = WordPiece::fromTokenizerJsonText(
        tokenizerJson(
            R"({"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": false, "lowercase": false})"),
        "t.json");
    EXPECT_EQ(cased.normalize("Café"), "Café");
    EXPECT_EQ(cased.words("The cat"), (Ids{1, 6}));
    // No normalizer: the text as it is.
    EXPECT_EQ(WordPiece::fromTokenizerJsonText(tokenizerJson("null"), "t.json").normalize("Café\xE2\x80\x8B"), "Café\xE2\x80\x8B");
    // BertProcessing gives the same template.
    const WordPiece processing = WordPiece::fromTokenizerJsonText(
        tokenizerJson(R"({"type": "BertNormalizer"})", R"({"type": "BertProcessing", "sep": ["[SEP]", 3], "cls": ["[CLS]", 2]})"),
        "t.json");
    EXPECT_EQ(processing.encode("the cat", "sat").ids, (Ids{2, 5, 6, 3, 8, 3}));
    EXPECT_EQ(processing.encode("the cat", "sat").typeIds, (Ids{0, 0, 0, 0, 1, 1}));
    // A shorter word limit from the model.
    const WordPiece shortWords = WordPiece::fromTokenizerJsonText(
        tokenizerJson(R"({"type": "BertNormalizer"})", R"({"type": "BertProcessing", "sep": ["[SEP]", 3], "cls": ["[CLS]", 2]})",
                      R"("type": "WordPiece", "max_input_chars_per_word": 3)"),
        "t.json");
    EXPECT_EQ(shortWords.words("cat cats"), (Ids{6, 1}));
}

TEST(WordPiece, TokenizerJsonsItDoesNotReadAreRefusedByField) {
    const std::string bert = R"({"type": "BertNormalizer"})";
    const std::string template_ = R"({"type": "BertProcessing", "sep": ["[SEP]", 3], "cls": ["[CLS]", 2]})";
    const auto error = [](const std::string& json) { return errorOf([&] { WordPiece::fromTokenizerJsonText(json, "t.json"); }); };
    EXPECT_EQ(error(tokenizerJson(bert, template_, R"("type": "BPE")")), "t.json: model.type: \"BPE\" is not read (only \"WordPiece\" is)");
    EXPECT_EQ(error(tokenizerJson(bert, template_, R"("type": "WordPiece", "continuing_subword_prefix": "@@")")),
              "t.json: model.continuing_subword_prefix: \"@@\" is not read (only \"##\" is)");
    EXPECT_EQ(error(tokenizerJson(bert, template_, R"("type": "WordPiece", "unk_token": "<unk>")")),
              "t.json: model.unk_token: '<unk>' is not in model.vocab");
    EXPECT_EQ(error(tokenizerJson(R"({"type": "NFC"})", template_)),
              "t.json: normalizer.type: \"NFC\" is not read (only \"BertNormalizer\" is)");
    EXPECT_EQ(
        error(tokenizerJson(bert, R"({"type": "RobertaProcessing"})")),
        "t.json: post_processor.type: \"RobertaProcessing\" is not read (only BERT's template, \"TemplateProcessing\" or \"BertProcessing\", is)");
    EXPECT_EQ(error(tokenizerJson(bert, R"({"type": "TemplateProcessing", "single": [{"Sequence": {"id": "A"}}], "pair": []})")),
              "t.json: post_processor: only BERT's template is read: [CLS] $A:0 [SEP]:0, and [CLS] $A:0 [SEP]:0 $B:1 [SEP]:1");
    EXPECT_EQ(error(tokenizerJson(bert, R"({"type": "BertProcessing", "sep": ["[SEP]", 4], "cls": ["[CLS]", 2]})")),
              "t.json: post_processor.sep: token '[SEP]' is not model.vocab's id 4");
    EXPECT_EQ(error(tokenizerJson(bert, template_, R"("type": "WordPiece")", R"([{"id": 4, "content": "[MASK]", "normalized": true}])")),
              "t.json: added_tokens[0].normalized: true is not read (only false is)");
    EXPECT_EQ(error(tokenizerJson(bert, template_, R"("type": "WordPiece")", R"([{"id": 7, "content": "[MASK]"}])")),
              "t.json: added_tokens[0]: token '[MASK]' is not model.vocab's id 7");
    EXPECT_EQ(error(tokenizerJson(bert, template_, R"("type": "WordPiece", "max_input_chars_per_word": 0)")),
              "t.json: model.max_input_chars_per_word: expected a whole number of at least 1, got 0");
    // Ids are the tokens' places: one past the end, or given twice, is refused.
    std::string gap = tokenizerJson(bert, template_);
    gap.replace(gap.find("\"##c\": 28"), 9, "\"##c\": 29");
    EXPECT_EQ(error(gap), "t.json: model.vocab: token '##c': id 29 outside 0 … 28 (ids are the tokens' places)");
    EXPECT_EQ(error("[1, 2]"), "t.json: expected a tokenizer object with \"model\", got an array of 2 items");
}

}  // namespace
}  // namespace attnviz::core
