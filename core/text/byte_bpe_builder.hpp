// Building a ByteBpe from files: the vocabulary, its checks, the merges and the added tokens,
// shared by the readers of vocab.json + merges.txt (byte_bpe_files.cpp) and of tokenizer.json
// (tokenizer_json.cpp); nothing outside the text room includes it.
#pragma once

#include "core/text/byte_bpe_impl.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>

namespace attnviz::core::bpe {

// A value from a file for a message: quoted, clipped to 40 bytes at a character boundary, invalid
// UTF-8 shown as U+FFFD (merges.txt may hold any bytes).
std::string shown(std::string_view s);
// nlohmann's syntax error as one short line naming the file, the line and the column.
[[noreturn]] void malformedJson(std::string_view text, const std::string& name, const nlohmann::json::exception& e);
// "expected an id from 0 to 1048575, got 5000000": ids index a table, so they stay below the
// token limit (no real vocabulary comes near it).
std::string idRange(const std::string& got);
// A tokenizer file read whole, up to kMaxFileBytes.
std::string readTokenizerFile(const std::string& path);

// Builds an Impl: tokens first, then the checks on the whole vocabulary, then merges, then the
// added tokens. vocabWhere: the vocabulary's place in messages ("vocab.json",
// "tokenizer.json: model.vocab"); vocabName: how a merge's message names it ("vocab.json",
// "model.vocab"). The Impl's symbols, space and byte fallback are set before finishVocabulary.
class Builder {
public:
    Builder(std::string vocabWhere, std::string vocabName);

    // A token and its id; `where` names the file and the place of the entry. Ids are distinct and
    // below kMaxTokens, so that bounds the number of tokens too.
    void addToken(std::string text, long long id, const std::string& where);
    // Bytes: every byte has its one-symbol token (else an error). Characters with byteFallback:
    // the <0xXX> tokens there are. Then each token's bytes.
    void finishVocabulary(bool byteFallback);
    // The next merge, left + right; its rank is the number of merges before it. A pair given
    // twice takes the later rank (encoder.py's dict, Hugging Face's map alike).
    void addMerge(std::string_view left, std::string_view right, const std::string& where);
    // An added token (after the merges), already a token of the vocabulary: cut out of a text
    // literally, so it stands for its text. A symbol that merges can make must keep the bytes
    // they join.
    void addAdded(const AddedToken& token, bool special, const std::string& where);

    ByteBpe::Impl& impl() { return *m_impl; }
    std::unique_ptr<ByteBpe::Impl> finish() { return std::move(m_impl); }

private:
    std::string spelledBytes(std::string_view text) const;

    std::string m_vocabWhere, m_vocabName;
    std::unique_ptr<ByteBpe::Impl> m_impl;
    std::size_t m_merges = 0;
    std::unordered_set<int> m_made;  // the byte symbols' and the merges' results' ids
};

}  // namespace attnviz::core::bpe
