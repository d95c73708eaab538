// GPT-2's byte-level BPE: the pattern, the merges, decoding and labels. Loading is in
// byte_bpe_files.cpp.
#include "core/text/byte_bpe.hpp"

#include "core/base/error.hpp"
#include "core/text/byte_bpe_impl.hpp"
#include "core/text/tokenizer.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <stdexcept>

namespace attnviz::core {
namespace {

// GPT-2's pattern (encoder.py) with its \s spelled \p{White_Space}. encoder.py compiles it with
// Python's `regex` module, whose \s is Unicode's White_Space property; PCRE2's \s under UCP is
// that and U+180E (MONGOLIAN VOWEL SEPARATOR, a format character since Unicode 6.3), which GPT-2
// puts in the [^\s\p{L}\p{N}] class. Everything else is as written: the contractions are
// lower case only ("'LL" is "'" then "LL"), and \s+(?!\S) leaves the last space of a run to
// the word after it ("a   b" → "a", "  ", " b").
constexpr char kPattern[] =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\p{White_Space}\p{L}\p{N}]+|\p{White_Space}+(?!\P{White_Space})|\p{White_Space}+)";

// Compiled once (the first encode, in whichever thread: a static's initialisation is
// thread-safe) and shared read-only; each call has its own match data. UTF reads the text as
// UTF-8 characters, for which \p{…} are Unicode's properties; UCP would make \s, \d and \w
// Unicode's too (the pattern has none of them now; it stays so that an edit that uses one is
// not quietly ASCII). MATCH_INVALID_UTF lets a text with invalid UTF-8 be searched rather than
// refused: an invalid sequence is never part of a match (PCRE2 10.34+), and since the
// alternatives together take any character, what lies between matches is only invalid bytes.
class Pattern {
public:
    Pattern() {
        int error = 0;
        PCRE2_SIZE offset = 0;
        m_code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(kPattern), PCRE2_ZERO_TERMINATED,
                               PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &error, &offset, nullptr);
        if (!m_code) throw std::logic_error("GPT-2's pattern does not compile: " + message(error));
        pcre2_jit_compile(m_code, PCRE2_JIT_COMPLETE);  // where JIT is missing, pcre2_match interprets
    }
    Pattern(const Pattern&) = delete;
    Pattern& operator=(const Pattern&) = delete;
    ~Pattern() { pcre2_code_free(m_code); }

    const pcre2_code* code() const { return m_code; }
    static std::string message(int error) {
        PCRE2_UCHAR text[256];
        pcre2_get_error_message(error, text, sizeof text);
        return reinterpret_cast<const char*>(text);
    }

private:
    pcre2_code* m_code = nullptr;
};

const Pattern& gpt2Pattern() {
    static const Pattern pattern;
    return pattern;
}

using MatchData = std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)>;
MatchData newMatchData() { return {pcre2_match_data_create_from_pattern(gpt2Pattern().code(), nullptr), &pcre2_match_data_free}; }

// Calls piece(view) for each of the pattern's pieces of `text`, in order, and for each byte of
// an invalid sequence between them a piece of its own: the pieces concatenate to the text.
template <class Piece>
void forEachPiece(std::string_view text, pcre2_match_data* match, Piece&& piece) {
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    std::size_t at = 0;
    while (at < text.size()) {
        const int rc = pcre2_match(gpt2Pattern().code(), subject, text.size(), at, 0, match, nullptr);
        std::size_t start = text.size(), end = text.size();
        if (rc >= 0) {
            const PCRE2_SIZE* span = pcre2_get_ovector_pointer(match);
            start = span[0], end = span[1];
        } else if (rc != PCRE2_ERROR_NOMATCH) {
            throw InputError("text", "GPT-2's pattern failed at byte " + std::to_string(at) + ": " + Pattern::message(rc));
        }
        for (; at < start; ++at) piece(text.substr(at, 1));
        if (rc < 0) break;
        // every alternative takes at least one character; the guard keeps the loop finite anyway
        if (end <= start) throw std::logic_error("GPT-2's pattern matched nothing at byte " + std::to_string(start));
        piece(text.substr(start, end - start));
        at = end;
    }
}

// One candidate merge: the pair of symbols starting at `pos` (a byte offset in the piece) was
// (left, right) when it was offered; stale once either side has changed.
struct Candidate {
    int rank, pos, left, right, result;
};
// std::push_heap keeps the largest first: "later" makes it the lowest rank, then leftmost.
bool later(const Candidate& a, const Candidate& b) { return a.rank != b.rank ? a.rank > b.rank : a.pos > b.pos; }

