// Byte-pair encoding: a text through added tokens, the pipeline's steps (bpe_steps.cpp) and the
// merges; decoding and labels. Loading is in byte_bpe_files.cpp and tokenizer_json.cpp.
#include "core/text/byte_bpe.hpp"

#include "core/base/error.hpp"
#include "core/text/byte_bpe_impl.hpp"
#include "core/text/tokenizer.hpp"

#include <algorithm>
#include <limits>
#include <memory>
#include <stdexcept>

namespace attnviz::core {
namespace {

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

// The merges, in O(n log n) (a piece is a word, but a text of 100 kB of letters is one piece too).
// A heap of candidates (rank, pos) holds every adjacent pair that has a rank (and stale ones,
// skipped); the pairs a merge makes are offered at once.
//   Hugging Face's BPE (tokenizers' Word::merge_all; tokenizer.json): the lowest-ranked pair,
//     leftmost first, is merged alone; a pair it makes with a lower rank goes next.
//   encoder.py's bpe() (GPT-2's own; vocab.json and merges.txt, bpe.mergeRounds): every occurrence
//     of the lowest-ranked pair, left to right, in one round, an occurrence overlapping one just
//     merged skipped ("aaa" with a+a gives "aa a"); a pair a merge makes waits for a later round
//     even when it ranks lower (a+b never equals a or b, so it cannot belong to this round).
// The two agree whenever a merge's parts are made by earlier merges, which trained merges are.
// Gemma's are not in that order ("▁▁" + "▁" ranks before "▁" + "▁"): Hugging Face's way grows the
// leftmost run of "▁" first.
// s.id: [n] the piece's first symbols; out: the tokens' ids appended.
void mergeSymbols(const ByteBpe::Impl& bpe, Scratch& s, std::vector<int>& out) {
    if (s.id.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()))
        throw InputError("text", "a piece of " + std::to_string(s.id.size()) + " symbols, over 2^31, has no tokens");
    const int n = static_cast<int>(s.id.size());
    s.next.resize(n), s.prev.resize(n);
    for (int i = 0; i < n; ++i) s.prev[i] = i - 1, s.next[i] = i + 1;
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
        // 1. the lowest-ranked candidate, or in rounds every one of that rank, leftmost first
        const int rank = s.heap.front().rank;
        s.round.clear();
        do {
            std::pop_heap(s.heap.begin(), s.heap.end(), later);
            s.round.push_back(s.heap.back());
            s.heap.pop_back();
        } while (bpe.mergeRounds && !s.heap.empty() && s.heap.front().rank == rank);
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

// A piece's first symbols into s.id. Bytes: each byte's symbol. Characters (Hugging Face's BPE
// with byte_fallback, as Llama 2's tokenizer.json runs it): each character's token; one not in the
// vocabulary becomes its bytes' <0xXX> tokens when all of them are tokens, else the unknown token
// (consecutive ones one token with fuse_unk; an unknown token waiting is only written at the next
// known character, so byte tokens in between come first, as there), else nothing. An invalid
// byte is a character of its own, never a token.
void firstSymbols(const ByteBpe::Impl& bpe, std::string_view piece, Scratch& s) {
    s.id.clear();
    if (bpe.symbols == bpe::Symbols::Bytes) {
        for (const char c : piece) s.id.push_back(bpe.byteIds[static_cast<unsigned char>(c)]);
        return;
    }
    bool unknown = false;  // an unknown token waiting
    for (std::size_t at = 0; at < piece.size();) {
        const std::size_t n = std::max<std::size_t>(1, bpe::utf8Length(piece, at));
        const std::string_view c = piece.substr(at, n);
        at += n;
        if (const auto it = bpe.ids.find(c); it != bpe.ids.end()) {
            if (unknown) s.id.push_back(bpe.unkId), unknown = false;
            s.id.push_back(it->second);
            continue;
        }
        if (std::all_of(c.begin(), c.end(), [&](char b) { return bpe.byteIds[static_cast<unsigned char>(b)] >= 0; })) {
            for (const char b : c) s.id.push_back(bpe.byteIds[static_cast<unsigned char>(b)]);
            continue;
        }
        if (bpe.unkId < 0) continue;
        if (unknown && !bpe.fuseUnk) s.id.push_back(bpe.unkId);
        unknown = true;
    }
    if (unknown) s.id.push_back(bpe.unkId);
}

// One piece's tokens appended to out: the piece itself when ignoreMerges and its spelling is a
// token, else its symbols merged.
void encodePiece(const ByteBpe::Impl& bpe, std::string_view piece, Scratch& s, std::vector<int>& out) {
    if (bpe.ignoreMerges) {
        std::string spelled;
        if (bpe.symbols == bpe::Symbols::Bytes)
            for (const char c : piece) appendUtf8(spelled, bpe::kByteToUnicode[static_cast<unsigned char>(c)]);
        if (const auto it = bpe.ids.find(bpe.symbols == bpe::Symbols::Bytes ? std::string_view(spelled) : piece); it != bpe.ids.end()) {
            out.push_back(it->second);
            return;
        }
    }
    firstSymbols(bpe, piece, s);
    mergeSymbols(bpe, s, out);
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

namespace {

// One text's ids without the post-processor's tokens: 1. added tokens cut out; 2. each stretch
// between them normalised, split into pieces and merged.
void appendText(const ByteBpe::Impl& bpe, std::string_view text, std::vector<int>& ids) {
    Scratch scratch;
    bpe::splitAdded(
        bpe.added, text,
        [&](std::string_view plain, std::size_t offset) {
            const std::string normalized = bpe::normalize(bpe.normalizer, plain);
            bpe::forEachPiece(bpe, normalized, offset == 0, [&](std::string_view piece) { encodePiece(bpe, piece, scratch, ids); });
        },
        [&](int id) { ids.push_back(id); });
}

}  // namespace

std::vector<int> ByteBpe::encode(std::string_view text) const {
    const Impl& bpe = *m_impl;
    std::vector<int> ids = bpe.prefix;
    appendText(bpe, text, ids);
    ids.insert(ids.end(), bpe.suffix.begin(), bpe.suffix.end());
    return ids;
}

std::optional<std::vector<int>> ByteBpe::encodePair(std::string_view a, std::string_view b) const {
    const Impl& bpe = *m_impl;
    if (!bpe.pairTemplate) return std::nullopt;
    std::vector<int> ids = bpe.prefix;
    appendText(bpe, a, ids);
    ids.insert(ids.end(), bpe.suffix.begin(), bpe.suffix.end());
    ids.insert(ids.end(), bpe.pairPrefix.begin(), bpe.pairPrefix.end());
    appendText(bpe, b, ids);
    ids.insert(ids.end(), bpe.suffix.begin(), bpe.suffix.end());
    return ids;
}

std::vector<std::string> ByteBpe::pieces(std::string_view text) const {
    std::vector<std::string> out;
    bpe::forEachPiece(*m_impl, text, true, [&](std::string_view piece) { out.emplace_back(piece); });
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

bool ByteBpe::isSpecial(int id) const { return hasId(id) && m_impl->special[id]; }

std::optional<int> ByteBpe::maskId() const {
    for (const bpe::AddedToken& a : m_impl->added)
        if (a.text == "<mask>" || a.text == "[MASK]") return a.id;
    return std::nullopt;
}

std::optional<int> ByteBpe::bosId() const {
    if (m_impl->prefix.empty()) return std::nullopt;
    return m_impl->prefix.front();
}

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
