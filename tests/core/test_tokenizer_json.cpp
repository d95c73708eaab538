// tokenizer.json beyond GPT-2 (core/text/tokenizer_json.cpp): tiny files of each kind with ids
// derived by hand. Byte-level with a Split pattern and ignore_merges (Llama 3), NFC (Qwen), the
// SentencePiece-style BPE with byte fallback and <unk> (Llama 2, Mistral 7B), Metaspace, added
// tokens with lstrip / rstrip / single_word, TemplateProcessing's BOS, and every refusal by name.
#include "core/text/byte_bpe.hpp"
#include "tests/input_errors.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace {

using attnviz::core::ByteBpe;
using attnviz::core::byteTokenLabel;
using attnviz::testfs::errorOf;
using nlohmann::json;
using Ids = std::vector<int>;

std::string utf8(char32_t cp) {
    std::string s;
    if (cp < 0x80) s += static_cast<char>(cp);
    else if (cp < 0x800) s += static_cast<char>(0xC0 | (cp >> 6)), s += static_cast<char>(0x80 | (cp & 0x3F));
    else
        s += static_cast<char>(0xE0 | (cp >> 12)), s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F)),
            s += static_cast<char>(0x80 | (cp & 0x3F));
    return s;
}

// A byte-level tokenizer: the 256 byte symbols at their byte's id (GPT-2's table), then `extra`
// from 256 on.
json byteLevel(const std::vector<std::string>& extra, const json& merges, const json& pre) {
    json vocab = json::object();
    for (int b = 0; b < 256; ++b) vocab[utf8(ByteBpe::byteToUnicode(static_cast<unsigned char>(b)))] = b;
    for (std::size_t i = 0; i < extra.size(); ++i) vocab[extra[i]] = 256 + i;
    return {{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}}}, {"pre_tokenizer", pre}};
}