struct Scratch {
    std::vector<int> id, next, prev;  // [n] the piece's symbols as a list over its bytes; id −1: merged away
    std::vector<Candidate> heap, round;
};

// The merges of encoder.py's bpe(), exactly, in O(n log n) rather than its O(n²) (a piece is a
// word, but a text of 100 kB of letters is one piece too):
//   encoder.py: repeat { the lowest-rank pair among the adjacent pairs; merge every occurrence of
//               it, left to right, an occurrence overlapping one just merged skipped ("aaa" with
//               a+a gives "aa a") } until no pair has a rank.
//   here:       a heap of candidates (rank, pos) holds every adjacent pair that has a rank
//               (and stale ones, skipped). A round pops all candidates of the lowest rank (one
//               pair: ranks are per pair) and merges them left to right, skipping the stale
//               and the overlapped; the pairs a merge makes are offered for later rounds. They
//               cannot belong to this round (a+b never equals a or b), and a lower-ranked one
//               among them waits for the next round, as in encoder.py.
// piece: [n] bytes; out: the tokens' ids appended.
void mergePiece(const ByteBpe::Impl& bpe, std::string_view piece, Scratch& s, std::vector<int>& out) {
    if (piece.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()))
        throw InputError("text", "a piece of " + std::to_string(piece.size()) + " bytes, over 2 GiB, has no tokens");
    const int n = static_cast<int>(piece.size());
    if (n == 1) {
        out.push_back(bpe.byteIds[static_cast<unsigned char>(piece[0])]);
        return;
    }
    s.id.resize(n), s.next.resize(n), s.prev.resize(n);
    for (int i = 0; i < n; ++i) s.id[i] = bpe.byteIds[static_cast<unsigned char>(piece[i])], s.prev[i] = i - 1, s.next[i] = i + 1;
    s.heap.clear();
    const auto offer = [&](int pos) {
        const int q = s.next[pos];
        if (q >= n) return;
        const auto it = bpe.merges.find(bpe::pairKey(s.id[pos], s.id[q]));
        if (it == bpe.merges.end()) return;
        s.heap.push_back({it->second.rank, pos, s.id[pos], s.id[q], it->second.result});
        std::push_heap(s.heap.begin(), s.heap.end(), later);
    };
    for (int i = 0; i + 1 < n; ++i) offer(i);
    while (!s.heap.empty()) {
        // 1. the round: every candidate of the lowest rank, leftmost first
        const int rank = s.heap.front().rank;
        s.round.clear();
        while (!s.heap.empty() && s.heap.front().rank == rank) {
            std::pop_heap(s.heap.begin(), s.heap.end(), later);
            s.round.push_back(s.heap.back());
            s.heap.pop_back();
        }
        // 2. merge those still there: the right symbol joins the left one's position
        for (const Candidate& c : s.round) {
            const int q = s.next[c.pos];
            if (s.id[c.pos] != c.left || q >= n || s.id[q] != c.right) continue;
            s.id[c.pos] = c.result, s.id[q] = -1;
            s.next[c.pos] = s.next[q];
            if (s.next[q] < n) s.prev[s.next[q]] = c.pos;
            // 3. the two pairs the new symbol is in
            if (s.prev[c.pos] >= 0) offer(s.prev[c.pos]);
            offer(c.pos);
        }
    }
    for (int i = 0; i < n; i = s.next[i]) out.push_back(s.id[i]);
}

// Calls plain(view) for the text between special tokens and special(id) for each special
// token, in order. At each place the earliest special token starting there wins, the longest
// when several do.
template <class Plain, class Special>
void splitSpecials(const ByteBpe::Impl& bpe, std::string_view text, Plain&& plain, Special&& special) {
    std::vector<std::size_t> next(bpe.specials.size());  // where each special token occurs next
    for (std::size_t k = 0; k < next.size(); ++k) next[k] = text.find(bpe.specials[k].first);
    std::size_t at = 0;
    for (;;) {
        std::size_t best = next.size();
        for (std::size_t k = 0; k < next.size(); ++k) {
            if (next[k] == std::string_view::npos) continue;
            if (best == next.size() || next[k] < next[best] ||
                (next[k] == next[best] && bpe.specials[k].first.size() > bpe.specials[best].first.size()))
                best = k;
        }
        if (best == next.size()) break;
        if (next[best] > at) plain(text.substr(at, next[best] - at));
        special(bpe.specials[best].second);
        at = next[best] + bpe.specials[best].first.size();
        for (std::size_t k = 0; k < next.size(); ++k)
            if (next[k] != std::string_view::npos && next[k] < at) next[k] = text.find(bpe.specials[k].first, at);
    }
    if (at < text.size()) plain(text.substr(at));
}

