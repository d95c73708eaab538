// What a loaded ByteBpe holds, shared by the encoder (byte_bpe.cpp, bpe_steps.cpp) and the
// loaders (byte_bpe_files.cpp, tokenizer_json.cpp); nothing outside the text room includes it.
#pragma once

#include "core/text/byte_bpe.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

struct pcre2_real_code_8;

namespace attnviz::core {

namespace bpe {

// Limits on what a file may hold, each far above any real tokenizer's (GPT-2: 50,257 tokens of at
// most 256 bytes; the largest vocabularies in use hold about 262,000). Ids are stored densely, so
// an id is below the token limit too.
inline constexpr std::size_t kMaxTokens = std::size_t{1} << 20;  // ids 0 … 2^20 − 1, and so tokens; merges
inline constexpr std::size_t kMaxTokenBytes = 1024;              // one token's spelling
// A tokenizer file is read whole: GPT-2's tokenizer.json is 1.4 MB, a 262k-token one about 33 MB.
inline constexpr std::size_t kMaxFileBytes = std::size_t{64} << 20;

// The byte-to-unicode table of GPT-2's encoder.py: bytes 33–126, 161–172 and 174–255 stand for
// themselves; the other 68 (the controls, the space, DEL, the C1 range, NBSP, the soft hyphen)
// become U+0100, U+0101, … in byte order, so that every symbol is a printable character.
inline constexpr int kByteSymbols = 256 + 68;  // the code points the table uses: 0 … U+0143
constexpr std::array<char32_t, 256> makeByteToUnicode() {
    std::array<char32_t, 256> table{};
    char32_t next = 256;
    for (unsigned b = 0; b < 256; ++b) {
        const bool itself = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
        table[b] = itself ? b : next++;
    }
    return table;
}
inline constexpr std::array<char32_t, 256> kByteToUnicode = makeByteToUnicode();
static_assert(kByteToUnicode[32] == 0x120 && kByteToUnicode[173] == 0x143 && kByteToUnicode[255] == 255);
// The table backwards: code point → byte, −1 for a code point no byte stands for.
constexpr std::array<short, kByteSymbols> makeUnicodeToByte() {
    std::array<short, kByteSymbols> table{};
    for (short& b : table) b = -1;
    for (unsigned b = 0; b < 256; ++b) table[kByteToUnicode[b]] = static_cast<short>(b);
    return table;
}
inline constexpr std::array<short, kByteSymbols> kUnicodeToByte = makeUnicodeToByte();

// Spellings looked up by std::string_view without a copy.
struct TextHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

struct Merge {
    int rank;    // the merge's line among the merges, 0 first (a pair given twice: the later line)
    int result;  // the id of the two symbols joined
};

inline std::uint64_t pairKey(int left, int right) { return (std::uint64_t(std::uint32_t(left)) << 32) | std::uint32_t(right); }

// A split pattern compiled once under PCRE2 (UTF, UCP, invalid UTF-8 searched, not refused) and
// shared read-only; each encode has its own match data. Throws std::invalid_argument with
// PCRE2's message (and the offset) when the pattern does not compile.
// `where` names it in the errors of matching ("…/tokenizer.json: pre_tokenizer.pattern").
// What becomes of a match (the Split's behavior): a piece of its own (Isolated), or joined to the
// stretch before it (MergedWithPrevious) or after it (MergedWithNext) when that is not a match.
class Pattern {
public:
    enum class Behavior : unsigned char { Isolated, MergedWithPrevious, MergedWithNext };
    explicit Pattern(std::string_view pattern, std::string where = "the split pattern", Behavior behavior = Behavior::Isolated);
    Pattern(const Pattern&) = delete;
    Pattern& operator=(const Pattern&) = delete;
    ~Pattern();
    const pcre2_real_code_8* code() const { return m_code; }
    const std::string& where() const { return m_where; }
    Behavior behavior() const { return m_behavior; }

private:
    pcre2_real_code_8* m_code = nullptr;
    std::string m_where;
    Behavior m_behavior = Behavior::Isolated;
};
// The matching work one text may take, in PCRE2's steps (match_limit's unit): a base and a
// share a byte, for every split pattern in turn. Real pre-tokenisation patterns need a few
// steps a byte; one that backtracks (PCRE2's own limit is per call, so a few hundred characters
// could take seconds and a few thousand minutes) is refused once its text's budget is spent.
inline constexpr std::uint64_t kMatchStepsBase = 100000, kMatchStepsPerByte = 4000;
// GPT-2's pattern (ByteLevel's use_regex), compiled once.
std::shared_ptr<const Pattern> gpt2Pattern();
// A Rust-regex / Oniguruma pattern (a tokenizer.json's Split) as PCRE2 reads it: \s and \S become
// \p{White_Space} and \P{White_Space} (what \s means there; PCRE2's also takes U+180E). Other
// syntax is the same in the patterns in use ((?i:…), \p{L}, \p{N}, {1,3}, look-ahead).
std::string pcre2Syntax(std::string_view pattern);

// One step of a normalizer, applied to each stretch of text between added tokens in turn.
struct NormalizerStep {
    enum class Kind { Nfc, Prepend, Replace } kind;
    std::string text, by;  // Prepend: text before a non-empty stretch; Replace: every `text` by `by`
};
// Applies the steps to `text`. NFC goes through ICU, on each run of valid UTF-8 (an invalid byte
// stays as it is, between runs normalised apart).
std::string normalize(const std::vector<NormalizerStep>& steps, std::string_view text);

// The Metaspace pre-tokenizer: spaces become `replacement`, which is put in front of a stretch
// that does not start with it (prepend_scheme "always"; "first": only the stretch that starts
// the text; "never"), and with `split`, the stretch is cut before each `replacement`.
struct Metaspace {
    enum class Prepend { Always, First, Never } prepend = Prepend::Always;
    std::string replacement = "\u2581";
    bool split = true;
};

// An added token: matched whole in the text before anything else, leftmost first, the longest
// of those starting at a place. lstrip / rstrip: the white space before / after it is taken
// with it (not encoded); singleWord: a match next to a word character (Rust's \w) is not one.
struct AddedToken {
    std::string text;
    int id = 0;
    bool lstrip = false, rstrip = false, singleWord = false;
};
// Calls plain(view, offset) for the text between added tokens and added(id) for each, in order.
void splitAdded(const std::vector<AddedToken>& added, std::string_view text,
                const std::function<void(std::string_view, std::size_t)>& plain, const std::function<void(int)>& token);

// The length of the UTF-8 character at text[pos], 0 for a byte that does not start a whole one.
std::size_t utf8Length(std::string_view text, std::size_t pos);

// How a piece becomes symbols before the merges: its bytes through the byte table (GPT-2,
// Llama 3, Qwen), or its characters, one not in the vocabulary falling back to its bytes as
// <0xXX> tokens, else to the unknown token (SentencePiece-style: Llama 2, Mistral 7B).
enum class Symbols { Bytes, Characters };

}  // namespace bpe

struct ByteBpe::Impl {
    std::vector<std::string> texts;  // [vocabSize] a token's spelling ("Ġcat"); "" where no token has the id
    std::vector<std::string> bytes;  // [vocabSize] the bytes it stands for (" cat")
    std::unordered_map<std::string, int, bpe::TextHash, std::equal_to<>> ids;  // spelling → id
    // (left id, right id) → rank and result. Every symbol a merge can meet is a token: the 256
    // byte symbols are checked at load, and so is every merge's result.
    std::unordered_map<std::uint64_t, bpe::Merge> merges;
    // byte → the id of its one-symbol token (Bytes), or of its <0xXX> token, −1 where none (Characters)
    std::array<int, 256> byteIds{};
    std::vector<bpe::AddedToken> added;  // cut out of the text first; each stands for its text
    std::vector<bool> special;           // [vocabSize] an added token marked "special"

