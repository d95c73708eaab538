#include "core/text/wordpiece.hpp"

#include "core/base/error.hpp"
#include "core/base/files.hpp"
#include "core/base/json_text.hpp"
#include "core/base/utf8.hpp"
#include "core/text/json_fields.hpp"

#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>
#include <unicode/ustring.h>
#include <unicode/utf16.h>

#include <algorithm>
#include <stdexcept>

namespace attnviz::core {

namespace {

constexpr std::size_t kMaxVocabBytes = std::size_t{64} << 20;
using bpe::kMaxTokenBytes;
using bpe::kMaxTokens;
constexpr std::string_view kContinuing = "##";

// tokenizers' is_control: every Other character (Cc, Cf, Cn, Co, Cs) but tab, newline and return.
bool isControl(char32_t c) {
    if (c == U'\t' || c == U'\n' || c == U'\r') return false;
    switch (u_charType(static_cast<UChar32>(c))) {
        case U_CONTROL_CHAR:
        case U_FORMAT_CHAR:
        case U_UNASSIGNED:
        case U_PRIVATE_USE_CHAR:
        case U_SURROGATE: return true;
        default: return false;
    }
}

// Rust's char::is_whitespace: the White_Space property (tab, newline and return among it).
bool isWhitespace(char32_t c) { return u_isUWhiteSpace(static_cast<UChar32>(c)) != 0; }

// tokenizers' is_bert_punc: ASCII punctuation, or any Unicode punctuation category (P*).
bool isPunctuation(char32_t c) {
    if (c < 0x80) return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126);
    return u_ispunct(static_cast<UChar32>(c)) != 0;
}

// The CJK Unified Ideographs blocks BertNormalizer pads with spaces (not Hangul, Hiragana or Katakana).
bool isChineseChar(char32_t c) {
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
           (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

std::u32string codePoints(std::string_view text) {
    std::u32string out;
    out.reserve(text.size());
    for (std::size_t pos = 0; pos < text.size();) out.push_back(decodeUtf8(text, pos));
    return out;
}

std::string utf8Of(const std::u32string& text) {
    std::string out;
    out.reserve(text.size());
    for (const char32_t c : text) appendUtf8(out, c);
    return out;
}

// NFD, then every non-spacing mark (Mn) left out.
std::u32string stripAccents(const std::u32string& text) {
    UErrorCode status = U_ZERO_ERROR;
    const icu::Normalizer2* nfd = icu::Normalizer2::getNFDInstance(status);
    if (U_FAILURE(status)) throw std::runtime_error("ICU's NFD normalizer is not available");
    const std::string utf8 = utf8Of(text);
    const icu::UnicodeString decomposed =
        nfd->normalize(icu::UnicodeString::fromUTF8(icu::StringPiece(utf8.data(), static_cast<int32_t>(utf8.size()))), status);
    if (U_FAILURE(status)) throw std::runtime_error("ICU's NFD normalizer failed");
    std::u32string out;
    out.reserve(text.size());
    for (int32_t i = 0; i < decomposed.length();) {
        const UChar32 c = decomposed.char32At(i);
        i += U16_LENGTH(c);
        if (u_charType(c) != U_NON_SPACING_MARK) out.push_back(static_cast<char32_t>(c));
    }
    return out;
}

// Each character's full lower-case mapping alone (no context: a final Σ is σ, as Rust's
// char::to_lowercase gives it), ASCII directly.
std::u32string lowercase(const std::u32string& text) {
    std::u32string out;
    out.reserve(text.size());
    for (const char32_t c : text) {
        if (c < 0x80) {
            out.push_back(c >= U'A' && c <= U'Z' ? c + 32 : c);
            continue;
        }
        UChar in[2];
        int32_t n = 0;
        U16_APPEND_UNSAFE(in, n, static_cast<UChar32>(c));
        UChar lower[8];
        UErrorCode status = U_ZERO_ERROR;
        const int32_t m = u_strToLower(lower, 8, in, n, "", &status);
        if (U_FAILURE(status) || m > 8) {  // no mapping is that long; keep the character
            out.push_back(c);
            continue;
        }
        for (int32_t i = 0; i < m;) {
            UChar32 l = 0;
            U16_NEXT(lower, i, m, l);
            out.push_back(static_cast<char32_t>(l));
        }
    }
    return out;
}

}  // namespace

WordPiece WordPiece::fromVocabTxt(const std::string& path, const WordPieceOptions& options) {
    return fromVocabText(readTextFile(path, kMaxVocabBytes, "a vocab.txt"), path, options);
}

WordPiece WordPiece::fromVocabText(std::string_view text, const std::string& name, const WordPieceOptions& options) {
    if (text.size() > kMaxVocabBytes) throw InputError(name, "over 64 MiB: not a vocabulary attnviz reads");
    if (options.maxInputCharsPerWord < 1) throw InputError(name, "max_input_chars_per_word must be at least 1");
    WordPiece w;
    w.m_options = options;
    std::size_t line = 0;
    for (std::size_t at = 0; at < text.size(); ++line) {
        const std::size_t end = std::min(text.find('\n', at), text.size());
        std::string_view token = text.substr(at, end - at);
        at = end + 1;
        // trailing whitespace trimmed, as tokenizers' WordPiece::read_file does (a CRLF file's \r)
        while (!token.empty() &&
               (token.back() == ' ' || token.back() == '\t' || token.back() == '\r' || token.back() == '\v' || token.back() == '\f'))
            token.remove_suffix(1);
        const std::string where = name + ": line " + std::to_string(line + 1);
        if (w.m_tokens.size() == kMaxTokens) throw InputError(name, "more than 1048576 tokens: not a vocabulary attnviz reads");
        if (token.size() > kMaxTokenBytes) throw InputError(where, "a token of over 1024 bytes");
        if (firstInvalidUtf8(token) != std::string_view::npos) throw InputError(where, "not UTF-8");
        w.addToken(std::string(token), static_cast<int>(w.m_tokens.size()));  // a token given twice: the later line's id
    }
    const auto required = [&](std::string_view token) {
        const std::optional<int> id = w.idOf(token);
        if (!id) throw InputError(name, "no " + std::string(token) + " token: not a BERT vocabulary");
        return *id;
    };
    w.m_unk = required("[UNK]");
    w.m_cls = required("[CLS]");
    w.m_sep = required("[SEP]");
    w.m_mask = w.idOf("[MASK]");
    for (const std::string_view special : {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"})
        if (const std::optional<int> id = w.idOf(special)) w.m_specials.emplace_back(std::string(special), *id);
    w.sortSpecials();
    return w;
}

void WordPiece::addToken(std::string token, int id) {
    if (static_cast<std::size_t>(id) >= m_tokens.size()) m_tokens.resize(static_cast<std::size_t>(id) + 1);
    m_longest = std::max(m_longest, token.size());
    m_tokens[static_cast<std::size_t>(id)] = token;
    m_ids[std::move(token)] = id;
}

bool WordPiece::isSpecial(int id) const {
    return std::any_of(m_specials.begin(), m_specials.end(), [id](const auto& s) { return s.second == id; });
}

void WordPiece::sortSpecials() {
    // longest first, so that of two specials at one place the longer is taken
    std::stable_sort(m_specials.begin(), m_specials.end(), [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
}

namespace {

using bpe::flag;
using bpe::integerId;
using bpe::json;
using bpe::member;
using bpe::notRead;
using bpe::requireField;
using bpe::shown;
using bpe::string;
using bpe::typeOf;

// TemplateProcessing's pieces as (special token's name or "$A" / "$B", type id).
std::vector<std::pair<std::string, long long>> templatePieces(const json& list, const std::string& where) {
    if (!list.is_array() || list.size() > 8) throw InputError(where, "expected a list of at most 8 pieces, got " + describeJson(list));
    std::vector<std::pair<std::string, long long>> pieces;
    for (std::size_t i = 0; i < list.size(); ++i) {
        const std::string at = where + "[" + std::to_string(i) + "]";
        const json& piece = list[i];
        const json* special = piece.is_object() ? member(piece, "SpecialToken") : nullptr;
        const json* sequence = piece.is_object() ? member(piece, "Sequence") : nullptr;
        const json* body = special ? special : sequence;
        if (!body || !body->is_object())
            throw InputError(at, "expected {\"SpecialToken\": …} or {\"Sequence\": …}, got " + describeJson(piece));
        const json* type = member(*body, "type_id");
        if (type && !type->is_number_integer()) throw InputError(at + ".type_id", "expected an integer, got " + describeJson(*type));
        pieces.emplace_back((sequence ? "$" : "") + string(*body, "id", at), type ? type->get<long long>() : 0);
    }
    return pieces;
}

}  // namespace

WordPiece WordPiece::fromTokenizerJson(const std::string& path) { return fromTokenizerJsonText(bpe::readTokenizerFile(path), path); }

WordPiece WordPiece::fromTokenizerJsonText(std::string_view text, const std::string& name) {
    const json j = bpe::tokenizerObject(text, name);
    const json* model = member(j, "model");
    if (!model || !model->is_object()) throw InputError(name + ": model", "expected an object with \"vocab\"");
    if (const std::string& type = string(*model, "type", name + ": model"); type != "WordPiece")
        notRead(name + ": model.type", json(type), "only \"WordPiece\" is");
    requireField(*model, "continuing_subword_prefix", json("##"), name + ": model");
    for (const char* key : {"truncation", "padding"})
        if (const json* v = member(j, key)) notRead(name + ": " + key, *v, "only null is");

    WordPiece w;
    // 1. the normalizer: BertNormalizer or none
    WordPieceOptions& o = w.m_options;
    o = {.cleanText = false, .chineseChars = false, .lowercase = false, .stripAccents = false};
    if (const json* n = member(j, "normalizer")) {
        const std::string where = name + ": normalizer";
        if (const std::string& type = typeOf(*n, where); type != "BertNormalizer")
            notRead(where + ".type", json(type), "only \"BertNormalizer\" is");
        o.cleanText = flag(*n, "clean_text", true, where);
        o.chineseChars = flag(*n, "handle_chinese_chars", true, where);
        o.lowercase = flag(*n, "lowercase", true, where);
        o.stripAccents = member(*n, "strip_accents") ? std::optional<bool>(flag(*n, "strip_accents", false, where)) : std::nullopt;
    }
    // 2. the pre-tokenizer: BertPreTokenizer
    const json* pre = member(j, "pre_tokenizer");
    if (!pre) throw InputError(name + ": pre_tokenizer", "expected {\"type\": \"BertPreTokenizer\"}, got nothing");
    if (const std::string& type = typeOf(*pre, name + ": pre_tokenizer"); type != "BertPreTokenizer")
        notRead(name + ": pre_tokenizer.type", json(type), "only \"BertPreTokenizer\" is");
    // 3. the model's vocabulary: ids 0 … n − 1, each once
    if (const json* most = member(*model, "max_input_chars_per_word")) {
        if (!most->is_number_integer() || most->get<long long>() < 1 || most->get<long long>() > (1LL << 30))
            throw InputError(name + ": model.max_input_chars_per_word",
                             "expected a whole number of at least 1, got " + describeJson(*most));
        o.maxInputCharsPerWord = static_cast<int>(most->get<long long>());
    }
    const json* vocab = member(*model, "vocab");
    if (!vocab || !vocab->is_object()) throw InputError(name + ": model.vocab", "expected an object of \"token\": id entries");
    if (vocab->size() > kMaxTokens) throw InputError(name + ": model.vocab", "more than 1048576 tokens: not a vocabulary attnviz reads");
    std::vector<char> seen(vocab->size(), 0);
    for (const auto& [token, id] : vocab->items()) {
        const std::string where = name + ": model.vocab: token " + shown(token);
        const long long n = integerId(id, where);
        if (n < 0 || static_cast<std::size_t>(n) >= vocab->size())
            throw InputError(
                where, "id " + std::to_string(n) + " outside 0 … " + std::to_string(vocab->size() - 1) + " (ids are the tokens' places)");
        if (seen[static_cast<std::size_t>(n)]) throw InputError(where, "id " + std::to_string(n) + " is another token's too");
        if (token.size() > kMaxTokenBytes || firstInvalidUtf8(token) != std::string::npos)
            throw InputError(where, "over 1024 bytes or not UTF-8");
        seen[static_cast<std::size_t>(n)] = 1;
        w.addToken(token, static_cast<int>(n));
    }
    const std::string unk = member(*model, "unk_token") ? string(*model, "unk_token", name + ": model") : std::string("[UNK]");
    const std::optional<int> unkId = w.idOf(unk);
    if (!unkId) throw InputError(name + ": model.unk_token", shown(unk) + " is not in model.vocab");
    w.m_unk = *unkId;
    // A token the file names by its id: the vocabulary's own id for it.
    const auto requireId = [&](const std::string& token, long long id, const std::string& where) {
        const std::optional<int> known = w.idOf(token);
        if (!known || *known != id) throw InputError(where, "token " + shown(token) + " is not model.vocab's id " + std::to_string(id));
    };
    // 4. the added tokens, matched in the text as written
    bpe::eachAddedToken(j, name, [&](const json& t, const std::string& content, long long id, const std::string& where) {
        if (content.empty()) throw InputError(where + ".content", "an empty token");
        for (const char* key : {"lstrip", "rstrip", "single_word", "normalized"})
            if (flag(t, key, false, where)) notRead(where + "." + key, json(true), "only false is");
        requireId(content, id, where);
        w.m_specials.emplace_back(content, static_cast<int>(id));
    });
    w.sortSpecials();
    // 5. the template: [CLS] A [SEP], [CLS] A [SEP] B [SEP] with B's part of type 1
    const json* post = member(j, "post_processor");
    const std::string where = name + ": post_processor";
    if (!post) throw InputError(where, "expected BERT's template ([CLS] $A [SEP]), got nothing");
    std::string cls, sep;
    const std::string& type = typeOf(*post, where);
    if (type == "BertProcessing") {
        const auto pairOf = [&](const char* key, std::string& token) {
            const json* v = member(*post, key);
            if (!v || !v->is_array() || v->size() != 2 || !(*v)[0].is_string())
                throw InputError(where + "." + key, "expected [\"token\", id], got " + (v ? describeJson(*v) : "nothing"));
            token = (*v)[0].get<std::string>();
            requireId(token, integerId((*v)[1], where + "." + key), where + "." + key);
        };
        pairOf("cls", cls);
        pairOf("sep", sep);
    } else if (type == "TemplateProcessing") {
        const json* single = member(*post, "single");
        const json* pair = member(*post, "pair");
        if (!single || !pair) throw InputError(where, "expected \"single\" and \"pair\" templates");
        const auto one = templatePieces(*single, where + ".single");
        const auto two = templatePieces(*pair, where + ".pair");
        const bool bert = one.size() == 3 && one[1] == std::pair<std::string, long long>("$A", 0) && one[0].second == 0 &&
                          one[2].second == 0 && one[0].first[0] != '$' && one[2].first[0] != '$' && two.size() == 5 && two[0] == one[0] &&
                          two[1] == one[1] && two[2] == one[2] && two[3] == std::pair<std::string, long long>("$B", 1) &&
                          two[4] == std::pair<std::string, long long>(one[2].first, 1);
        if (!bert) throw InputError(where, "only BERT's template is read: [CLS] $A:0 [SEP]:0, and [CLS] $A:0 [SEP]:0 $B:1 [SEP]:1");
        cls = one[0].first;
        sep = one[2].first;
        const json* specials = member(*post, "special_tokens");
        for (const std::string& token : {cls, sep}) {
            const json* entry = specials && specials->is_object() ? member(*specials, token.c_str()) : nullptr;
            const json* ids = entry && entry->is_object() ? member(*entry, "ids") : nullptr;
            if (!ids || !ids->is_array() || ids->size() != 1)
                throw InputError(where + ".special_tokens", "expected " + shown(token) + " with one id");
            requireId(token, integerId((*ids)[0], where + ".special_tokens: " + shown(token)), where + ".special_tokens");
        }
    } else {
        notRead(where + ".type", json(type), "only BERT's template, \"TemplateProcessing\" or \"BertProcessing\", is");
    }
    w.m_cls = *w.idOf(cls);
    w.m_sep = *w.idOf(sep);
    w.m_mask = w.idOf("[MASK]");
    return w;
}

std::optional<int> WordPiece::idOf(std::string_view token) const {
    const auto it = m_ids.find(std::string(token));
    if (it == m_ids.end()) return std::nullopt;
    return it->second;
}

std::string WordPiece::normalize(std::string_view text) const {
    std::u32string s;
    s.reserve(text.size());
    for (const char32_t c : codePoints(text)) {
        if (m_options.cleanText) {
            if (c == 0 || c == 0xFFFD || isControl(c)) continue;
            if (isWhitespace(c)) {
                s.push_back(U' ');
                continue;
            }
        }
        if (m_options.chineseChars && isChineseChar(c)) {
            s.push_back(U' ');
            s.push_back(c);
            s.push_back(U' ');
            continue;
        }
        s.push_back(c);
    }
    if (m_options.stripAccents.value_or(m_options.lowercase)) s = stripAccents(s);
    if (m_options.lowercase) s = lowercase(s);
    return utf8Of(s);
}

std::vector<std::string> WordPiece::preTokens(std::string_view text) const {
    std::vector<std::string> out;
    std::string word;
    const auto flush = [&] {
        if (!word.empty()) out.push_back(std::move(word));
        word.clear();
    };
    const std::string normalized = normalize(text);
    for (std::size_t pos = 0; pos < normalized.size();) {
        const char32_t c = decodeUtf8(normalized, pos);
        if (isWhitespace(c)) {
            flush();
        } else if (isPunctuation(c)) {
            flush();
            appendUtf8(word, c);
            flush();
        } else {
            appendUtf8(word, c);
        }
    }
    flush();
    return out;
}

void WordPiece::appendWord(std::string_view word, std::vector<int>& ids) const {
    // the character boundaries, to try each end from the longest down
    std::vector<std::size_t> bounds;
    for (std::size_t pos = 0; pos < word.size();) {
        if (bounds.size() == static_cast<std::size_t>(m_options.maxInputCharsPerWord)) {  // a longer word is unknown
            ids.push_back(m_unk);
            return;
        }
        bounds.push_back(pos);
        decodeUtf8(word, pos);
    }
    bounds.push_back(word.size());
    const std::size_t before = ids.size();
    std::string piece;
    for (std::size_t start = 0; start + 1 < bounds.size();) {
        std::optional<int> found;
        std::size_t end = bounds.size() - 1;
        // no entry is longer than the longest token: pieces past it are not looked up
        const std::size_t prefix = start > 0 ? kContinuing.size() : 0;
        while (end > start && bounds[end] - bounds[start] + prefix > m_longest) --end;
        for (; end > start; --end) {
            piece.assign(start > 0 ? kContinuing : std::string_view());
            piece.append(word.substr(bounds[start], bounds[end] - bounds[start]));
            if (const auto it = m_ids.find(piece); it != m_ids.end()) {
                found = it->second;
                break;
            }
        }
        if (!found) {  // a rest no entry starts: the whole word is unknown
            ids.resize(before);
            ids.push_back(m_unk);
            return;
        }
        ids.push_back(*found);
        start = end;
    }
}

void WordPiece::appendWords(std::string_view text, std::vector<int>& ids) const {
    // the specials first, in the raw text; the stretches between them normalized and split
    // each special's next place, found again only once passed: linear in the text
    std::vector<std::size_t> next(m_specials.size(), 0);
    for (std::size_t i = 0; i < m_specials.size(); ++i) next[i] = text.find(m_specials[i].first);
    std::size_t from = 0;
    while (from <= text.size()) {
        std::size_t best = text.size();
        const std::pair<std::string, int>* match = nullptr;
        for (std::size_t i = 0; i < m_specials.size(); ++i) {
            if (next[i] != std::string_view::npos && next[i] < from) next[i] = text.find(m_specials[i].first, from);
            if (next[i] < best) best = next[i], match = &m_specials[i];
        }
        for (const std::string& word : preTokens(text.substr(from, best - from))) appendWord(word, ids);
        if (!match) break;
        ids.push_back(match->second);
        from = best + match->first.size();
    }
}

std::vector<int> WordPiece::words(std::string_view text) const {
    std::vector<int> ids;
    appendWords(text, ids);
    return ids;
}

WordPiece::Encoding WordPiece::encode(std::string_view a, std::optional<std::string_view> b) const {
    Encoding e;
    e.ids.push_back(m_cls);
    appendWords(a, e.ids);
    e.ids.push_back(m_sep);
    e.typeIds.assign(e.ids.size(), 0);
    if (b) {
        appendWords(*b, e.ids);
        e.ids.push_back(m_sep);
        e.typeIds.resize(e.ids.size(), 1);
    }
    return e;
}

}  // namespace attnviz::core
