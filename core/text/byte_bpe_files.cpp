// Loading GPT-2's byte-level BPE from vocab.json and merges.txt, and the builder that the
// tokenizer.json reader (tokenizer_json.cpp) shares. Every error names the file and the token, line or field at fault, on one line, quoting values
// clipped; a file is read up to bpe::kMaxFileBytes and holds at most bpe::kMaxTokens tokens.
#include "core/base/error.hpp"
#include "core/base/files.hpp"
#include "core/base/json_text.hpp"
#include "core/text/byte_bpe.hpp"
#include "core/text/byte_bpe_builder.hpp"
#include "core/text/byte_bpe_impl.hpp"
#include "core/text/tokenizer.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <unordered_set>
#include <utility>

namespace attnviz::core {
namespace {

using bpe::Builder;
using bpe::idRange;
using bpe::malformedJson;
using bpe::shown;
using nlohmann::json;

std::string lineColumn(std::string_view text, std::size_t byte) {
    std::size_t line = 1, column = 1;
    for (std::size_t i = 0; i < std::min(byte, text.size()); ++i) {
        if (text[i] == '\n') line++, column = 1;
        else ++column;
    }
    return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

}  // namespace

namespace bpe {

std::string shown(std::string_view s) {
    if (s.size() <= 40) return "'" + sanitizeUtf8(s) + "'";
    std::size_t cut = 40;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
    return "'" + sanitizeUtf8(s.substr(0, cut)) + "… (" + std::to_string(s.size()) + " bytes)'";
}

void malformedJson(std::string_view text, const std::string& name, const json::exception& e) {
    std::string detail = e.what();  // "[json.exception.parse_error.101] parse error at line 1, column 2: syntax error …"
    std::size_t byte = 0;
    if (const auto* p = dynamic_cast<const json::parse_error*>(&e)) byte = p->byte == 0 ? 0 : p->byte - 1;
    if (const auto colon = detail.find(": "); colon != std::string::npos) detail.erase(0, colon + 2);
    if (const auto last = detail.find("; last read"); last != std::string::npos) detail.erase(last);
    throw InputError(name, "malformed JSON at " + lineColumn(text, byte) + ": " + clipText(detail, 160));
}

std::string idRange(const std::string& got) { return "expected an id from 0 to " + std::to_string(kMaxTokens - 1) + ", got " + got; }

std::string readTokenizerFile(const std::string& path) { return readTextFile(path, kMaxFileBytes, "a tokenizer file"); }

Builder::Builder(std::string vocabWhere, std::string vocabName)
    : m_vocabWhere(std::move(vocabWhere)), m_vocabName(std::move(vocabName)), m_impl(std::make_unique<ByteBpe::Impl>()) {}

void Builder::addToken(std::string text, long long id, const std::string& where) {
    // the token's place, made for a message only (a vocabulary has 262,144 of them)
    const auto place = [&] { return where + ": token " + shown(text); };
    if (text.empty()) throw InputError(where, "a token is the empty text");
    if (text.size() > kMaxTokenBytes)
        throw InputError(place(), "longer than " + std::to_string(kMaxTokenBytes) + " bytes, the most a token may be");
    if (id < 0 || static_cast<std::size_t>(id) >= kMaxTokens) throw InputError(place(), idRange(std::to_string(id)));
    auto& texts = m_impl->texts;
    if (static_cast<std::size_t>(id) >= texts.size()) texts.resize(static_cast<std::size_t>(id) + 1);
    if (!texts[id].empty()) throw InputError(place(), "its id " + std::to_string(id) + " is also the id of " + shown(texts[id]));
    if (!m_impl->ids.emplace(text, static_cast<int>(id)).second) throw InputError(place(), "appears twice");
    texts[id] = std::move(text);
}

void Builder::finishVocabulary(bool byteFallback) {
    auto& impl = *m_impl;
    for (int b = 0; b < 256; ++b) {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02X", b);
        if (impl.symbols == Symbols::Characters) {
            const auto it = byteFallback ? impl.ids.find("<" + std::string(hex) + ">") : impl.ids.end();
            impl.byteIds[b] = it == impl.ids.end() ? -1 : it->second;
            continue;
        }
        std::string symbol;
        appendUtf8(symbol, kByteToUnicode[b]);
        const auto it = impl.ids.find(symbol);
        if (it == impl.ids.end())
            throw InputError(m_vocabWhere, std::string("byte ") + hex + " has no token: its symbol " + shown(symbol) +
                                               " is not in the vocabulary (a byte-level one holds all 256)");
        impl.byteIds[b] = it->second;
        m_made.insert(it->second);
    }
    impl.bytes.resize(impl.texts.size());
    impl.special.assign(impl.texts.size(), false);
    for (std::size_t id = 0; id < impl.texts.size(); ++id) impl.bytes[id] = spelledBytes(impl.texts[id]);
    for (int b = 0; b < 256; ++b)
        if (impl.symbols == Symbols::Characters && impl.byteIds[b] >= 0) impl.bytes[impl.byteIds[b]] = std::string(1, static_cast<char>(b));
}

void Builder::addMerge(std::string_view left, std::string_view right, const std::string& where) {
    if (m_merges++ >= kMaxTokens)
        throw InputError(where, "more than " + std::to_string(kMaxTokens) + " merges, the most a vocabulary may have");
    const auto id = [&](std::string_view text, const char* what) {
        const auto it = m_impl->ids.find(text);
        if (it == m_impl->ids.end()) throw InputError(where, std::string(what) + shown(text) + " is not in " + m_vocabName);
        return it->second;
    };
    const int l = id(left, "the left symbol "), r = id(right, "the right symbol ");
    std::string joined(left);
    joined += right;
    const int result = id(joined, "the merged symbol ");
    m_impl->merges[pairKey(l, r)] = {static_cast<int>(m_merges - 1), result};
    m_made.insert(result);
}

void Builder::addAdded(const AddedToken& token, bool special, const std::string& where) {
    const int id = token.id;
    // A plain (not special) added token spelled as the vocabulary's own symbol of its id (Gemma's
    // runs of "▁") is that token listed again: matched in the text as written, and standing for the
    // bytes its spelling does, as the merges make it. A special one stands for its text.
    const auto own = m_impl->ids.find(token.text);
    const bool ownSymbol = !special && own != m_impl->ids.end() && own->second == id;
    if (!ownSymbol && m_impl->bytes[id] != token.text && m_made.count(id))
        throw InputError(where, "the added token " + shown(token.text) + " is also a symbol the merges make, of other bytes");
    if (!ownSymbol) m_impl->bytes[id] = token.text;
    m_impl->special[id] = m_impl->special[id] || special;
    auto& added = m_impl->added;
    if (std::none_of(added.begin(), added.end(), [&](const AddedToken& a) { return a.text == token.text; })) added.push_back(token);
}

// The bytes a spelling stands for. Bytes: through the byte table when every character is in it,
// else the spelling itself (an added token such as "<｜end▁of▁sentence｜>"). Characters: the
// spelling with each `space` ("▁") a space (a byte token's byte is set by finishVocabulary).
std::string Builder::spelledBytes(std::string_view text) const {
    if (m_impl->symbols == Symbols::Characters) {
        if (m_impl->space.empty()) return std::string(text);
        return normalize({{NormalizerStep::Kind::Replace, m_impl->space, " "}}, text);
    }
    std::string out;
    for (std::size_t pos = 0; pos < text.size();) {
        const char32_t cp = decodeUtf8(text, pos);
        if (cp >= kByteSymbols || kUnicodeToByte[cp] < 0) return std::string(text);
        out += static_cast<char>(kUnicodeToByte[cp]);
    }
    return out;
}

}  // namespace bpe

namespace {

// vocab.json's SAX events straight into the builder (no tree: a file of a million tokens costs
// the tokens). Anything but an object of "token": id stops at the first entry at fault.
class VocabSax {
public:
    VocabSax(std::string_view text, const std::string& name, Builder& builder) : m_text(text), m_name(name), m_builder(builder) {}