json byteLevelOnly(bool useRegex) { return {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", useRegex}}; }

json split(const std::string& regex) {
    return {{"type", "Split"}, {"pattern", {{"Regex", regex}}}, {"behavior", "Isolated"}, {"invert", false}};
}

ByteBpe load(const json& j) { return ByteBpe::fromTokenizerJsonText(j.dump(), "t.json"); }
std::string refusal(const json& j) {
    return errorOf([&] { load(j); });
}

const std::string kSpace = "\u2581";

// The SentencePiece-style layout of Llama 2's tokenizer.json: <unk> <s> </s>, the 256 byte tokens
// <0x00> … <0xFF> (ids 3 … 258), then ▁ a b ▁a ▁ab (259 … 263); merges "▁ a" then "▁a b".
json sentencePiece(bool byteFallback = true) {
    json vocab = {{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}};
    for (int b = 0; b < 256; ++b) {
        char hex[8];
        std::snprintf(hex, sizeof hex, "<0x%02X>", b);
        vocab[hex] = 3 + b;
    }
    vocab[kSpace] = 259, vocab["a"] = 260, vocab["b"] = 261, vocab[kSpace + "a"] = 262, vocab[kSpace + "ab"] = 263;
    json added = json::array();
    for (int id = 0; id < 3; ++id)
        added.push_back({{"id", id}, {"content", id == 0 ? "<unk>" : id == 1 ? "<s>" : "</s>"}, {"special", true}, {"normalized", false}});
    return {{"added_tokens", added},
            {"normalizer",
             {{"type", "Sequence"},
              {"normalizers",
               {{{"type", "Prepend"}, {"prepend", kSpace}}, {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", kSpace}}}}}},
            {"pre_tokenizer", nullptr},
            {"post_processor",
             {{"type", "TemplateProcessing"},
              {"single", {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
              {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}}}}}},
            {"model",
             {{"type", "BPE"},
              {"vocab", vocab},
              {"merges", {kSpace + " a", kSpace + "a b"}},
              {"unk_token", "<unk>"},
              {"fuse_unk", true},
              {"byte_fallback", byteFallback}}}};
}

TEST(TokenizerJson, SplitPatternFromTheFileCutsThePieces) {
    // digits in pairs; merges "2 3" (rank 0) and "3 4" (rank 1): one piece "12345" would merge 23
    const json j =
        byteLevel({"23", "34"}, {"2 3", "3 4"},
                  {{"type", "Sequence"}, {"pretokenizers", {split(R"(\p{L}+|\p{N}{1,2}|\s+|[^\s\p{L}\p{N}]+)"), byteLevelOnly(false)}}});
    const ByteBpe bpe = load(j);
    EXPECT_EQ(bpe.pieces("ab 12345"), (std::vector<std::string>{"ab", " ", "12", "34", "5"}));
    EXPECT_EQ(bpe.encode("12345"), (Ids{'1', '2', 257, '5'}));
    // \s is Unicode's White_Space, as in the Rust and Oniguruma patterns: U+180E is not one of them
    EXPECT_EQ(bpe.pieces("a\u180Eb").size(), 3u);  // a, U+180E (not \s: [^\s\p{L}\p{N}]), b
    EXPECT_EQ(bpe.pieces("a\u180E\u2003").size(), 3u);
    EXPECT_EQ(bpe.pieces("x\u2003\u2003y"), (std::vector<std::string>{"x", "\u2003\u2003", "y"}));
    // what no alternative takes is a piece too (Isolated keeps the gaps)
    const ByteBpe letters =
        load(byteLevel({}, json::array(), {{"type", "Sequence"}, {"pretokenizers", {split(R"(\p{L}+)"), byteLevelOnly(false)}}}));
    EXPECT_EQ(letters.pieces("ab, cd"), (std::vector<std::string>{"ab", ", ", "cd"}));
    EXPECT_EQ(letters.pieces("ab\xff\xfe"), (std::vector<std::string>{"ab", "\xff", "\xfe"}));
}

// A Split's behavior, as Hugging Face's tokenizers documents it on "the-final--countdown": a
// match joined to the stretch before it (Gemma's pre-tokenizer) or after it, when that is not a
// match itself.
TEST(TokenizerJson, SplitBehaviorsJoinAMatchToItsNeighbour) {
    const auto with = [](const std::string& behavior) {
        json s = split("-");
        s["behavior"] = behavior;
        return load(byteLevel({}, json::array(), {{"type", "Sequence"}, {"pretokenizers", {s, byteLevelOnly(false)}}}));
    };
    using Pieces = std::vector<std::string>;
    EXPECT_EQ(with("Isolated").pieces("the-final--countdown"), (Pieces{"the", "-", "final", "-", "-", "countdown"}));
    EXPECT_EQ(with("MergedWithPrevious").pieces("the-final--countdown"), (Pieces{"the-", "final-", "-", "countdown"}));
    EXPECT_EQ(with("MergedWithNext").pieces("the-final--countdown"), (Pieces{"the", "-final", "-", "-countdown"}));
    EXPECT_EQ(with("MergedWithPrevious").pieces("-a-"), (Pieces{"-", "a-"}));
    EXPECT_EQ(with("MergedWithNext").pieces("-a-"), (Pieces{"-a", "-"}));
}

// tokenizer.json's merges as Hugging Face applies them, one at a time, the lowest-ranked first: a
// merge ranked before the one that makes its parts (Gemma's runs of "▁") takes the leftmost run as
// soon as it exists. GPT-2's vocab.json + merges.txt keep encoder.py's rounds (test_byte_bpe.cpp).
TEST(TokenizerJson, MergesApplyOneAtATimeLowestRankFirst) {
    const ByteBpe runs = load(byteLevel({"aa", "aaa"}, {"aa a", "a a"}, byteLevelOnly(false)));
    EXPECT_EQ(runs.encode("aaaa"), (Ids{257, 'a'}));  // rounds would give aa aa
    EXPECT_EQ(runs.encode("aaaaaa"), (Ids{257, 257}));
    const ByteBpe pairs = load(byteLevel({"ab", "aba"}, {"ab a", "a b"}, byteLevelOnly(false)));
    EXPECT_EQ(pairs.encode("abab"), (Ids{257, 'b'}));  // rounds would give ab ab
}

// A plain added token spelled as the vocabulary's own symbol, which the merges also make (Gemma
// lists its runs of "▁" so): the text's spelling is cut out whole, and the token stands for the
// bytes the merges make it of.
TEST(TokenizerJson, APlainAddedTokenMayBeTheVocabularysOwnSymbol) {
    json j = sentencePiece();
    j["model"]["vocab"][kSpace + kSpace] = 264;
    j["model"]["merges"].push_back(kSpace + " " + kSpace);
    j["added_tokens"].push_back({{"id", 264}, {"content", kSpace + kSpace}, {"special", false}, {"normalized", false}});
    const ByteBpe bpe = load(j);
    EXPECT_EQ(bpe.decode({264}), "  ");
    EXPECT_EQ(bpe.encode("a  b"), (Ids{1, 262, 264, 261}));  // ▁a ▁▁ b
    const Ids written = bpe.encode("a" + kSpace + kSpace);
    EXPECT_EQ(written.back(), 264);
    // marked special, it stands for its text, which the merges make of other bytes: refused
    j["added_tokens"].back()["special"] = true;
    EXPECT_EQ(refusal(j),
              "t.json: added_tokens[3]: the added token '" + kSpace + kSpace + "' is also a symbol the merges make, of other bytes");
}

TEST(TokenizerJson, IgnoreMergesTakesAPieceFoundWhole) {
    // "abc" is a token, but the merges make "ab" + "c" of it
    json j = byteLevel({"ab", "abc", "bc"}, {"a b", "b c"}, byteLevelOnly(true));
    EXPECT_EQ(load(j).encode("abc"), (Ids{256, 'c'}));
    j["model"]["ignore_merges"] = true;
    EXPECT_EQ(load(j).encode("abc"), (Ids{257}));
    EXPECT_EQ(load(j).encode("abcc"), (Ids{256, 'c', 'c'}));  // not whole: merged as before
}

TEST(TokenizerJson, NfcBeforeTheBytes) {
    json j = byteLevel({"\u00C3\u00A9"}, {"\u00C3 \u00A9"}, byteLevelOnly(false));  // é's bytes C3 A9 as one token
    j["normalizer"] = {{"type", "NFC"}};
    j["added_tokens"] = {{{"id", 257}, {"content", "<t>"}, {"special", false}}};
    const ByteBpe bpe = load(j);
    EXPECT_EQ(bpe.encode("cafe\u0301"), (Ids{'c', 'a', 'f', 256}));
    EXPECT_EQ(bpe.encode("caf\u00e9"), bpe.encode("cafe\u0301"));
    EXPECT_EQ(bpe.decode(bpe.encode("cafe\u0301")), "caf\u00e9");
    // each stretch between added tokens alone: a mark after <t> has nothing to join
    EXPECT_EQ(bpe.encode("e<t>\u0301"), (Ids{'e', 257, 0xCC, 0x81}));
    // invalid bytes stay, the valid runs beside them normalised apart
    EXPECT_EQ(bpe.decode(bpe.encode("\xff"
                                    "e\u0301\xe6\x97")),
              "\xff\u00e9\xe6\x97");
    EXPECT_FALSE(bpe.bosId().has_value());
    EXPECT_FALSE(bpe.isSpecial(257));
}

TEST(TokenizerJson, SentencePieceCharactersWithByteFallback) {
    const ByteBpe bpe = load(sentencePiece());
    EXPECT_EQ(bpe.bosId(), 1);
    EXPECT_EQ(bpe.encode("ab"), (Ids{1, 263}));                          // ▁ab: "▁ a" then "▁a b"
    EXPECT_EQ(bpe.encode("a b"), (Ids{1, 262, 259, 261}));               // ▁a ▁ b
    EXPECT_EQ(bpe.encode(""), (Ids{1}));                                 // Prepend leaves the empty text empty
    EXPECT_EQ(bpe.encode("\u00e9"), (Ids{1, 259, 3 + 0xC3, 3 + 0xA9}));  // é is no token: its bytes
    EXPECT_EQ(bpe.encode("\n"), (Ids{1, 259, 3 + 0x0A}));
    EXPECT_EQ(bpe.encode("a\xff"), (Ids{1, 262, 3 + 0xFF}));  // an invalid byte falls back to itself
    EXPECT_EQ(bpe.decode({262, 3 + 0xFF}), " a\xff");
    // <s> in the text is the token; each stretch after it gets its own ▁
    EXPECT_EQ(bpe.encode("<s>ab</s>b"), (Ids{1, 1, 263, 2, 259, 261}));
    // what tokens stand for: ▁ a space, <0x0A> its byte, added tokens their text
    EXPECT_EQ(bpe.tokenBytes(263), " ab");
    EXPECT_EQ(bpe.tokenBytes(259), " ");
    EXPECT_EQ(bpe.tokenBytes(3 + 0x0A), "\n");
    EXPECT_EQ(bpe.tokenText(3 + 0x0A), "<0x0A>");
    EXPECT_EQ(bpe.tokenBytes(1), "<s>");
    EXPECT_EQ(byteTokenLabel(bpe.tokenBytes(263)), "\u2423ab");
    EXPECT_EQ(byteTokenLabel(bpe.tokenBytes(3 + 0xC3)), "\u27E8C3\u27E9");
    EXPECT_TRUE(bpe.isSpecial(0) && bpe.isSpecial(1) && bpe.isSpecial(2));
    EXPECT_FALSE(bpe.isSpecial(263));
    EXPECT_FALSE(bpe.isSpecial(100000));
    // one long word: merged in O(n log n), one token a pair
    std::string word;
    for (int i = 0; i < 100000; ++i) word += "ab";
    EXPECT_EQ(bpe.encode(word).size(), 1u + 1u + 2u * 99999u + 0u);  // <s>, ▁ab, then a b a b …
}

TEST(TokenizerJson, UnknownCharactersWithoutByteFallback) {
    json j = sentencePiece(false);
    EXPECT_EQ(load(j).encode("\u00e9\u00e9a"), (Ids{1, 259, 0, 260}));  // fused into one <unk>
    j["model"]["fuse_unk"] = false;
    EXPECT_EQ(load(j).encode("\u00e9\u00e9a"), (Ids{1, 259, 0, 0, 260}));
    j["model"]["unk_token"] = nullptr;
    EXPECT_EQ(load(j).encode("\u00e9\u00e9a"), (Ids{1, 262}));  // dropped, as Hugging Face's BPE does: ▁ and a then merge
}

TEST(TokenizerJson, Metaspace) {
    json j = sentencePiece();
    j["normalizer"] = nullptr;
    j["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", kSpace}, {"prepend_scheme", "first"}, {"split", false}};
    const ByteBpe first = load(j);
    EXPECT_EQ(first.encode("a b"), (Ids{1, 262, 259, 261}));
    EXPECT_EQ(first.encode("<s>a"), (Ids{1, 1, 260}));  // not the first stretch of the text: no ▁
    EXPECT_EQ(first.tokenBytes(262), " a");
    j["pre_tokenizer"]["prepend_scheme"] = "always";
    EXPECT_EQ(load(j).encode("<s>a"), (Ids{1, 1, 262}));
    EXPECT_EQ(load(j).encode(" a"), (Ids{1, 262}));  // already starts with ▁: none added
    j["pre_tokenizer"]["split"] = true;
    EXPECT_EQ(load(j).pieces("ab b"), (std::vector<std::string>{kSpace + "ab", kSpace + "b"}));
}

TEST(TokenizerJson, AddedTokensStripAndStandAlone) {
    json j = byteLevel({}, json::array(), byteLevelOnly(true));
    j["added_tokens"] = {{{"id", 300}, {"content", "<m>"}, {"lstrip", true}, {"rstrip", true}, {"special", true}},
                         {{"id", 301}, {"content", "cat"}, {"single_word", true}},
                         {{"id", 302}, {"content", "<m>x"}}};
    const ByteBpe bpe = load(j);
    EXPECT_EQ(bpe.encode("y <m>  z"), (Ids{'y', 300, 'z'}));
    EXPECT_EQ(bpe.encode("y <m>x"), (Ids{'y', ' ', 302}));  // the longest at a place, no strip
    EXPECT_EQ(bpe.encode("cat concat cat."), (Ids{301, ' ', 'c', 'o', 'n', 'c', 'a', 't', ' ', 301, '.'}));
    EXPECT_EQ(bpe.encode("cats"), (Ids{'c', 'a', 't', 's'}));
    EXPECT_TRUE(bpe.isSpecial(300));
    EXPECT_FALSE(bpe.isSpecial(301));
    // without the flags the white space stays text
    j["added_tokens"][0]["lstrip"] = false, j["added_tokens"][0]["rstrip"] = false;
    EXPECT_EQ(load(j).encode("y <m>  z"), (Ids{'y', ' ', 300, ' ', ' ', 'z'}));
}

TEST(TokenizerJson, TemplateProcessingPutsItsTokensAround) {
    json j = byteLevel({}, json::array(), byteLevelOnly(true));
    j["added_tokens"] = {{{"id", 300}, {"content", "<|begin_of_text|>"}, {"special", true}},
                         {{"id", 301}, {"content", "<|end|>"}, {"special", true}}};
    const json single = {{{"SpecialToken", {{"id", "<|begin_of_text|>"}}}}, {{"Sequence", {{"id", "A"}}}}};
    const json tokens = {{"<|begin_of_text|>", {{"ids", {300}}}}, {"<|end|>", {{"ids", {301}}}}};
    j["post_processor"] = {
        {"type", "Sequence"},
        {"processors", {{{"type", "ByteLevel"}}, {{"type", "TemplateProcessing"}, {"single", single}, {"special_tokens", tokens}}}}};
    EXPECT_EQ(load(j).encode("a"), (Ids{300, 'a'}));
    EXPECT_EQ(load(j).encode(""), (Ids{300}));
    EXPECT_EQ(load(j).bosId(), 300);
    j["post_processor"]["processors"][1]["single"].push_back({{"SpecialToken", {{"id", "<|end|>"}}}});
    EXPECT_EQ(load(j).encode("a<|begin_of_text|>"), (Ids{300, 'a', 300, 301}));
    j["post_processor"] = {{"type", "ByteLevel"}};
    EXPECT_EQ(load(j).encode("a"), (Ids{'a'}));
    EXPECT_FALSE(load(j).bosId().has_value());
}

TEST(TokenizerJson, RefusalsNameTheFieldAndTheValue) {
    const json base = byteLevel({}, json::array(), byteLevelOnly(true));
    const auto with = [&](const char* key, const json& value) {
        json j = base;
        j[key] = value;
        return refusal(j);
    };
    const json removed = {{"type", "Sequence"},
                          {"pretokenizers", {{{"type", "Split"}, {"pattern", {{"Regex", "a"}}}, {"behavior", "Removed"}}}}};
    EXPECT_EQ(with("pre_tokenizer", removed),
              "t.json: pre_tokenizer.pretokenizers[0].behavior: \"Removed\" is not read (Isolated, MergedWithPrevious and MergedWithNext "
              "are)");
    const json afterBytes = {{"type", "Sequence"}, {"pretokenizers", {byteLevelOnly(false), split("a")}}};
    EXPECT_EQ(with("pre_tokenizer", afterBytes),
              "t.json: pre_tokenizer.pretokenizers[1]: an object of 4 keys is not read (nothing is read after ByteLevel)");
    const json broken = {{"type", "Sequence"}, {"pretokenizers", {split("(a")}}};
    const std::string notCompiled = "t.json: pre_tokenizer.pretokenizers[0].pattern: does not compile under PCRE2: missing closing";
    EXPECT_EQ(with("pre_tokenizer", broken).substr(0, notCompiled.size()), notCompiled);
    const json digits = {{"type", "Digits"}};
    EXPECT_EQ(with("pre_tokenizer", digits),
              "t.json: pre_tokenizer.type: \"Digits\" is not read (Sequence, Split, ByteLevel and Metaspace are)");
    const json regexReplace = {{"type", "Replace"}, {"pattern", {{"Regex", " +"}}}, {"content", " "}};
    EXPECT_EQ(with("normalizer", regexReplace), "t.json: normalizer.pattern: an object of 1 key is not read (only {\"String\": …} is)");
    const json nfkc = {{"type", "NFKC"}};
    EXPECT_EQ(with("normalizer", nfkc), "t.json: normalizer.type: \"NFKC\" is not read (Sequence, NFC, Prepend and Replace are)");
    const json roberta = {{"type", "RobertaProcessing"}};
    EXPECT_EQ(with("post_processor", roberta), "t.json: post_processor.cls: expected [\"token\", id]");
    const json bert = {{"type", "BertProcessing"}};
    EXPECT_EQ(with("post_processor", bert),
              "t.json: post_processor.type: \"BertProcessing\" is not read (Sequence, ByteLevel, "
              "TemplateProcessing and RobertaProcessing are)");
    const json noToken = {{"type", "TemplateProcessing"},
                          {"single", {{{"SpecialToken", {{"id", "<x>"}}}}, {{"Sequence", {{"id", "A"}}}}}},
                          {"special_tokens", {{"<x>", {{"ids", {999}}}}}}};
    EXPECT_EQ(with("post_processor", noToken), "t.json: post_processor.special_tokens: '<x>': the id 999 is no token");
    const json truncation = {{"max_length", 8}};
    EXPECT_EQ(with("truncation", truncation), "t.json: truncation: an object of 1 key is not read (only null is)");
    json fallback = base;
    fallback["model"]["byte_fallback"] = true;
    EXPECT_EQ(refusal(fallback), "t.json: model.byte_fallback: true is not read (not with ByteLevel, whose bytes are all tokens)");
    json normalized = base;
    normalized["normalizer"] = {{"type", "NFC"}};
    normalized["added_tokens"] = {{{"id", 300}, {"content", "<x>"}, {"normalized", true}}};
    EXPECT_EQ(refusal(normalized).substr(0, 62), "t.json: added_tokens[0].normalized: true is not read (an added");
    json metaspace = sentencePiece();
    metaspace["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", {{{"type", "Metaspace"}, {"replacement", kSpace}}, split("a")}}};
    EXPECT_EQ(refusal(metaspace),
              "t.json: pre_tokenizer.pretokenizers[0].type: \"Metaspace\" is not read (Metaspace is read alone, not in a Sequence)");
    json unk = sentencePiece();
    unk["model"]["unk_token"] = "<nope>";
    EXPECT_EQ(refusal(unk), "t.json: model.unk_token: '<nope>' is not in model.vocab");
}

// A pipeline nested deep is refused while the file is parsed: memory, time and stack stay those of
// a 64-deep file whatever the depth (10,000 Sequences once took 1.4 GB, 1,000,000 crashed).
TEST(TokenizerJson, NestingIsBoundedWhileParsing) {
    const std::string base = byteLevel({}, json::array(), byteLevelOnly(true)).dump();
    const auto nested = [&](const char* key, const char* list, int depth) {
        std::string open, close;
        for (int d = 0; d < depth; ++d) open += std::string(R"({"type": "Sequence", ")") + list + "\": [", close += "]}";
        std::string text = base;
        text.insert(1, std::string("\"") + key + "\": " + open + R"({"type": "NFC"})" + close + ", ");
        return errorOf([&] { ByteBpe::fromTokenizerJsonText(text, "t.json"); });
    };
    const std::string deep = "t.json: nested deeper than 64 levels of objects and lists; no file attnviz reads nests so deep";
    EXPECT_EQ(nested("normalizer", "normalizers", 200000), deep);
    EXPECT_EQ(nested("pre_tokenizer", "pretokenizers", 10000), deep);
    EXPECT_EQ(nested("post_processor", "processors", 200000), deep);
    // a few levels, as real files have, are read: the NFC inside is a step like any other
    EXPECT_EQ(nested("normalizer", "normalizers", 20), "(no error)");
}

// Matching is bounded by the text: a pattern that backtracks under PCRE2's per-call limit at each
// position (9.8 s for 500 characters, minutes for 5,000) is refused, naming the file and field.
TEST(TokenizerJson, APatternThatBacktracksIsRefusedWithinTheTextsBudget) {
    const ByteBpe bpe =
        load(byteLevel({}, json::array(), {{"type", "Sequence"}, {"pretokenizers", {split("(?:a|a){1,22}c|a"), byteLevelOnly(false)}}}));
    EXPECT_EQ(bpe.pieces("aaaa c").size(), 5u);  // a, a, a, a, " c": a short text is within its budget
    const std::string refused = errorOf([&] { bpe.pieces(std::string(5000, 'a')); });
    EXPECT_EQ(refused.rfind("t.json: pre_tokenizer.pretokenizers[0].pattern: backtracks: splitting a text of 5000 bytes took more than its "
                            "budget of matching steps",
                            0),
              0u)
        << refused;
    // a real pattern on a long text stays well within it: Llama 3's, on 200 KB of words, digits and spaces
    const ByteBpe llama = load(byteLevel(
        {}, json::array(),
        {{"type", "Sequence"},
         {"pretokenizers",
          {split(R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"),
           byteLevelOnly(false)}}}));
    std::string text;
    while (text.size() < 200000) text += "The cat sat on the mat, 12345 times;   then\n\n it's gone. ";
    std::size_t bytes = 0;
    for (const std::string& p : llama.pieces(text)) bytes += p.size();
    EXPECT_EQ(bytes, text.size());
}

}  // namespace
