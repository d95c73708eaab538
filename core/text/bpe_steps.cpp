// The steps around the merges of a tokenizer: the split patterns under PCRE2, the normalizer
// (NFC through ICU), Metaspace, and added tokens cut out of the text.
#include "core/base/error.hpp"
#include "core/text/byte_bpe_impl.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/utf8.h>

#include <algorithm>
#include <cstdint>
#include <new>
#include <stdexcept>

namespace attnviz::core::bpe {
namespace {

// GPT-2's pattern (encoder.py) with its \s spelled \p{White_Space}. encoder.py compiles it with
// Python's `regex` module, whose \s is Unicode's White_Space property; PCRE2's \s under UCP is
// that and U+180E (MONGOLIAN VOWEL SEPARATOR, a format character since Unicode 6.3), which GPT-2
// puts in the [^\s\p{L}\p{N}] class. Everything else is as written: the contractions are
// lower case only ("'LL" is "'" then "LL"), and \s+(?!\S) leaves the last space of a run to
// the word after it ("a   b" → "a", "  ", " b").
constexpr char kGpt2Pattern[] =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\p{White_Space}\p{L}\p{N}]+|\p{White_Space}+(?!\P{White_Space})|\p{White_Space}+)";

std::string pcre2Message(int error) {
    PCRE2_UCHAR text[256];
    pcre2_get_error_message(error, text, sizeof text);
    return reinterpret_cast<const char*>(text);
}

using MatchData = std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)>;

using MatchContext = std::unique_ptr<pcre2_match_context, decltype(&pcre2_match_context_free)>;

// The steps left to one text's matching, and the context whose limit each call is given.
struct MatchBudget {
    std::uint64_t left = 0;
    pcre2_match_context* context = nullptr;
};

// Calls piece(view) for each piece that `pattern` makes of `text`: its matches and, between
// them, each run of valid UTF-8 and each invalid byte. An empty match is not one (PCRE2_NOTEMPTY).
// Each call is tried with a small step limit, doubled while it is too small: every limit tried
// is charged to `budget`, so a call is charged at most four times the steps it took, and the
// whole text never takes more than its budget. Throws InputError(pattern.where(), …) past it.
template <class Piece>
void splitBy(const Pattern& pattern, std::string_view text, pcre2_match_data* match, MatchBudget& budget, Piece&& piece) {
    constexpr std::uint64_t kFirstLimit = 1000;
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    // The pieces in order, a match joined to the stretch before or after it as the behavior says:
    // `held` waits for what follows it (a stretch before a match, or a match before a stretch).
    using Behavior = Pattern::Behavior;
    const Behavior behavior = pattern.behavior();
    std::string_view held;
    bool heldMatch = false;
    const auto flush = [&] {
        if (!held.empty()) piece(held);
        held = {};
    };
    const auto give = [&](std::string_view p, bool isMatch) {
        const bool joins = !held.empty() && held.data() + held.size() == p.data();
        if (behavior == Behavior::MergedWithPrevious) {
            if (isMatch && joins && !heldMatch) {
                piece(std::string_view(held.data(), held.size() + p.size()));
                held = {};
                return;
            }
            flush();
            if (isMatch) piece(p);
            else held = p, heldMatch = false;
            return;
        }
        if (behavior == Behavior::MergedWithNext) {
            if (!isMatch && joins && heldMatch) {
                piece(std::string_view(held.data(), held.size() + p.size()));
                held = {};
                return;
            }
            flush();
            if (isMatch) held = p, heldMatch = true;
            else piece(p);
            return;
        }
        piece(p);
    };
    const auto gap = [&](std::size_t from, std::size_t to) {
        while (from < to) {
            std::size_t end = from;
            while (end < to && utf8Length(text, end) != 0) end += utf8Length(text, end);
            if (end > from) give(text.substr(from, end - from), false);
            if (end < to) give(text.substr(end, 1), false);
            from = end + (end < to ? 1 : 0);
        }
    };
    std::size_t at = 0;
    while (at < text.size()) {
        int rc = 0;
        for (std::uint64_t limit = kFirstLimit;; limit *= 2) {
            const std::uint64_t granted = std::min(limit, budget.left);
            pcre2_set_match_limit(budget.context, static_cast<std::uint32_t>(std::min<std::uint64_t>(granted, UINT32_MAX)));
            rc = pcre2_match(pattern.code(), subject, text.size(), at, PCRE2_NOTEMPTY, match, budget.context);
            budget.left -= granted;
            if (rc != PCRE2_ERROR_MATCHLIMIT) break;
            if (budget.left == 0)
                throw InputError(pattern.where(), "backtracks: splitting a text of " + std::to_string(text.size()) +
                                                      " bytes took more than its budget of matching steps (" +
                                                      std::to_string(kMatchStepsBase) + " and " + std::to_string(kMatchStepsPerByte) +
                                                      " a byte); attnviz does not run patterns that do");
        }
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) throw InputError(pattern.where(), "failed at byte " + std::to_string(at) + " of the text: " + pcre2Message(rc));
        const PCRE2_SIZE* span = pcre2_get_ovector_pointer(match);
        gap(at, span[0]);
        give(text.substr(span[0], span[1] - span[0]), true);
        at = span[1];
    }
    gap(at, text.size());
    flush();
}