    bool null() { return wrong("null"); }
    bool boolean(bool) { return wrong("a boolean"); }
    bool number_integer(json::number_integer_t n) { return id(n); }
    bool number_unsigned(json::number_unsigned_t n) {
        if (m_depth == 1 && n >= bpe::kMaxTokens) throw InputError(m_name + ": token " + shown(m_key), idRange(std::to_string(n)));
        return id(static_cast<long long>(std::min<json::number_unsigned_t>(n, bpe::kMaxTokens)));
    }
    bool number_float(json::number_float_t, const json::string_t& s) { return wrong("the number " + clipText(s, 24)); }
    bool string(json::string_t&) { return wrong("a string"); }
    bool binary(json::binary_t&) { return wrong("binary data"); }
    bool start_object(std::size_t) { return m_depth++ == 0 ? true : wrong("an object"); }
    bool end_object() { return --m_depth, true; }
    bool start_array(std::size_t) { return wrong("an array"); }
    bool end_array() { return true; }
    bool key(json::string_t& k) { return m_key = std::move(k), true; }
    bool parse_error(std::size_t, const std::string&, const json::exception& e) { malformedJson(m_text, m_name, e); }

private:
    bool id(long long n) {
        if (m_depth != 1) return wrong("a number");
        m_builder.addToken(std::move(m_key), n, m_name);
        return true;
    }
    bool wrong(const std::string& got) {
        if (m_depth == 0) throw InputError(m_name, "expected a JSON object of \"token\": id entries, got " + got);
        throw InputError(m_name + ": token " + shown(m_key), "expected an integer id, got " + got);
    }

