// BERT's WordPiece tokenizer as Hugging Face's tokenizers library runs it (BertNormalizer,
// BertPreTokenizer, the WordPiece model, BERT's template of [CLS] and [SEP]), from a vocab.txt:
// what bert-base-uncased's tokenizer(text)["input_ids"] gives.
//
//   normalize:  clean the text (drop U+0000, U+FFFD and every control or format character other
//               than tab, newline and return; each White_Space character a space), put a space
//               on each side of every CJK ideograph, strip accents (NFD, then drop the
//               non-spacing marks, Mn) and lower-case each character (its full Unicode mapping,
//               one character at a time, as Rust's char::to_lowercase)
//   pre-tokens: split on whitespace (dropped) and around each punctuation character (ASCII
//               punctuation or a Unicode P* category), which is a word of its own
//   words:      a word of more than maxInputCharsPerWord characters is [UNK]; else the longest
//               vocabulary entry that starts it, then the longest "##"-prefixed entry that starts
//               the rest, and so on; a word with a rest no entry starts is [UNK] whole
//   specials:   the vocabulary's [PAD], [UNK], [CLS], [SEP] and [MASK] written in the text are
//               their own ids, matched before normalization (tokenizers' added tokens)
//   template:   [CLS] A [SEP], or [CLS] A [SEP] B [SEP] with token types 0 … 0 1 … 1
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace attnviz::core {

// tokenizer_config.json's (or tokenizer.json's normalizer's) switches; stripAccents unset: as
// lowercase (BertNormalizer's default).
struct WordPieceOptions {
    bool cleanText = true;
    bool chineseChars = true;  // tokenize_chinese_chars / handle_chinese_chars
    bool lowercase = true;     // do_lower_case
    std::optional<bool> stripAccents;
    int maxInputCharsPerWord = 100;
};

class WordPiece {
public:
    // One token a line, its id the line's index (trailing whitespace trimmed, as tokenizers
    // reads it; a token given twice takes the later line's id). Throws InputError naming the file
    // and the line at fault: not UTF-8, a token over 1,024 bytes, more than 2^20 lines, a file
    // over 64 MiB; or the field: no [UNK], [CLS] or [SEP] in it.
    static WordPiece fromVocabTxt(const std::string& path, const WordPieceOptions& options);
    // The same from text already read; `name` stands for the file in messages.
    static WordPiece fromVocabText(std::string_view text, const std::string& name, const WordPieceOptions& options);
    // A Hugging Face tokenizer.json holding a "WordPiece" model (vocab, unk_token,
    // max_input_chars_per_word; "##" continuations), a BertNormalizer (its four switches), the
    // BertPreTokenizer, BERT's template (TemplateProcessing's [CLS] $A [SEP] and
    // [CLS] $A [SEP] $B:1 [SEP]:1, or BertProcessing), and added tokens matched in the raw text.
    // Throws InputError naming the file and the field for anything else that would change the ids.
    static WordPiece fromTokenizerJson(const std::string& path);
    static WordPiece fromTokenizerJsonText(std::string_view text, const std::string& name);

    struct Encoding {
        std::vector<int> ids;
        std::vector<int> typeIds;  // 0 for [CLS], A and its [SEP]; 1 for B and its [SEP]
    };
    // [CLS] A [SEP]; with b, [CLS] A [SEP] B [SEP].
    Encoding encode(std::string_view a, std::optional<std::string_view> b = std::nullopt) const;
    // The ids of `text` alone: no [CLS] or [SEP] added.
    std::vector<int> words(std::string_view text) const;
    // The normalized text and its pre-tokens (tests).
    std::string normalize(std::string_view text) const;
    std::vector<std::string> preTokens(std::string_view text) const;

    int vocabSize() const { return static_cast<int>(m_tokens.size()); }
    bool hasId(int id) const { return id >= 0 && id < vocabSize(); }
    const std::string& token(int id) const { return m_tokens.at(static_cast<std::size_t>(id)); }
    std::optional<int> idOf(std::string_view token) const;
    int unkId() const { return m_unk; }
    int clsId() const { return m_cls; }
    int sepId() const { return m_sep; }
    std::optional<int> maskId() const { return m_mask; }
    // [PAD], [UNK], [CLS], [SEP], [MASK] and the added tokens: those matched in the raw text.
    bool isSpecial(int id) const;
    std::size_t longestTokenBytes() const { return m_longest; }

private:
    WordPiece() = default;
    void addToken(std::string token, int id);
    void sortSpecials();
    void appendWords(std::string_view text, std::vector<int>& ids) const;  // specials matched first
    void appendWord(std::string_view word, std::vector<int>& ids) const;

    WordPieceOptions m_options;
    std::vector<std::string> m_tokens;  // by id
    std::unordered_map<std::string, int> m_ids;
    std::vector<std::pair<std::string, int>> m_specials;  // matched in the raw text, longest first
    int m_unk = 0, m_cls = 0, m_sep = 0;
    std::optional<int> m_mask;
    std::size_t m_longest = 0;
};

}  // namespace attnviz::core