// Rust's \s and \w (Unicode), as the added tokens' lstrip, rstrip and single_word test them.
bool isSpace(char32_t c) { return u_isUWhiteSpace(static_cast<UChar32>(c)) != 0; }
bool isWord(char32_t c) {
    const auto cp = static_cast<UChar32>(c);
    return u_hasBinaryProperty(cp, UCHAR_ALPHABETIC) || u_hasBinaryProperty(cp, UCHAR_JOIN_CONTROL) ||
           (U_GET_GC_MASK(cp) & (U_GC_M_MASK | U_GC_ND_MASK | U_GC_PC_MASK)) != 0;
}
// The length of the character ending just before `end`, 0 for an invalid byte or none.
std::size_t lengthBefore(std::string_view text, std::size_t end) {
    for (std::size_t back = 1; back <= std::min<std::size_t>(4, end); ++back)
        if (utf8Length(text, end - back) == back) return back;
    return 0;
}
// The code point starting at `at`, or U+FFFD (neither space nor word) for an invalid byte or none.
char32_t after(std::string_view text, std::size_t at) {
    const std::size_t n = at < text.size() ? utf8Length(text, at) : 0;
    if (n == 0) return 0xFFFD;
    std::size_t pos = at;
    UChar32 c = 0;
    U8_NEXT(reinterpret_cast<const std::uint8_t*>(text.data()), pos, at + n, c);
    return static_cast<char32_t>(c);
}

}  // namespace

Pattern::Pattern(std::string_view pattern, std::string where, Behavior behavior) : m_where(std::move(where)), m_behavior(behavior) {
    int error = 0;
    PCRE2_SIZE offset = 0;
    // UTF reads the text as UTF-8 characters, for which \p{…} are Unicode's properties; UCP makes
    // \d and \w Unicode's too. MATCH_INVALID_UTF lets a text with invalid UTF-8 be searched rather
    // than refused: an invalid sequence is never part of a match (PCRE2 10.34+).
    m_code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF,
                           &error, &offset, nullptr);
    if (!m_code) throw std::invalid_argument(pcre2Message(error) + " at offset " + std::to_string(offset));
    pcre2_jit_compile(m_code, PCRE2_JIT_COMPLETE);  // where JIT is missing, pcre2_match interprets
}
Pattern::~Pattern() { pcre2_code_free(m_code); }

std::shared_ptr<const Pattern> gpt2Pattern() {
    static const std::shared_ptr<const Pattern> pattern = std::make_shared<const Pattern>(kGpt2Pattern, "GPT-2's split pattern");
    return pattern;
}

std::string pcre2Syntax(std::string_view pattern) {
    std::string out;
    for (std::size_t i = 0; i < pattern.size(); ++i) {
        if (pattern[i] != '\\' || i + 1 == pattern.size()) {
            out += pattern[i];
            continue;
        }
        const char next = pattern[++i];
        if (next == 's') out += R"(\p{White_Space})";
        else if (next == 'S') out += R"(\P{White_Space})";
        else out += '\\', out += next;
    }
    return out;
}

std::size_t utf8Length(std::string_view text, std::size_t pos) {
    std::size_t next = pos;
    UChar32 c = 0;
    U8_NEXT(reinterpret_cast<const std::uint8_t*>(text.data()), next, text.size(), c);
    return c < 0 ? 0 : next - pos;
}

std::string normalize(const std::vector<NormalizerStep>& steps, std::string_view text) {
    std::string s(text);
    for (const NormalizerStep& step : steps) {
        switch (step.kind) {
            case NormalizerStep::Kind::Prepend:
                if (!s.empty()) s.insert(0, step.text);
                break;
            case NormalizerStep::Kind::Replace: {
                std::string out;
                for (std::size_t at = 0;;) {
                    const std::size_t hit = s.find(step.text, at);
                    out.append(s, at, hit == std::string::npos ? std::string::npos : hit - at);
                    if (hit == std::string::npos) break;
                    out += step.by;
                    at = hit + step.text.size();
                }
                s = std::move(out);
                break;
            }
            case NormalizerStep::Kind::Nfc: {
                UErrorCode status = U_ZERO_ERROR;
                const icu::Normalizer2* nfc = icu::Normalizer2::getNFCInstance(status);
                if (U_FAILURE(status)) throw std::runtime_error(std::string("ICU has no NFC: ") + u_errorName(status));
                std::string out;
                for (std::size_t at = 0; at < s.size();) {
                    std::size_t end = at;
                    while (end < s.size() && utf8Length(s, end) != 0) end += utf8Length(s, end);
                    if (end > at) {
                        icu::StringByteSink<std::string> sink(&out);
                        nfc->normalizeUTF8(0, icu::StringPiece(s.data() + at, static_cast<int32_t>(end - at)), sink, nullptr, status);
                        if (U_FAILURE(status)) throw InputError("text", std::string("NFC failed: ") + u_errorName(status));
                    }
                    if (end < s.size()) out += s[end++];  // an invalid byte, kept
                    at = end;
                }
                s = std::move(out);
                break;
            }
        }
    }
    return s;
}

