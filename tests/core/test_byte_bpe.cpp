// GPT-2's byte-level BPE (core/text/byte_bpe.hpp) on hand-made vocabularies whose ids are derived
// here by hand: the byte table, the pattern's pieces of hard strings, merges by rank (not left to
// right, every occurrence in one round), special tokens, invalid UTF-8, labels, and every loading
// error's one line. GPT-2's real vocabulary against two independent encoders is
// tests/oracle/test_gpt2_tokenizer.py.
#include "core/base/error.hpp"
#include "core/base/prng.hpp"
#include "core/text/byte_bpe.hpp"
#include "core/text/tokenizer.hpp"
#include "tests/input_errors.hpp"
#include "tests/test_folder.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace attnviz::core {
namespace {

// The symbol of byte b as UTF-8 ("Ġ" for a space).
std::string symbol(unsigned char b) {
    std::string s;
    appendUtf8(s, ByteBpe::byteToUnicode(b));
    return s;
}

// A JSON string literal of a token's spelling (the spellings here need no escapes but these).
std::string quoted(const std::string& s) {
    std::string out = "\"";
    for (char c : s) out += c == '"' ? std::string("\\\"") : c == '\\' ? std::string("\\\\") : std::string(1, c);
    return out + "\"";
}

// vocab.json with the 256 byte symbols at ids 0 … 255 (id = the byte) and `extra` from 256 on.
std::string vocabJson(const std::vector<std::string>& extra, int skipByte = -1) {
    std::string json = "{";
    for (int b = 0; b < 256; ++b)
        if (b != skipByte) json += quoted(symbol(static_cast<unsigned char>(b))) + ": " + std::to_string(b) + ", ";
    for (std::size_t i = 0; i < extra.size(); ++i) json += quoted(extra[i]) + ": " + std::to_string(256 + i) + ", ";
    json.erase(json.size() - 2);
    return json + "}";
}

ByteBpe load(const std::vector<std::string>& extra, const std::string& merges) {
    return ByteBpe::fromText(vocabJson(extra), "#version: 0.2\n" + merges, "v.json", "m.txt");
}

// The ids of single bytes: their byte values in these vocabularies.
std::vector<int> bytesOf(const std::string& s) { return {s.begin(), s.end()}; }

using testfs::errorOf;

TEST(ByteBpe, ByteTableIsGpt2s) {
    // printable bytes stand for themselves; the other 68 are U+0100 on, in byte order:
    // 0 … 32 → U+0100 … U+0120, 127 … 160 → U+0121 … U+0142, 173 → U+0143
    EXPECT_EQ(ByteBpe::byteToUnicode(0), U'\u0100');
    EXPECT_EQ(ByteBpe::byteToUnicode(10), U'\u010A');  // 'Ċ', GPT-2's newline
    EXPECT_EQ(ByteBpe::byteToUnicode(32), U'\u0120');  // 'Ġ', GPT-2's space
    EXPECT_EQ(ByteBpe::byteToUnicode(33), U'!');
    EXPECT_EQ(ByteBpe::byteToUnicode(126), U'~');
    EXPECT_EQ(ByteBpe::byteToUnicode(127), U'\u0121');  // 33 bytes (0 … 32) came before
    EXPECT_EQ(ByteBpe::byteToUnicode(160), U'\u0142');  // 33 + 33 (127 … 159) before
    EXPECT_EQ(ByteBpe::byteToUnicode(161), U'¡');
    EXPECT_EQ(ByteBpe::byteToUnicode(172), U'¬');
    EXPECT_EQ(ByteBpe::byteToUnicode(173), U'\u0143');  // the soft hyphen, the last of the 68
    EXPECT_EQ(ByteBpe::byteToUnicode(174), U'®');
    EXPECT_EQ(ByteBpe::byteToUnicode(255), U'ÿ');
    std::set<char32_t> seen;
    int itself = 0;
    for (int b = 0; b < 256; ++b) {
        seen.insert(ByteBpe::byteToUnicode(static_cast<unsigned char>(b)));
        itself += ByteBpe::byteToUnicode(static_cast<unsigned char>(b)) == static_cast<char32_t>(b);
    }
    EXPECT_EQ(seen.size(), 256u);
    EXPECT_EQ(itself, 188);  // 94 + 12 + 82
    EXPECT_EQ(*seen.rbegin(), U'\u0143');
}

TEST(ByteBpe, MergesHelloByRank) {
    // 256 "he", 257 "ll", 258 "hell", 259 "hello"; "l o" is no merge
    const ByteBpe bpe = load({"he", "ll", "hell", "hello"}, "h e\nl l\nhe ll\nhell o\n");
    EXPECT_EQ(bpe.encode("hello"), std::vector<int>{259});
    EXPECT_EQ(bpe.encode("hell"), std::vector<int>{258});
    EXPECT_EQ(bpe.encode("hellx"), (std::vector<int>{258, 'x'}));
    EXPECT_EQ(bpe.encode("hel"), (std::vector<int>{256, 'l'}));
    EXPECT_EQ(bpe.encode("llhe"), (std::vector<int>{257, 256}));  // ll and he, never he ll across the order
    // " hello": the piece is " hello" and "Ġ h" is no merge: Ġ, then the rest merged
    EXPECT_EQ(bpe.encode(" hello"), (std::vector<int>{' ', 259}));
    EXPECT_EQ(bpe.vocabSize(), 260);
    EXPECT_EQ(bpe.tokenText(259), "hello");
    EXPECT_EQ(bpe.tokenText(' '), "\u0120");
    EXPECT_EQ(bpe.tokenBytes(' '), " ");
    EXPECT_EQ(bpe.idOf("hell"), 258);
    EXPECT_EQ(bpe.idOf("nope"), std::nullopt);
    EXPECT_EQ(bpe.endOfText(), std::nullopt);
}

TEST(ByteBpe, LowestRankFirstNotLeftToRight) {
    // "elo": e+l (rank 1) is leftmost, but l+o (rank 0) is lower: e, lo. Left to right would give el, o.
    const ByteBpe bpe = load({"lo", "el"}, "l o\ne l\n");
    EXPECT_EQ(bpe.encode("elo"), (std::vector<int>{'e', 256}));
    EXPECT_EQ(bpe.encode("el"), std::vector<int>{257});
}

TEST(ByteBpe, EveryOccurrenceOfAPairMergesInOneRound) {
    // "aaa" with a+a: the leftmost pair first, the overlapping one skipped: aa, a
    const ByteBpe aa = load({"aa", "aaaa"}, "a a\naa aa\n");
    EXPECT_EQ(aa.encode("aaa"), (std::vector<int>{256, 'a'}));
    EXPECT_EQ(aa.encode("aaaa"), std::vector<int>{257});
    EXPECT_EQ(aa.encode("aaaaa"), (std::vector<int>{257, 'a'}));
    // "abab" with "ab a" ranked before "a b" (its parts can only exist later): encoder.py merges both
    // a+b of the round first, ab ab, and then no pair is left. Merging one pair at a time, lowest
    // rank first, would take the new ab+a (rank 0) after the first a+b: aba, b.
    const ByteBpe round = load({"ab", "aba"}, "ab a\na b\n");
    EXPECT_EQ(round.encode("abab"), (std::vector<int>{256, 256}));
    EXPECT_EQ(round.encode("aba"), std::vector<int>{257});  // a b a → ab a → aba
}

TEST(ByteBpe, APairGivenTwiceTakesItsLaterRank) {
    // encoder.py's dict(zip(merges, ranks)): "x y" is rank 2, after "y z" (rank 1): "xyz" → x, yz
    const ByteBpe bpe = load({"xy", "yz"}, "x y\ny z\nx y\n");
    EXPECT_EQ(bpe.encode("xyz"), (std::vector<int>{'x', 257}));
}

// encoder.py's bpe(), transcribed: the lowest-rank pair, all its occurrences left to right, again.
std::vector<std::string> referenceBpe(const std::string& word, const std::vector<std::pair<std::string, std::string>>& merges) {
    const auto rankOf = [&](const std::string& a, const std::string& b) {
        int rank = -1;  // the last line of the pair, as dict(zip(…)) keeps
        for (std::size_t i = 0; i < merges.size(); ++i)
            if (merges[i].first == a && merges[i].second == b) rank = static_cast<int>(i);
        return rank;
    };
    std::vector<std::string> w;
    for (char c : word) w.emplace_back(1, c);
    while (w.size() > 1) {
        int best = -1;
        std::pair<std::string, std::string> bigram;
        for (std::size_t i = 0; i + 1 < w.size(); ++i) {
            const int r = rankOf(w[i], w[i + 1]);
            if (r >= 0 && (best < 0 || r < best)) best = r, bigram = {w[i], w[i + 1]};
        }
        if (best < 0) break;
        std::vector<std::string> next;
        for (std::size_t i = 0; i < w.size();) {
            if (i + 1 < w.size() && w[i] == bigram.first && w[i + 1] == bigram.second) {
                next.push_back(w[i] + w[i + 1]);
                i += 2;
            } else {
                next.push_back(w[i++]);
            }
        }
        w = std::move(next);
    }
    return w;
}

// Random merge lists over four letters, some with pairs whose parts only come later, and random
// words up to 300 letters (one piece each): the same symbols as encoder.py's loop.
TEST(ByteBpe, MergesEqualEncoderPysLoopOnRandomVocabularies) {
    Prng rng(20241124);
    const auto pick = [&](std::size_t n) { return static_cast<std::size_t>(rng.nextU64() % n); };
    for (int trial = 0; trial < 60; ++trial) {
        std::vector<std::string> symbols = {"a", "b", "c", "d"}, extra;
        std::vector<std::pair<std::string, std::string>> merges;
        std::string mergesText;
        const std::size_t count = 5 + pick(40);
        for (std::size_t m = 0; m < count; ++m) {
            const std::string left = symbols[pick(symbols.size())], right = symbols[pick(symbols.size())];
            if (left.size() + right.size() > 12) continue;
            merges.emplace_back(left, right);
            mergesText += left + " " + right + "\n";
            if (std::find(symbols.begin(), symbols.end(), left + right) == symbols.end()) {
                symbols.push_back(left + right);
                extra.push_back(left + right);
            }
        }
        const ByteBpe bpe = load(extra, mergesText);
        for (int w = 0; w < 20; ++w) {
            std::string word(1 + pick(w < 10 ? 12 : 300), 'a');
            for (char& c : word) c = static_cast<char>('a' + pick(4));
            std::vector<int> want;
            for (const std::string& s : referenceBpe(word, merges)) want.push_back(*bpe.idOf(s));
            ASSERT_EQ(bpe.encode(word), want) << "trial " << trial << ", word " << word << ", merges\n" << mergesText;
        }
    }
}

TEST(ByteBpe, PiecesOfHardStrings) {
    const ByteBpe bpe = load({}, "");
    using P = std::vector<std::string>;
    EXPECT_EQ(bpe.pieces("Hello world"), (P{"Hello", " world"}));
    EXPECT_EQ(bpe.pieces("I'm here"), (P{"I", "'m", " here"}));
    EXPECT_EQ(bpe.pieces("don't"), (P{"don", "'t"}));
    EXPECT_EQ(bpe.pieces("they'LL"), (P{"they", "'", "LL"}));  // the contractions are lower case only
    EXPECT_EQ(bpe.pieces("she'd've"), (P{"she", "'d", "'ve"}));
    EXPECT_EQ(bpe.pieces("12345"), (P{"12345"}));
    EXPECT_EQ(bpe.pieces("3.14 x2"), (P{"3", ".", "14", " x", "2"}));
    EXPECT_EQ(bpe.pieces("a   b"), (P{"a", "  ", " b"}));  // the run's last space goes to the word
    EXPECT_EQ(bpe.pieces("trail   "), (P{"trail", "   "}));
    EXPECT_EQ(bpe.pieces("   lead"), (P{"  ", " lead"}));
    EXPECT_EQ(bpe.pieces("a\n\n\nb"), (P{"a", "\n\n", "\n", "b"}));
    EXPECT_EQ(bpe.pieces("\t\tx"), (P{"\t", "\t", "x"}));
    EXPECT_EQ(bpe.pieces(" \n "), (P{" \n "}));
    EXPECT_EQ(bpe.pieces("x!? y"), (P{"x", "!?", " y"}));
    EXPECT_EQ(bpe.pieces("café ½"), (P{"café", " ½"}));                  // ½ is \p{N}
    EXPECT_EQ(bpe.pieces("日本語のテキスト"), (P{"日本語のテキスト"}));  // all \p{L}
    EXPECT_EQ(bpe.pieces("e\u0301"), (P{"e", "\u0301"}));                // a combining mark is \p{M}
    EXPECT_EQ(bpe.pieces("\u00a0x"), (P{"\u00a0", "x"}));                // Unicode's white space
    // U+180E is no white space to GPT-2 (Python's regex: Unicode's White_Space), though PCRE2's \s
    // takes it: "  " then " \u180e" here, where \s would give "  ", "\u180e"
    EXPECT_EQ(bpe.pieces("x  \u180ey"), (P{"x", " ", " \u180e", "y"}));
    EXPECT_EQ(bpe.pieces("x  \u0085y"), (P{"x", "  ", "\u0085", "y"}));  // U+0085 is white space
    EXPECT_EQ(bpe.pieces(""), P{});
}

TEST(ByteBpe, InvalidUtf8IsEncodedByteByByte) {
    const ByteBpe bpe = load({"\u00e6\u0139"}, "\u00e6 \u0139\n");  // "æĹ": the bytes E6 97
    using P = std::vector<std::string>;
    // an invalid sequence is never in a match; each of its bytes is a piece of its own
    EXPECT_EQ(bpe.pieces("a\xff"
                         "b"),
              (P{"a", "\xff", "b"}));
    EXPECT_EQ(bpe.pieces("\xe6\x97"), (P{"\xe6", "\x97"}));  // half of 日
    EXPECT_EQ(bpe.encode("\xe6\x97"), (std::vector<int>{0xE6, 0x97}));
    EXPECT_EQ(bpe.encode("\xe6\x97\xa5"), std::vector<int>({256, 0xA5}));  // whole, the merge applies
    EXPECT_EQ(bpe.pieces(" \xff x"), (P{" ", "\xff", " x"}));
    EXPECT_EQ(bpe.pieces("\xed\xa0\x80"), (P{"\xed", "\xa0", "\x80"}));  // a surrogate's encoding
    // every text decodes back to its bytes: hard strings, and random bytes
    std::vector<std::string> texts = {
        "a\xff"
        "b",
        "\xc3",
        "\xf0\x9f\x98",
        "\xc0\xaf",
        std::string("\0x\0", 3),
        "日本\xe8",
        "\x80\x80 \x80"};
    Prng rng(7);
    for (int i = 0; i < 300; ++i) {
        std::string t(rng.nextU64() % 40, '\0');
        for (char& c : t) c = static_cast<char>(rng.nextU64() % 4 == 0 ? ' ' : rng.nextU64());
        texts.push_back(t);
    }
    for (const std::string& t : texts) {
        std::string joined;
        for (const std::string& p : bpe.pieces(t)) joined += p;
        EXPECT_EQ(joined, t);
        EXPECT_EQ(bpe.decode(bpe.encode(t)), t);
    }
}

TEST(ByteBpe, SpecialTokensAreCutOutLiterally) {
    // <|endoftext|> is in the vocabulary (id 257): it is a token of its own wherever it stands
    const ByteBpe bpe = load({"ab", "<|endoftext|>"}, "a b\n");
    EXPECT_EQ(bpe.endOfText(), 257);
    EXPECT_EQ(bpe.encode("ab<|endoftext|>ab"), (std::vector<int>{256, 257, 256}));
    EXPECT_EQ(bpe.encode("<|endoftext|><|endoftext|>"), (std::vector<int>{257, 257}));
    EXPECT_EQ(bpe.encode("<|endoftext|"), bytesOf("<|endoftext|"));  // unfinished: text
    EXPECT_EQ(bpe.tokenBytes(257), "<|endoftext|>");
    // the text around it is split as if apart: " ab" keeps its space
    EXPECT_EQ(bpe.encode("x<|endoftext|> ab"), (std::vector<int>{'x', 257, ' ', 256}));
    // without it in the vocabulary it is plain text
    EXPECT_EQ(load({}, "").encode("<|endoftext|>"), bytesOf("<|endoftext|>"));
}

// The compiled pattern and the tables are shared, the match data and the merges' scratch are each
// call's own: threads encoding at once get what one thread gets.
TEST(ByteBpe, ThreadsEncodeAlike) {
    const ByteBpe bpe = load({"he", "ll", "hell", "hello"}, "h e\nl l\nhe ll\nhell o\n");
    const std::string text = "hello, I'm here: 日本語 \xff  hello\n\n";
    const std::vector<int> want = bpe.encode(text);
    std::vector<std::vector<int>> got(8);
    std::vector<std::thread> threads;
    for (auto& g : got)
        threads.emplace_back([&bpe, &text, &g] {
            for (int i = 0; i < 200; ++i) g = bpe.encode(text);
        });
    for (auto& t : threads) t.join();
    for (const auto& g : got) EXPECT_EQ(g, want);
}

TEST(ByteBpe, DecodeAndUnknownIds) {
    const ByteBpe bpe = load({"he"}, "h e\n");
    EXPECT_EQ(bpe.decode({256, 'y', ' ', 0xC3, 0xA9}), "hey \xc3\xa9");
    EXPECT_FALSE(bpe.hasId(257));
    EXPECT_FALSE(bpe.hasId(-1));
    EXPECT_EQ(errorOf([&] { bpe.decode({1, 999}); }), "token ids: no token has the id 999 (the vocabulary's ids are 0 to 256)");
    EXPECT_EQ(errorOf([&] { bpe.tokenText(-1); }), "token ids: no token has the id -1 (the vocabulary's ids are 0 to 256)");
}

TEST(ByteBpe, LabelsShowTextSpacesAndBytes) {
    EXPECT_EQ(byteTokenLabel("cat"), "cat");
    EXPECT_EQ(byteTokenLabel(" cat"), "\u2423cat");  // ␣cat
    EXPECT_EQ(byteTokenLabel("  "), "\u2423\u2423");
    EXPECT_EQ(byteTokenLabel("\n\n"), "\u21B5\u21B5");
    EXPECT_EQ(byteTokenLabel("\t"), "\u21E5");
    EXPECT_EQ(byteTokenLabel("日本"), "日本");
    EXPECT_EQ(byteTokenLabel(" é"), "\u2423é");
    EXPECT_EQ(byteTokenLabel("\xe6\x97"), "\u27E8E6 97\u27E9");   // ⟨E6 97⟩: part of 日
    EXPECT_EQ(byteTokenLabel(" \xe6"), "\u27E820 E6\u27E9");      // all the bytes, space too
    EXPECT_EQ(byteTokenLabel("\x01"), "\u27E801\u27E9");          // a control character
    EXPECT_EQ(byteTokenLabel("\u200b"), "\u27E8E2 80 8B\u27E9");  // drawn as nothing
    EXPECT_EQ(byteTokenLabel("a\u200db"), "a\u200db");            // something visible
    EXPECT_EQ(byteTokenLabel("\xc2\x85"), "\u27E8C2 85\u27E9");   // NEL, a C1 control
}

// ---- loading errors: the file, the place, one line, bounded -----------------------------

std::string vocabError(const std::string& vocab, const std::string& merges = "") {
    return errorOf([&] { ByteBpe::fromText(vocab, merges, "v.json", "m.txt"); });
}

TEST(ByteBpe, VocabularyErrorsNameTheFileAndTheToken) {
    const std::string bytes = vocabJson({});
    const auto with = [&](const std::string& entries) { return bytes.substr(0, bytes.size() - 1) + ", " + entries + "}"; };
    EXPECT_EQ(vocabError("[1, 2]"), "v.json: expected a JSON object of \"token\": id entries, got an array");
    EXPECT_EQ(vocabError("7"), "v.json: expected a JSON object of \"token\": id entries, got a number");
    EXPECT_EQ(vocabError(with(R"("ab": "1")")), "v.json: token 'ab': expected an integer id, got a string");
    EXPECT_EQ(vocabError(with(R"("ab": 1.5)")), "v.json: token 'ab': expected an integer id, got the number 1.5");
    EXPECT_EQ(vocabError(with(R"("ab": [1])")), "v.json: token 'ab': expected an integer id, got an array");
    EXPECT_EQ(vocabError(with(R"("ab": -1)")), "v.json: token 'ab': expected an id from 0 to 1048575, got -1");
    EXPECT_EQ(vocabError(with(R"("ab": 4294967296)")), "v.json: token 'ab': expected an id from 0 to 1048575, got 4294967296");
    EXPECT_EQ(vocabError(with(R"("ab": 18446744073709551615)")),
              "v.json: token 'ab': expected an id from 0 to 1048575, got 18446744073709551615");
    EXPECT_EQ(vocabError(with(R"("ab": 97)")), "v.json: token 'ab': its id 97 is also the id of 'a'");
    EXPECT_EQ(vocabError(with(R"("ab": 300, "ab": 301)")), "v.json: token 'ab': appears twice");
    EXPECT_EQ(vocabError(with(R"("": 300)")), "v.json: a token is the empty text");
    EXPECT_EQ(vocabError(vocabJson({}, 10)),
              "v.json: byte 0x0A has no token: its symbol '\u010A' is not in the vocabulary (a byte-level one holds all 256)");
    EXPECT_EQ(vocabError(R"({"a": 1,})").rfind("v.json: malformed JSON at line 1, column 9: syntax error while parsing object key", 0), 0u)
        << vocabError(R"({"a": 1,})");
    // a 100 kB token, as key and in a malformed file: one short line
    const std::string huge(100000, 'x');
    for (const std::string& message : {vocabError(with("\"" + huge + "\": 300")), vocabError("{\"" + huge), vocabError("[" + huge + "]")}) {
        EXPECT_LT(message.size(), 600u) << message.substr(0, 200);
        EXPECT_EQ(message.find('\n'), std::string::npos);
        EXPECT_EQ(message.rfind("v.json: ", 0), 0u);
    }
    EXPECT_EQ(vocabError(with("\"" + huge + "\": 300")),
              "v.json: token '" + huge.substr(0, 40) + "… (100000 bytes)': longer than 1024 bytes, the most a token may be");
}

TEST(ByteBpe, MergeErrorsNameTheFileAndTheLine) {
    const std::string vocab = vocabJson({"ab"});
    EXPECT_EQ(vocabError(vocab, "#version: 0.2\na b\nab\n"), "m.txt: line 3: expected two symbols separated by one space, got 'ab'");
    EXPECT_EQ(vocabError(vocab, "a  b\n"), "m.txt: line 1: expected two symbols separated by one space, got 'a  b'");
    EXPECT_EQ(vocabError(vocab, " a\n"), "m.txt: line 1: expected two symbols separated by one space, got ' a'");
    EXPECT_EQ(vocabError(vocab, "a b\nq \xff\n"), "m.txt: line 2: the right symbol '\uFFFD' is not in v.json");
    EXPECT_EQ(vocabError(vocab, "a b\nzz b\n"), "m.txt: line 2: the left symbol 'zz' is not in v.json");
    EXPECT_EQ(vocabError(vocab, "a c\n"), "m.txt: line 1: the merged symbol 'ac' is not in v.json");
    EXPECT_EQ(vocabError(vocab, "a b\n\na b\n"), "m.txt: line 2: a blank line between merges");
    // what is allowed: no version line, CRLF, blank lines at the end
    EXPECT_EQ(vocabError(vocab, "a b\r\n\n\n"), "(no error)");
    EXPECT_EQ(vocabError(vocab, ""), "(no error)");
    // a line of 100 kB: one short line
    const std::string message = vocabError(vocab, "a " + std::string(100000, 'b') + "\n");
    EXPECT_LT(message.size(), 600u);
    EXPECT_EQ(message, "m.txt: line 1: the right symbol '" + std::string(40, 'b') + "… (100000 bytes)' is not in v.json");
    // more merges than any vocabulary has (the same pair again and again)
    std::string many;
    for (int i = 0; i <= (1 << 20); ++i) many += "a b\n";
    EXPECT_EQ(vocabError(vocab, many), "m.txt: line 1048577: more than 1048576 merges, the most a vocabulary may have");
}

// A tokenizer.json: GPT-2's layout with `model` (vocab, merges) and `rest` spliced in.
std::string tokenizerJson(const std::string& merges, const std::string& rest = "", const std::string& model = "") {
    return R"({"added_tokens": [{"id": 257, "content": "<|endoftext|>", "special": true}], "normalizer": null,)"
           R"( "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},)" +
           rest + R"( "model": {"type": "BPE", "dropout": null, )" + model + R"("vocab": )" + vocabJson({"ab", "<|endoftext|>"}) +
           R"(, "merges": )" + merges + "}}";
}

