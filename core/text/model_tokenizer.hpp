// The tokenizer a checkpoint reads its text with: byte-level or SentencePiece-style BPE
// (byte_bpe.hpp: GPT-2, Llama, Mistral, Qwen) or BERT's WordPiece (wordpiece.hpp), behind the
// questions the model's code asks of either: the ids of a text (with a second text's token types
// for an encoder's sentence pair), a token's bytes, and its special tokens.
#pragma once

#include "core/text/byte_bpe.hpp"
#include "core/text/wordpiece.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace attnviz::core {

class ModelTokenizer {
public:
    explicit ModelTokenizer(ByteBpe bpe) : m(std::move(bpe)) {}
    explicit ModelTokenizer(WordPiece wordPiece) : m(std::move(wordPiece)) {}

    struct Encoding {
        std::vector<int> ids;
        std::vector<int> typeIds;  // the token types: 0 for a text alone (and for a BPE's)
    };
    // The ids the model reads for `text`, with the tokens the tokenizer's template adds (a BOS;
    // BERT's [CLS] and [SEP]).
    std::vector<int> encode(std::string_view text) const;
    // The same for a sentence pair (WordPiece: [CLS] A [SEP] B [SEP], types 0 … 0 1 … 1; RoBERTa's
    // BPE: <s> A </s></s> B </s>, types all 0). A tokenizer with no pair template: InputError
    // naming `field`.
    Encoding encodePair(std::string_view a, std::string_view b, const std::string& field) const;

    int vocabSize() const;
    std::size_t longestTokenBytes() const;
    bool hasId(int id) const;
    // The bytes a token stands for (BPE), or its vocabulary entry ("##ing", "[CLS]": WordPiece).
    std::string tokenBytes(int id) const;
    // Whether the id is one of the special tokens (BPE's added "special" tokens; WordPiece's
    // [PAD], [UNK], [CLS], [SEP], [MASK] and its added tokens).
    bool isSpecial(int id) const;
    std::optional<int> bosId() const;      // the token put before every text by a BPE's template
    std::optional<int> endOfText() const;  // <|endoftext|>
    std::optional<int> maskId() const;     // [MASK]: what an encoder's masked-LM head fills in

    const ByteBpe* bpe() const { return std::get_if<ByteBpe>(&m); }
    const WordPiece* wordPiece() const { return std::get_if<WordPiece>(&m); }

private:
    std::variant<ByteBpe, WordPiece> m;
};

}  // namespace attnviz::core