void forEachPiece(const ByteBpe::Impl& impl, std::string_view text, bool startsText, const std::function<void(std::string_view)>& piece) {
    // 1. Metaspace: spaces replaced, the replacement in front, cut before each replacement
    std::string spaced;
    std::vector<std::string_view> stretches{text};
    if (const auto& m = impl.metaspace) {
        spaced = normalize({{NormalizerStep::Kind::Replace, " ", m->replacement}}, text);
        const bool prepend = m->prepend == Metaspace::Prepend::Always || (m->prepend == Metaspace::Prepend::First && startsText);
        if (prepend && !spaced.empty() && spaced.compare(0, m->replacement.size(), m->replacement) != 0) spaced.insert(0, m->replacement);
        stretches.assign({spaced});
        if (m->split) {
            stretches.clear();
            const std::string_view all(spaced);
            for (std::size_t at = 0; at < all.size();) {
                std::size_t next = all.find(m->replacement, at + 1);
                if (next == std::string_view::npos) next = all.size();
                stretches.push_back(all.substr(at, next - at));
                at = next;
            }
        }
    }
    // 2. the split patterns, each on the pieces of the one before
    const MatchData match(pcre2_match_data_create(1, nullptr), &pcre2_match_data_free);
    const MatchContext context(pcre2_match_context_create(nullptr), &pcre2_match_context_free);
    if (!match || !context) throw std::bad_alloc();
    MatchBudget budget{kMatchStepsBase, context.get()};
    for (const std::string_view s : stretches) budget.left += kMatchStepsPerByte * s.size() * impl.splits.size();
    const std::function<void(std::string_view, std::size_t)> split = [&](std::string_view s, std::size_t level) {
        if (level == impl.splits.size()) return piece(s);
        splitBy(*impl.splits[level], s, match.get(), budget, [&](std::string_view p) { split(p, level + 1); });
    };
    for (const std::string_view s : stretches)
        if (!s.empty()) split(s, 0);
}

void splitAdded(const std::vector<AddedToken>& added, std::string_view text,
                const std::function<void(std::string_view, std::size_t)>& plain, const std::function<void(int)>& token) {
    std::vector<std::size_t> next(added.size());  // where each added token occurs next, from `scan` on
    for (std::size_t k = 0; k < next.size(); ++k) next[k] = text.find(added[k].text);
    std::size_t at = 0;  // the start of the plain text not yet given
    const auto refresh = [&](std::size_t from) {
        for (std::size_t k = 0; k < next.size(); ++k)
            if (next[k] != std::string_view::npos && next[k] < from) next[k] = text.find(added[k].text, from);
    };
    for (;;) {
        // 1. the leftmost match, the longest of those starting there
        std::size_t best = next.size();
        for (std::size_t k = 0; k < next.size(); ++k) {
            if (next[k] == std::string_view::npos) continue;
            if (best == next.size() || next[k] < next[best] || (next[k] == next[best] && added[k].text.size() > added[best].text.size()))
                best = k;
        }
        if (best == next.size()) break;
        const AddedToken& t = added[best];
        std::size_t start = next[best], stop = start + t.text.size();
        refresh(stop);  // matches do not overlap: the next ones start after this one
        // 2. a single word stands alone; 3. the white space it strips
        const auto before = [&](std::size_t end) {
            const std::size_t n = lengthBefore(text, end);
            return n == 0 ? char32_t{0xFFFD} : after(text, end - n);
        };
        if (t.singleWord && (isWord(before(start)) || isWord(after(text, stop)))) continue;
        if (t.lstrip)
            while (start > at && isSpace(before(start))) start -= lengthBefore(text, start);
        if (t.rstrip)
            while (stop < text.size() && isSpace(after(text, stop))) stop += utf8Length(text, stop);
        if (start > at) plain(text.substr(at, start - at), at);
        token(t.id);
        at = stop;
        refresh(stop);
    }
    if (at < text.size()) plain(text.substr(at), at);
}

}  // namespace attnviz::core::bpe
