#include "core/text/model_tokenizer.hpp"

#include "core/base/error.hpp"

namespace attnviz::core {

std::vector<int> ModelTokenizer::encode(std::string_view text) const {
    if (const WordPiece* w = wordPiece()) return w->encode(text).ids;
    return bpe()->encode(text);
}

ModelTokenizer::Encoding ModelTokenizer::encodePair(std::string_view a, std::string_view b, const std::string& field) const {
    if (const WordPiece* w = wordPiece()) {
        WordPiece::Encoding e = w->encode(a, b);
        return {std::move(e.ids), std::move(e.typeIds)};
    }
    std::optional<std::vector<int>> ids = bpe()->encodePair(a, b);
    if (!ids) throw InputError(field, "this model reads one text (its tokenizer has no template for a sentence pair)");
    Encoding e{std::move(*ids), {}};
    e.typeIds.assign(e.ids.size(), 0);  // RoBERTa's pair is told apart by its </s></s>, not by token types
    return e;
}

int ModelTokenizer::vocabSize() const {
    return std::visit([](const auto& t) { return t.vocabSize(); }, m);
}

std::size_t ModelTokenizer::longestTokenBytes() const {
    return std::visit([](const auto& t) { return t.longestTokenBytes(); }, m);
}

bool ModelTokenizer::hasId(int id) const {
    return std::visit([id](const auto& t) { return t.hasId(id); }, m);
}

std::string ModelTokenizer::tokenBytes(int id) const {
    if (const WordPiece* w = wordPiece()) return w->token(id);
    return bpe()->tokenBytes(id);
}

bool ModelTokenizer::isSpecial(int id) const {
    return std::visit([id](const auto& t) { return t.isSpecial(id); }, m);
}

std::optional<int> ModelTokenizer::bosId() const {
    if (const ByteBpe* b = bpe()) return b->bosId();
    return std::nullopt;
}

std::optional<int> ModelTokenizer::endOfText() const {
    if (const ByteBpe* b = bpe()) return b->endOfText();
    return std::nullopt;
}

std::optional<int> ModelTokenizer::maskId() const {
    if (const WordPiece* w = wordPiece()) return w->maskId();
    return bpe()->maskId();
}

}  // namespace attnviz::core