std::string tokenizerError(const std::string& json) {
    return errorOf([&] { ByteBpe::fromTokenizerJsonText(json, "t.json"); });
}

TEST(ByteBpe, TokenizerJsonLoadsBothMergeForms) {
    for (const char* merges : {R"(["a b"])", R"([["a", "b"]])"}) {
        const ByteBpe bpe = ByteBpe::fromTokenizerJsonText(tokenizerJson(merges), "t.json");
        EXPECT_EQ(bpe.encode("ab<|endoftext|>ab "), (std::vector<int>{256, 257, 256, ' '}));
    }
    // an added token not in model.vocab joins it, and is cut out of text, special or not (as
    // Hugging Face's tokenizers does: Qwen's <think> is not special)
    const std::string extra = R"({"added_tokens": [{"id": 300, "content": "<|x|>", "special": true}, {"id": 301, "content": "<y>"}],)"
                              R"( "pre_tokenizer": {"type": "ByteLevel"}, "model": {"type": "BPE", "vocab": )" +
                              vocabJson({}) + R"(, "merges": []}})";
    const ByteBpe bpe = ByteBpe::fromTokenizerJsonText(extra, "t.json");
    EXPECT_EQ(bpe.encode("a<|x|><y>"), (std::vector<int>{'a', 300, 301}));
    EXPECT_TRUE(bpe.isSpecial(300));
    EXPECT_FALSE(bpe.isSpecial(301));
    EXPECT_EQ(bpe.decode({300, 301}), "<|x|><y>");
    EXPECT_EQ(bpe.vocabSize(), 302);
    EXPECT_FALSE(bpe.hasId(299));
    // a special token spelled with the table's characters stands for its own bytes ("\u0100x", not
    // "\0x"), so that it decodes to the text it was cut from
    const auto special = [](const std::string& content, const std::string& merges) {
        return R"({"added_tokens": [{"id": 256, "content": ")" + content +
               R"(", "special": true}],)"
               R"( "pre_tokenizer": {"type": "ByteLevel"}, "model": {"type": "BPE", "vocab": )" +
               vocabJson({content}) + R"(, "merges": )" + merges + "}}";
    };
    const ByteBpe own = ByteBpe::fromTokenizerJsonText(special("\u0100x", "[]"), "t.json");
    EXPECT_EQ(own.encode("\u0100x"), std::vector<int>{256});
    EXPECT_EQ(own.encode(std::string("\0x", 2)), (std::vector<int>{0, 'x'}));
    EXPECT_EQ(own.decode({256}), "\u0100x");
    // unless the merges make that symbol from the bytes it spells
    EXPECT_EQ(tokenizerError(special("\u0100x", R"(["\u0100 x"])")),
              "t.json: added_tokens[0]: the added token '\u0100x' is also a symbol the merges make, of other bytes");
}