    std::string_view m_text;
    const std::string& m_name;
    Builder& m_builder;
    std::string m_key;
    int m_depth = 0;
};

// merges.txt: an optional first line "#version…", then "left right" a line (one space between
// two non-empty symbols; a "\r" before the "\n" is allowed); blank lines only at the end.
void readMerges(std::string_view text, const std::string& name, Builder& builder) {
    std::size_t lineNumber = 0, blank = 0;  // blank: the first blank line seen
    for (std::size_t at = 0; at < text.size();) {
        std::size_t end = text.find('\n', at);
        if (end == std::string_view::npos) end = text.size();
        std::string_view line = text.substr(at, end - at);
        at = end + 1;
        ++lineNumber;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (lineNumber == 1 && line.substr(0, 8) == "#version") continue;
        if (line.empty()) {
            if (blank == 0) blank = lineNumber;
            continue;
        }
        const std::string where = name + ": line " + std::to_string(lineNumber);
        if (blank != 0) throw InputError(name + ": line " + std::to_string(blank), "a blank line between merges");
        const std::size_t space = line.find(' ');
        if (space == 0 || space == std::string_view::npos || space + 1 == line.size() ||
            line.find(' ', space + 1) != std::string_view::npos)
            throw InputError(where, "expected two symbols separated by one space, got " + shown(line));
        builder.addMerge(line.substr(0, space), line.substr(space + 1), where);
    }
}

}  // namespace

ByteBpe ByteBpe::fromFiles(const std::string& vocabPath, const std::string& mergesPath) {
    return fromText(bpe::readTokenizerFile(vocabPath), bpe::readTokenizerFile(mergesPath), vocabPath, mergesPath);
}

ByteBpe ByteBpe::fromRobertaFiles(const std::string& vocabPath, const std::string& mergesPath) {
    const std::string vocabJson = bpe::readTokenizerFile(vocabPath);
    Builder builder(vocabPath, vocabPath);
    VocabSax sax(vocabJson, vocabPath, builder);
    json::sax_parse(vocabJson.begin(), vocabJson.end(), &sax);
    builder.impl().splits.push_back(bpe::gpt2Pattern());
    builder.impl().mergeRounds = true;
    builder.finishVocabulary(false);
    readMerges(bpe::readTokenizerFile(mergesPath), mergesPath, builder);
    // RobertaTokenizer's specials, each its own token in the text; <mask> takes the space before it.
    ByteBpe::Impl& impl = builder.impl();
    const auto idOf = [&](const char* token) {
        const auto it = impl.ids.find(std::string_view(token));
        if (it == impl.ids.end())
            throw InputError(vocabPath,
                             std::string(token) + " is not in the vocabulary (RoBERTa's files hold <s>, <pad>, </s>, <unk> and <mask>)");
        return it->second;
    };
    for (const char* token : {"<s>", "<pad>", "</s>", "<unk>", "<mask>"}) {
        bpe::AddedToken added{token, idOf(token)};
        added.lstrip = std::string_view(token) == "<mask>";
        builder.addAdded(added, true, vocabPath);
    }
    impl.prefix = {idOf("<s>")};
    impl.suffix = {idOf("</s>")};
    impl.pairTemplate = true;
    impl.pairPrefix = {idOf("</s>")};
    return ByteBpe(builder.finish());
}

ByteBpe ByteBpe::fromText(std::string_view vocabJson, std::string_view mergesText, const std::string& vocabName,
                          const std::string& mergesName) {
    // 1. the tokens, 2. the byte symbols, 3. the merges, 4. <|endoftext|> as a special token
    Builder builder(vocabName, vocabName);
    VocabSax sax(vocabJson, vocabName, builder);
    json::sax_parse(vocabJson.begin(), vocabJson.end(), &sax);  // errors throw from the handler
    builder.impl().splits.push_back(bpe::gpt2Pattern());
    builder.impl().mergeRounds = true;
    builder.finishVocabulary(false);
    readMerges(mergesText, mergesName, builder);
    if (const auto eot = builder.impl().ids.find("<|endoftext|>"); eot != builder.impl().ids.end())
        builder.addAdded({eot->first, eot->second}, true, vocabName);
    return ByteBpe(builder.finish());
}

}  // namespace attnviz::core
