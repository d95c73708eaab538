// Loading GPT-2's byte-level BPE: vocab.json and merges.txt, or a Hugging Face tokenizer.json.
// Every error names the file and the token, line or field at fault, on one line, quoting values
// clipped; a file is read up to bpe::kMaxFileBytes and holds at most bpe::kMaxTokens tokens.
#include "core/base/error.hpp"
#include "core/base/files.hpp"
#include "core/base/json_text.hpp"
#include "core/text/byte_bpe.hpp"
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

using nlohmann::json;

// A value from a file for a message: quoted, clipped to 40 bytes at a character boundary, invalid
// UTF-8 shown as U+FFFD (merges.txt may hold any bytes).
std::string shown(std::string_view s) {
    if (s.size() <= 40) return "'" + sanitizeUtf8(s) + "'";
    std::size_t cut = 40;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
    return "'" + sanitizeUtf8(s.substr(0, cut)) + "… (" + std::to_string(s.size()) + " bytes)'";
}

std::string lineColumn(std::string_view text, std::size_t byte) {
    std::size_t line = 1, column = 1;
    for (std::size_t i = 0; i < std::min(byte, text.size()); ++i) {
        if (text[i] == '\n') line++, column = 1;
        else ++column;
    }
    return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

// nlohmann's syntax error as one short line: where, and what it expected, without the text it
// last read (which can be any length).
[[noreturn]] void malformedJson(std::string_view text, const std::string& name, const json::exception& e) {
    std::string detail = e.what();  // "[json.exception.parse_error.101] parse error at line 1, column 2: syntax error …"
    std::size_t byte = 0;
    if (const auto* p = dynamic_cast<const json::parse_error*>(&e)) byte = p->byte == 0 ? 0 : p->byte - 1;
    if (const auto colon = detail.find(": "); colon != std::string::npos) detail.erase(0, colon + 2);
    if (const auto last = detail.find("; last read"); last != std::string::npos) detail.erase(last);
    throw InputError(name, "malformed JSON at " + lineColumn(text, byte) + ": " + clipText(detail, 160));
}

// "expected an id from 0 to 1048575, got 5000000": ids index a table, so they stay below the
// token limit (no real vocabulary comes near it).
std::string idRange(const std::string& got) { return "expected an id from 0 to " + std::to_string(bpe::kMaxTokens - 1) + ", got " + got; }

// Builds an Impl: tokens first, then the checks on the whole vocabulary, then merges.
// vocabWhere: the vocabulary's place in messages ("vocab.json", "tokenizer.json: model.vocab");
// vocabName: how a merge's message names it ("vocab.json", "model.vocab").
class Builder {
public:
    Builder(std::string vocabWhere, std::string vocabName)
        : m_vocabWhere(std::move(vocabWhere)), m_vocabName(std::move(vocabName)), m_impl(std::make_unique<ByteBpe::Impl>()) {}

    // A token and its id; `where` names the file and the place of the entry. Ids are distinct and
    // below bpe::kMaxTokens, so that bounds the number of tokens too.
    void addToken(std::string text, long long id, const std::string& where) {
        const std::string place = where + ": token " + shown(text);
        if (text.empty()) throw InputError(where, "a token is the empty text");
        if (text.size() > bpe::kMaxTokenBytes)
            throw InputError(place, "longer than " + std::to_string(bpe::kMaxTokenBytes) + " bytes, the most a token may be");
        if (id < 0 || static_cast<std::size_t>(id) >= bpe::kMaxTokens) throw InputError(place, idRange(std::to_string(id)));
        auto& texts = m_impl->texts;
        if (static_cast<std::size_t>(id) >= texts.size()) texts.resize(static_cast<std::size_t>(id) + 1);
        if (!texts[id].empty()) throw InputError(place, "its id " + std::to_string(id) + " is also the id of " + shown(texts[id]));
        if (!m_impl->ids.emplace(text, static_cast<int>(id)).second) throw InputError(place, "appears twice");
        texts[id] = std::move(text);
    }

    // Every byte has its one-symbol token; each token's bytes.
    void finishVocabulary() {
        auto& impl = *m_impl;
        for (int b = 0; b < 256; ++b) {
            std::string symbol;
            appendUtf8(symbol, bpe::kByteToUnicode[b]);
            const auto it = impl.ids.find(symbol);
            if (it == impl.ids.end()) {
                char hex[8];
                std::snprintf(hex, sizeof hex, "0x%02X", b);
                throw InputError(m_vocabWhere, std::string("byte ") + hex + " has no token: its symbol " + shown(symbol) +
                                                   " is not in the vocabulary (a byte-level one holds all 256)");
            }
            impl.byteIds[b] = it->second;
            m_made.insert(it->second);
        }
        impl.bytes.resize(impl.texts.size());
        for (std::size_t id = 0; id < impl.texts.size(); ++id) impl.bytes[id] = spelledBytes(impl.texts[id]);
    }

    // The next merge, left + right; its rank is the number of merges before it. A pair given
    // twice takes the later rank, as in encoder.py's dict(zip(merges, range(len(merges)))).
    void addMerge(std::string_view left, std::string_view right, const std::string& where) {
        if (m_merges++ >= bpe::kMaxTokens)
            throw InputError(where, "more than " + std::to_string(bpe::kMaxTokens) + " merges, the most a vocabulary may have");
        const auto id = [&](std::string_view text, const char* what) {
            const auto it = m_impl->ids.find(text);
            if (it == m_impl->ids.end()) throw InputError(where, std::string(what) + shown(text) + " is not in " + m_vocabName);
            return it->second;
        };
        const int l = id(left, "the left symbol "), r = id(right, "the right symbol ");
        std::string joined(left);
        joined += right;
        const int result = id(joined, "the merged symbol ");
        m_impl->merges[bpe::pairKey(l, r)] = {static_cast<int>(m_merges - 1), result};
        m_made.insert(result);
    }

    // A special token (after the merges): cut out of a text literally, so it stands for its
    // spelling's own bytes. A symbol that merges can make must keep the bytes they join.
    void addSpecial(const std::string& text, const std::string& where) {
        const int id = m_impl->ids.at(text);
        if (m_impl->bytes[id] != text && m_made.count(id))
            throw InputError(where, "the special token " + shown(text) + " is also a symbol the merges make, of other bytes");
        m_impl->bytes[id] = text;
        m_impl->specials.emplace_back(text, id);
    }

    ByteBpe::Impl& impl() { return *m_impl; }
    std::unique_ptr<ByteBpe::Impl> finish() { return std::move(m_impl); }

private:
    // The bytes a spelling stands for: through the byte table when every character is in it,
    // else the spelling itself (an added token such as "<｜end▁of▁sentence｜>", or one not byte-level).
    static std::string spelledBytes(std::string_view text) {
        std::string out;
        for (std::size_t pos = 0; pos < text.size();) {
            const char32_t cp = decodeUtf8(text, pos);
            if (cp >= bpe::kByteSymbols || bpe::kUnicodeToByte[cp] < 0) return std::string(text);
            out += static_cast<char>(bpe::kUnicodeToByte[cp]);
        }
        return out;
    }

    std::string m_vocabWhere, m_vocabName;
    std::unique_ptr<ByteBpe::Impl> m_impl;
    std::size_t m_merges = 0;
    std::unordered_set<int> m_made;  // the byte symbols' and the merges' results' ids
};

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

std::string readFile(const std::string& path) { return readTextFile(path, bpe::kMaxFileBytes, "a tokenizer file"); }

// tokenizer.json's pieces ---------------------------------------------------------------------

const json* member(const json& object, const char* key) {
    const auto it = object.find(key);
    return it == object.end() || it->is_null() ? nullptr : &*it;
}

// A field that would change the tokens from GPT-2's must be absent, null, or hold its GPT-2 value.
void requireField(const json& object, const char* key, const json& gpt2, const std::string& where) {
    const json* v = member(object, key);
    if (v && *v != gpt2)
        throw InputError(where + "." + key, "GPT-2's byte-level BPE has " + gpt2.dump() + " here, got " + describeJson(*v));
}

long long integerId(const json& v, const std::string& where) {
    if (v.is_number_unsigned() && v.get<std::uint64_t>() >= bpe::kMaxTokens) throw InputError(where, idRange(describeJson(v)));
    if (v.is_number_integer()) return v.get<long long>();
    throw InputError(where, "expected an integer id, got " + describeJson(v));
}

}  // namespace