TEST(ByteBpe, TokenizerJsonErrorsNameTheField) {
    EXPECT_EQ(tokenizerError("[]"), "t.json: expected a tokenizer object with \"model\", got an array of 0 items");
    EXPECT_EQ(tokenizerError("{}"), "t.json: model: expected an object with \"vocab\" and \"merges\"");
    EXPECT_EQ(tokenizerError(R"({"model": {"type": "WordPiece"}})"), "t.json: model.type: \"WordPiece\" is not read (only \"BPE\" is)");
    EXPECT_EQ(tokenizerError(R"({"model": {"type": "BPE"}, "pre_tokenizer": {"type": "Whitespace"}})"),
              "t.json: pre_tokenizer.type: \"Whitespace\" is not read (Sequence, Split, ByteLevel and Metaspace are)");
    EXPECT_EQ(tokenizerError(R"({"model": {"type": "BPE"}, "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": true}})"),
              "t.json: pre_tokenizer.add_prefix_space: true is not read (only false is)");
    EXPECT_EQ(tokenizerError(tokenizerJson("[]", R"( "normalizer": {"type": "Lowercase"},)")),
              "t.json: normalizer.type: \"Lowercase\" is not read (Sequence, NFC, Prepend and Replace are)");
    EXPECT_EQ(tokenizerError(tokenizerJson("[]", "", R"("dropout": 0.1, )")),
              "t.json: model.dropout: 0.1 is not read (dropout makes the ids random; only null or 0 is)");
    EXPECT_EQ(tokenizerError(tokenizerJson(R"(["a b", "a q"])")), "t.json: model.merges[1]: the merged symbol 'aq' is not in model.vocab");
    EXPECT_EQ(tokenizerError(tokenizerJson(R"(["a b", ["a"]])")),
              "t.json: model.merges[1]: expected \"left right\" or [\"left\", \"right\"], got an array of 1 item");
    EXPECT_EQ(tokenizerError(tokenizerJson(R"(["ab"])")), "t.json: model.merges[0]: expected two symbols separated by one space, got 'ab'");
    EXPECT_EQ(tokenizerError(tokenizerJson("{}")), "t.json: model.merges: expected a list of merges");
    const std::string clash = R"({"added_tokens": [{"id": 5, "content": "a"}], "pre_tokenizer": {"type": "ByteLevel"},)"
                              R"( "model": {"type": "BPE", "vocab": )" +
                              vocabJson({}) + R"(, "merges": []}})";
    EXPECT_EQ(tokenizerError(clash), "t.json: added_tokens[0]: token 'a' has the id 97 in model.vocab, not 5");
    const std::string noBytes = R"({"pre_tokenizer": {"type": "ByteLevel"}, "model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}})";
    EXPECT_EQ(tokenizerError(noBytes),
              "t.json: model.vocab: byte 0x00 has no token: its symbol '\u0100' is not in the vocabulary (a byte-level one holds all 256)");
    const std::string badId = R"({"pre_tokenizer": {"type": "ByteLevel"}, "model": {"type": "BPE", "vocab": {"a": "0"}, "merges": []}})";
    EXPECT_EQ(tokenizerError(badId), "t.json: model.vocab: token 'a': expected an integer id, got the text '0'");
    EXPECT_EQ(tokenizerError(R"({"model": )").rfind("t.json: malformed JSON at line 1, column 11: syntax error", 0), 0u)
        << tokenizerError(R"({"model": )");
}