    // The pipeline of a stretch of text between added tokens: 1. normalizer, 2. Metaspace, 3. the
    // split patterns, each on the pieces of the one before, 4. symbols, 5. merges (with
    // ignoreMerges, a piece whose spelling is a token is that token).
    std::vector<bpe::NormalizerStep> normalizer;
    std::optional<bpe::Metaspace> metaspace;
    std::vector<std::shared_ptr<const bpe::Pattern>> splits;
    bpe::Symbols symbols = bpe::Symbols::Bytes;
    bool ignoreMerges = false;
    // How the merges are applied: encoder.py's rounds (GPT-2's own tokenizer, read from vocab.json
    // and merges.txt), or Hugging Face's one merge at a time (tokenizer.json); mergeSymbols.
    bool mergeRounds = false;
    int unkId = -1;                   // Characters: the unknown token, −1 for none (an unknown character is dropped)
    bool fuseUnk = false;             // consecutive unknown characters are one unknown token
    std::string space;                // Characters: the spelling that stands for a space in tokenBytes ("▁"), or ""
    std::vector<int> prefix, suffix;  // the post-processor's tokens around a text (Llama 2's <s>)
    // RobertaProcessing's pair form: prefix A suffix, then pairPrefix B suffix (RoBERTa: </s> before
    // B); pairTemplate false when the tokenizer has none.
    bool pairTemplate = false;
    std::vector<int> pairPrefix;
};

namespace bpe {
// Calls piece(view) for each piece of `text` (a stretch already normalised; startsText: it
// begins the whole text) that the Metaspace step and the split patterns make, in order. A split
// keeps what lies between its matches as pieces too (Hugging Face's "Isolated"): a run of valid
// UTF-8 as one piece, each invalid byte as one of its own. The pieces concatenate to the text
// (to its Metaspace form where there is one).
void forEachPiece(const ByteBpe::Impl& impl, std::string_view text, bool startsText, const std::function<void(std::string_view)>& piece);
}  // namespace bpe

}  // namespace attnviz::core