ByteBpe ByteBpe::fromFiles(const std::string& vocabPath, const std::string& mergesPath) {
    return fromText(readFile(vocabPath), readFile(mergesPath), vocabPath, mergesPath);
}

ByteBpe ByteBpe::fromTokenizerJson(const std::string& path) { return fromTokenizerJsonText(readFile(path), path); }

ByteBpe ByteBpe::fromText(std::string_view vocabJson, std::string_view mergesText, const std::string& vocabName,
                          const std::string& mergesName) {
    // 1. the tokens, 2. the byte symbols, 3. the merges, 4. <|endoftext|> as a special token
    Builder builder(vocabName, vocabName);
    VocabSax sax(vocabJson, vocabName, builder);
    json::sax_parse(vocabJson.begin(), vocabJson.end(), &sax);  // errors throw from the handler
    builder.finishVocabulary();
    readMerges(mergesText, mergesName, builder);
    if (builder.impl().ids.count("<|endoftext|>")) builder.addSpecial("<|endoftext|>", vocabName);
    return ByteBpe(builder.finish());
}

ByteBpe ByteBpe::fromTokenizerJsonText(std::string_view text, const std::string& name) {
    json j;
    try {
        j = json::parse(text.begin(), text.end());
    } catch (const json::exception& e) {
        malformedJson(text, name, e);
    }
    // 1. a BPE model with GPT-2's pre-tokenisation and nothing that would change its tokens
    if (!j.is_object()) throw InputError(name, "expected a tokenizer object with \"model\", got " + describeJson(j));
    const json* model = member(j, "model");
    if (!model || !model->is_object()) throw InputError(name + ": model", "expected an object with \"vocab\" and \"merges\"");
    const json* type = member(*model, "type");
    if (!type || *type != "BPE")
        throw InputError(name + ": model.type", "expected \"BPE\", got " + (type ? describeJson(*type) : "nothing"));
    requireField(*model, "dropout", json(0), name + ": model");
    requireField(*model, "continuing_subword_prefix", json(""), name + ": model");
    requireField(*model, "end_of_word_suffix", json(""), name + ": model");
    requireField(*model, "ignore_merges", json(false), name + ": model");
    const json* pre = member(j, "pre_tokenizer");
    if (!pre || !pre->is_object() || member(*pre, "type") == nullptr || pre->at("type") != "ByteLevel")
        throw InputError(name + ": pre_tokenizer",
                         "expected GPT-2's {\"type\": \"ByteLevel\"}, got " + (pre ? describeJson(*pre) : "nothing"));
    requireField(*pre, "add_prefix_space", json(false), name + ": pre_tokenizer");
    requireField(*pre, "use_regex", json(true), name + ": pre_tokenizer");
    if (const json* normalizer = member(j, "normalizer"))
        throw InputError(name + ": normalizer", "GPT-2 normalises nothing (null), got " + describeJson(*normalizer));

    // 2. the vocabulary and the added tokens (an added token already in it must keep its id)
    const json* vocab = member(*model, "vocab");
    if (!vocab || !vocab->is_object()) throw InputError(name + ": model.vocab", "expected an object of \"token\": id entries");
    Builder builder(name + ": model.vocab", "model.vocab");
    for (const auto& [text, id] : vocab->items())
        builder.addToken(text, integerId(id, name + ": model.vocab: token " + shown(text)), name + ": model.vocab");
    std::vector<std::pair<std::string, std::string>> specials;  // text, where
    if (const json* added = member(j, "added_tokens")) {
        if (!added->is_array()) throw InputError(name + ": added_tokens", "expected a list, got " + describeJson(*added));
        for (std::size_t i = 0; i < added->size(); ++i) {
            const std::string where = name + ": added_tokens[" + std::to_string(i) + "]";
            const json& t = (*added)[i];
            const json* content = t.is_object() ? member(t, "content") : nullptr;
            if (!content || !content->is_string() || !t.contains("id"))
                throw InputError(where, "expected an object with \"id\" and \"content\", got " + describeJson(t));
            const std::string& text = content->get_ref<const std::string&>();
            const long long id = integerId(t.at("id"), where + ".id");
            const json* special = member(t, "special");
            if (special && !special->is_boolean())
                throw InputError(where + ".special", "expected true or false, got " + describeJson(*special));
            const auto known = builder.impl().ids.find(text);
            if (known == builder.impl().ids.end()) builder.addToken(text, id, where);
            else if (known->second != id)
                throw InputError(where, "token " + shown(text) + " has the id " + std::to_string(known->second) + " in model.vocab, not " +
                                            std::to_string(id));
            if (special && special->get<bool>() &&
                std::none_of(specials.begin(), specials.end(), [&](const auto& s) { return s.first == text; }))
                specials.emplace_back(text, where);
        }
    }
    builder.finishVocabulary();

    // 3. the merges: "left right" strings, or [left, right] pairs (whose symbols may hold spaces)
    const json* merges = member(*model, "merges");
    if (!merges || !merges->is_array()) throw InputError(name + ": model.merges", "expected a list of merges");
    for (std::size_t i = 0; i < merges->size(); ++i) {
        const std::string where = name + ": model.merges[" + std::to_string(i) + "]";
        const json& m = (*merges)[i];
        if (m.is_string()) {
            const std::string& s = m.get_ref<const std::string&>();
            const std::size_t space = s.find(' ');
            if (space == 0 || space == std::string::npos || space + 1 == s.size() || s.find(' ', space + 1) != std::string::npos)
                throw InputError(where, "expected two symbols separated by one space, got " + shown(s));
            builder.addMerge(std::string_view(s).substr(0, space), std::string_view(s).substr(space + 1), where);
        } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
            builder.addMerge(m[0].get_ref<const std::string&>(), m[1].get_ref<const std::string&>(), where);
        } else {
            throw InputError(where, "expected \"left right\" or [\"left\", \"right\"], got " + describeJson(m));
        }
    }
    for (const auto& [text, where] : specials) builder.addSpecial(text, where);
    return ByteBpe(builder.finish());
}

}  // namespace attnviz::core