class ByteBpeFiles : public attnviz::testfs::TestFolder {};

TEST_F(ByteBpeFiles, FilesAreReadWithinTheirBound) {
    attnviz::testfs::writeFile(path("vocab.json"), vocabJson({"ab"}));
    attnviz::testfs::writeFile(path("merges.txt"), "#version: 0.2\na b\n");
    const ByteBpe bpe = ByteBpe::fromFiles(path("vocab.json"), path("merges.txt"));
    EXPECT_EQ(bpe.encode("abab"), (std::vector<int>{256, 256}));
    EXPECT_EQ(errorOf([&] { ByteBpe::fromFiles(path("none.json"), path("merges.txt")); }), path("none.json").string() + ": no such file");
    // 64 MiB and a byte: refused from its size, unread (a sparse file)
    std::filesystem::resize_file(path("merges.txt"), (std::uintmax_t{64} << 20) + 1);
    EXPECT_EQ(errorOf([&] { ByteBpe::fromFiles(path("vocab.json"), path("merges.txt")); }),
              path("merges.txt").string() + ": larger than 64 MiB, the most a tokenizer file may be (is it the right file?)");
    EXPECT_EQ(errorOf([&] { ByteBpe::fromTokenizerJson(path("vocab.json")); }),
              path("vocab.json").string() + ": model: expected an object with \"vocab\" and \"merges\"");
}

}  // namespace
}  // namespace attnviz::core
