// Byte-pair encoding as GPT-2's files and Hugging Face's tokenizer.json describe it, exact for
// GPT-2 (vocab.json + merges.txt or tokenizer.json), Llama 3 and Qwen (byte-level), and the
// SentencePiece-style BPE of Llama 2, TinyLlama and Mistral 7B:
//   1. added tokens (<|endoftext|>, <|begin_of_text|>, <s>, <think>, special or not) are cut out
//      of the text first, the leftmost and then the longest at a place, with their lstrip,
//      rstrip and single_word; each maps to its id;
//   2. each stretch between them is normalised (tokenizer.json's normalizer: NFC through ICU;
//      Prepend "▁" to a non-empty stretch; Replace " " by "▁");
//   3. and split into pieces by patterns (GPT-2's, or a Split pattern read from the file with \s
//      read as Unicode's White_Space, run under PCRE2 with UTF and UCP; the character classes are
//      PCRE2's tables', Debian 12: Unicode 14), or by Metaspace;
//   4. a piece becomes symbols: byte-level, its UTF-8 bytes written through GPT-2's byte-to-unicode
//      table; SentencePiece-style, its characters, one not in the vocabulary becoming its bytes'
//      <0xXX> tokens (byte fallback), else <unk>. With ignore_merges (Llama 3) a piece that is a
//      token whole is that token;
//   5. pairs of symbols are merged by rank (merges' order, lowest first; every occurrence of the
//      pair, left to right, before the next pair, as GPT-2's encoder.py does; the same as Hugging
//      Face's merging for trained merges) until none applies; each symbol left is a token;
//   6. the post-processor's tokens go around (TemplateProcessing: Llama 2's <s>).
// GPT-2's pattern is 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ with
// \s spelled \p{White_Space}, what it means in Python's regex module (PCRE2's own \s also takes
// U+180E).
// Invalid UTF-8 in the text is encoded byte by byte: no match of a pattern holds an invalid byte,
// and each one between matches is a piece of its own (byte-level: its byte's token; SentencePiece-
// style: its <0xXX> token, or <unk> without byte fallback); NFC leaves it in place and normalises
// the valid runs beside it apart. decode(ids) is the concatenation of tokenBytes, so, with the
// post-processor's tokens left out: decode(encode(t)) == t for GPT-2 and Llama 3 for any bytes;
// for Qwen it is t with each stretch between added tokens in NFC; for the SentencePiece-style it
// is t with a space before each non-empty stretch between added tokens (the "▁" Prepend puts
// there) and a "▁" written in t read back as a space, where every character is a token or falls
// back to bytes (<unk> decodes to "<unk>"); white space an lstrip / rstrip token takes is lost.
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
    // A Hugging Face tokenizer.json holding a "BPE" model (model.vocab, model.merges as "a b"
    // strings or [a, b] pairs, byte_fallback, unk_token, fuse_unk, ignore_merges; added_tokens,
    // those marked "special" the special ones), with the normalizer (NFC, Prepend, Replace of a
    // string, Sequence), pre_tokenizer (Split of a Regex or String, Isolated; ByteLevel without
    // add_prefix_space, last; Metaspace alone; Sequence) and post_processor (ByteLevel,
    // TemplateProcessing, Sequence) of the files above. Throws InputError naming the file and the
    // field for anything else that would change the ids (`tokenizer.json: pre_tokenizer.type:
    // "Whitespace" is not read (…)`: another model, normalizer or pre-tokenizer, dropout, subword
    // prefixes or suffixes, truncation, padding, a normalized added token beside a normalizer).
    static ByteBpe fromTokenizerJson(const std::string& path);
    // RoBERTa's files, as RobertaTokenizer reads them: GPT-2's vocab.json and merges.txt, with
    // the vocabulary's <s>, <pad>, </s>, <unk> and <mask> matched whole in the text (<mask> taking
    // the white space before it), and <s> A </s> around a text (a pair: <s> A </s></s> B </s>).
    // Throws InputError naming vocab.json when one of those five is not in it.
    static ByteBpe fromRobertaFiles(const std::string& vocabPath, const std::string& mergesPath);
    // The same from text already read (tests and the fuzz targets); the names stand for the
    // files in messages.
    static ByteBpe fromText(std::string_view vocabJson, std::string_view mergesText, const std::string& vocabName,
                            const std::string& mergesName);
    static ByteBpe fromTokenizerJsonText(std::string_view json, const std::string& name);

    ByteBpe(ByteBpe&&) noexcept;
    ByteBpe& operator=(ByteBpe&&) noexcept;
    ~ByteBpe();

    // Token ids of `text` as the model sees them: what Hugging Face's tokenizer(text)["input_ids"]
    // gives (with the post-processor's tokens, Llama 2's <s> first). Thread-safe (the patterns
    // are compiled once and shared; each call has its own match data). O(n log n) in a piece's
    // length n: a text of one long word is no trap.
    std::vector<int> encode(std::string_view text) const;
    // A sentence pair through the template's pair form (RoBERTa's <s> A </s></s> B </s>: its
    // RobertaProcessing); none when the tokenizer has no pair template.
    std::optional<std::vector<int>> encodePair(std::string_view a, std::string_view b) const;
    // The pieces that the split patterns (and Metaspace) make of `text`, taken as one stretch that
    // starts the text (no added tokens, no normalizer; an invalid byte is a piece of its own), for
    // tests: they concatenate to `text` (to its Metaspace form where there is one).
    std::vector<std::string> pieces(std::string_view text) const;

    int vocabSize() const;
    // The most bytes one token stands for (GPT-2: 128): a text of more than n × this many bytes
    // is more than n tokens, known before it is encoded.
    std::size_t longestTokenBytes() const;  // the largest id + 1
    bool hasId(int id) const;
    // The vocabulary's spelling of a token ("Ġcat", "▁cat"), and the bytes it stands for (" cat").
    // Byte-level: through the byte table, a token spelled with characters outside it (an added
    // "<｜end▁of▁sentence｜>") standing for its spelling; SentencePiece-style: "▁" a space and
    // <0x0A> its one byte; an added token stands for its text. These and decode throw InputError
    // for an id that is no token.
    const std::string& tokenText(int id) const;
    std::string tokenBytes(int id) const;
    // The bytes of a sequence of tokens, their tokenBytes one after another (see above for what
    // decode(encode(t)) gives back).
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
    // The added token "<mask>" (RoBERTa's) or "[MASK]" (ModernBERT's), what a masked-LM head fills
    // in; none without one.
    std::optional<int> maskId() const;

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