[[noreturn]] void unknownId(int id, int vocabSize) {
    throw InputError("token ids", "no token has the id " + std::to_string(id) + " (the vocabulary's ids are 0 to " +
                                      std::to_string(vocabSize - 1) + ")");
}

bool isControl(char32_t cp) { return cp < 0x20 || (cp >= 0x7F && cp < 0xA0); }
// Characters drawn as nothing: the soft hyphen, zero-width spaces and joiners, direction marks
// and embeddings, word joiners, variation selectors, the byte order mark, tags.
bool isInvisible(char32_t cp) {
    return cp == 0x00AD || cp == 0x034F || cp == 0x061C || (cp >= 0x180B && cp <= 0x180F) || (cp >= 0x200B && cp <= 0x200F) ||
           (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2060 && cp <= 0x206F) || (cp >= 0xFE00 && cp <= 0xFE0F) || cp == 0xFEFF ||
           (cp >= 0xE0000 && cp <= 0xE0FFF);
}

}  // namespace

ByteBpe::ByteBpe(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
ByteBpe::ByteBpe(ByteBpe&&) noexcept = default;
ByteBpe& ByteBpe::operator=(ByteBpe&&) noexcept = default;
ByteBpe::~ByteBpe() = default;

std::vector<int> ByteBpe::encode(std::string_view text) const {
    std::vector<int> ids;
    const MatchData match = newMatchData();
    Scratch scratch;
    splitSpecials(
        *m_impl, text,
        [&](std::string_view plain) {
            forEachPiece(plain, match.get(), [&](std::string_view piece) { mergePiece(*m_impl, piece, scratch, ids); });
        },
        [&](int id) { ids.push_back(id); });
    return ids;
}

std::vector<std::string> ByteBpe::pieces(std::string_view text) const {
    std::vector<std::string> out;
    const MatchData match = newMatchData();
    forEachPiece(text, match.get(), [&](std::string_view piece) { out.emplace_back(piece); });
    return out;
}

int ByteBpe::vocabSize() const { return static_cast<int>(m_impl->texts.size()); }

std::size_t ByteBpe::longestTokenBytes() const {
    std::size_t longest = 1;
    for (const std::string& b : m_impl->bytes) longest = std::max(longest, b.size());
    return longest;
}
bool ByteBpe::hasId(int id) const { return id >= 0 && id < vocabSize() && !m_impl->texts[id].empty(); }

const std::string& ByteBpe::tokenText(int id) const {
    if (!hasId(id)) unknownId(id, vocabSize());
    return m_impl->texts[id];
}

std::string ByteBpe::tokenBytes(int id) const {
    if (!hasId(id)) unknownId(id, vocabSize());
    return m_impl->bytes[id];
}

std::string ByteBpe::decode(const std::vector<int>& ids) const {
    std::string out;
    for (const int id : ids) {
        if (!hasId(id)) unknownId(id, vocabSize());
        out += m_impl->bytes[id];
    }
    return out;
}

std::optional<int> ByteBpe::idOf(std::string_view tokenText) const {
    const auto it = m_impl->ids.find(tokenText);
    if (it == m_impl->ids.end()) return std::nullopt;
    return it->second;
}

std::optional<int> ByteBpe::endOfText() const { return idOf("<|endoftext|>"); }

char32_t ByteBpe::byteToUnicode(unsigned char b) { return bpe::kByteToUnicode[b]; }

std::string byteTokenLabel(std::string_view bytes) {
    // 1. text: valid UTF-8 shown as visibleToken shows white space ("␣␣", "↵"); else text with
    // no control character and something visible, its one leading space shown as ␣ ("␣cat")
    if (sanitizeUtf8(bytes) == bytes) {
        std::string shown = visibleToken(bytes);
        if (shown != bytes) return shown;
        bool control = false, visible = false;
        for (std::size_t pos = 0; pos < bytes.size();) {
            const char32_t cp = decodeUtf8(bytes, pos);
            control = control || isControl(cp);
            visible = visible || (!isInvisible(cp) && cp != ' ');
        }
        if (!control && visible) return bytes[0] != ' ' ? shown : "\u2423" + std::string(bytes.substr(1));
    }
    // 2. bytes: "⟨E6 97⟩"
    static constexpr char kHex[] = "0123456789ABCDEF";
    std::string out = "\u27E8";
    for (std::size_t i = 0; i < bytes.size(); ++i) {
        const auto b = static_cast<unsigned char>(bytes[i]);
        if (i) out += ' ';
        out += kHex[b >> 4];
        out += kHex[b & 15];
    }
    return out + "\u27E9";
}

}  // namespace attnviz::core
