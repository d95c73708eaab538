// GPT-2's byte-level byte-pair encoding (Radford et al. 2019; the tokenizer of GPT-2, GPT-3's
// r50k, and their fine-tunes):
//   1. special tokens (`<|endoftext|>`) are cut out of the text first and map to their ids;
//   2. the rest is split by GPT-2's pre-tokenisation pattern, run under PCRE2 with UTF and UCP
//      (Unicode letter and number classes, the look-ahead that leaves one space before a word):
//        's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//      with \s spelled \p{White_Space}, which is what it means in Python's regex module, where
//      GPT-2's encoder.py runs it (PCRE2's own \s also takes U+180E). The character classes are
//      PCRE2's Unicode tables' (Debian 12: Unicode 14), so a character assigned later is
//      neither letter nor number here;
//   3. each piece's UTF-8 bytes are written as characters through the byte-to-unicode table
//      (printable bytes stand for themselves, the other 68 become U+0100 …), and pairs of
//      symbols are merged by rank (merges.txt's order, lowest first; every occurrence of the
//      pair, left to right, before the next pair is chosen, as encoder.py's bpe() does) until
//      none applies;
//   4. each resulting symbol is a token: the 256 byte symbols and every merge's result are
//      checked to be in the vocabulary when it is loaded.
// Invalid UTF-8 in the text is encoded byte by byte: no match of the pattern holds an invalid
// sequence, and each byte between matches is a piece of its own (so a text cut inside a
// character gives one token per byte of the cut character). decode(encode(t)) == t for any bytes.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attnviz::core {

class ByteBpe {
public:
    // GPT-2's files: vocab.json ({"token": id, …}) and merges.txt (an optional "#version" line,
    // then one "left right" pair a line; blank lines only at the end; a pair given twice takes
    // its later rank, as in encoder.py). Throws InputError naming the file and the line or
    // entry at fault (an entry that is not a string mapped to an integer id from 0 to 2^20 − 1,
    // a token given twice or over 1,024 bytes, two tokens with one id, a byte symbol missing,
    // a merge that is not two symbols, a merge whose parts or result are not in the
    // vocabulary, more than 2^20 merges, a file over 64 MiB). <|endoftext|>, when the
    // vocabulary has it, is the special token.
    static ByteBpe fromFiles(const std::string& vocabPath, const std::string& mergesPath);
    // A Hugging Face tokenizer.json holding a "BPE" model with byte-level pre-tokenisation
    // (model.vocab, model.merges as "a b" strings or [a, b] pairs, added_tokens: those marked
    // "special" are the special tokens). Throws InputError naming the file and the field, also
    // for a setting that would make the tokens differ from GPT-2's (another pre-tokenizer,
    // add_prefix_space, a normalizer, dropout, ignore_merges, subword prefixes or suffixes).
    static ByteBpe fromTokenizerJson(const std::string& path);
    // The same from text already read (tests and the fuzz targets); the names stand for the
    // files in messages.
    static ByteBpe fromText(std::string_view vocabJson, std::string_view mergesText, const std::string& vocabName,
                            const std::string& mergesName);
    static ByteBpe fromTokenizerJsonText(std::string_view json, const std::string& name);

    ByteBpe(ByteBpe&&) noexcept;
    ByteBpe& operator=(ByteBpe&&) noexcept;
    ~ByteBpe();

    // Token ids of `text`. Thread-safe (the pattern is compiled once and shared; each call has its
    // own match data). O(n log n) in a piece's length n: a text of one long word is no trap.
    std::vector<int> encode(std::string_view text) const;
    // The pre-tokenisation pattern's pieces of `text` (no special tokens; an invalid byte is a
    // piece of its own), for tests: they concatenate to `text`.
    std::vector<std::string> pieces(std::string_view text) const;

    int vocabSize() const;
    // The most bytes one token stands for (GPT-2: 128): a text of more than n × this many bytes
    // is more than n tokens, known before it is encoded.
    std::size_t longestTokenBytes() const;  // the largest id + 1
    bool hasId(int id) const;
    // The vocabulary's spelling of a token ("Ġcat"), and the bytes it stands for (" cat"); a
    // token spelled with characters outside the byte table (an added "<｜end▁of▁sentence｜>")
    // stands for its spelling. These and decode throw InputError for an id that is no token.
    const std::string& tokenText(int id) const;
    std::string tokenBytes(int id) const;
    // The bytes of a sequence of tokens: decode(encode(t)) == t for every text.
    std::string decode(const std::vector<int>& ids) const;
    std::optional<int> idOf(std::string_view tokenText) const;
    // "<|endoftext|>"'s id when the vocabulary has it.
    std::optional<int> endOfText() const;
    // Whether the id is an added token marked "special" (<|begin_of_text|>, <s>, <|endoftext|>;
    // GPT-2's files: <|endoftext|>). False for an id that is no token.
    bool isSpecial(int id) const;
    // The token the post-processor puts before every text (TemplateProcessing's first token:
    // <s> of Llama 2); none where nothing is put there (GPT-2, Qwen, a Llama 3 file whose
    // post-processor is ByteLevel alone).
    std::optional<int> bosId() const;

    // The byte-to-unicode table: the code point standing for byte b.
    static char32_t byteToUnicode(unsigned char b);

    struct Impl;

private:
    explicit ByteBpe(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> m_impl;
};

// A token's bytes as a label: the text when they are valid UTF-8 (a leading space shown as ␣,
// a token of white space as visibleToken shows it), else the whole as hex bytes, "⟨E6 97⟩", so a
// piece of a character is never drawn as "?". Valid text with a control character ("\x01",
// U+0085) or nothing visible (U+200B alone) is shown as its bytes too, never as a blank.
std::string byteTokenLabel(std::string_view bytes);

}  // namespace attnviz::core
