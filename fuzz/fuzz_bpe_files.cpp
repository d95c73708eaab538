// libFuzzer target: bytes as GPT-2 tokenizer files (core/text/byte_bpe.hpp). The first byte
// chooses what the rest is:
//   'T'    a tokenizer.json (ByteBpe::fromTokenizerJsonText);
//   'M'    merges.txt alone, with a vocabulary made here of the 256 byte symbols and every
//          line's two parts and their join, so that most inputs load and the merges are fuzzed;
//   other  vocab.json, a NUL, merges.txt (the whole input; ByteBpe::fromText).
// Properties: a file is either refused with an InputError of one line, at most 700 bytes of valid
// UTF-8, or it loads; then for a few fixed texts and the input itself (its first 1,024 bytes),
// every id is a token (or the text is refused in one line where the file's own pattern
// backtracks past its budget), a text's ids start with bosId() where there is one, the pieces
// concatenate to the text (but with Metaspace), decode(encode(text)) is the text (where the
// tokenizer.json is byte-level and nothing changes the text: no normalizer, no stripping added
// token, no TemplateProcessing), and
// where the merges are known (not 'T') and no special token is involved, the ids are those of
// encoder.py's bpe() loop transcribed below; every token's label is non-empty valid UTF-8.
#include "core/base/error.hpp"
#include "core/text/byte_bpe.hpp"
#include "core/text/tokenizer.hpp"
#include "fuzz/check.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace {

using namespace attnviz::core;
using attnviz::fuzz::check;
using attnviz::fuzz::isValidUtf8;

constexpr std::size_t kMaxMessage = 700;
constexpr std::size_t kMaxText = 1024;
constexpr std::size_t kMaxReferencePiece = 64;  // encoder.py's loop is O(n²) per piece

using Ranks = std::map<std::pair<std::string, std::string>, int>;

// merges.txt's lines as the loader reads them: "#version" first line skipped, "\r\n" allowed,
// blank lines skipped; a pair given twice keeps its later rank. Only for a file that loaded.
Ranks mergeRanks(std::string_view text) {
    Ranks ranks;
    int rank = 0;
    for (std::size_t at = 0, number = 1; at < text.size(); ++number) {
        std::size_t end = text.find('\n', at);
        if (end == std::string_view::npos) end = text.size();
        std::string_view line = text.substr(at, end - at);
        at = end + 1;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line.empty() || (number == 1 && line.substr(0, 8) == "#version")) continue;
        const std::size_t space = line.find(' ');
        ranks[{std::string(line.substr(0, space)), std::string(line.substr(space + 1))}] = rank++;
    }
    return ranks;
}

// encoder.py's bpe(): the lowest-rank pair, all its occurrences left to right, again.
std::vector<std::string> referenceBpe(std::string_view piece, const Ranks& ranks) {
    std::vector<std::string> w;
    for (char c : piece) {
        w.emplace_back();
        appendUtf8(w.back(), ByteBpe::byteToUnicode(static_cast<unsigned char>(c)));
    }
    while (w.size() > 1) {
        const Ranks::value_type* best = nullptr;
        for (std::size_t i = 0; i + 1 < w.size(); ++i) {
            const auto it = ranks.find({w[i], w[i + 1]});
            if (it != ranks.end() && (!best || it->second < best->second)) best = &*it;
        }
        if (!best) break;
        std::vector<std::string> next;
        for (std::size_t i = 0; i < w.size();) {
            if (i + 1 < w.size() && w[i] == best->first.first && w[i + 1] == best->first.second) {
                next.push_back(w[i] + w[i + 1]);
                i += 2;
            } else {
                next.push_back(w[i++]);
            }
        }
        w = std::move(next);
    }
    return w;
}

// The vocabulary of mode 'M': byte symbols at ids 0 … 255, then each line's parts and join.
std::string vocabularyFor(std::string_view merges) {
    nlohmann::json vocab = nlohmann::json::object();
    const auto add = [&](const std::string& s) {
        if (s.empty() || s.size() > 1024 || !isValidUtf8(s) || vocab.contains(s)) return;
        const std::size_t id = vocab.size();
        vocab[s] = id;
    };
    for (int b = 0; b < 256; ++b) {
        std::string s;
        appendUtf8(s, ByteBpe::byteToUnicode(static_cast<unsigned char>(b)));
        add(s);
    }
    for (std::size_t at = 0; at < merges.size();) {
        std::size_t end = merges.find('\n', at);
        if (end == std::string_view::npos) end = merges.size();
        const std::string_view line = merges.substr(at, end - at);
        at = end + 1;
        const std::size_t space = line.find(' ');
        if (space == std::string_view::npos) continue;
        const std::string left(line.substr(0, space)), right(line.substr(space + 1));
        add(left), add(right), add(left + right);
    }
    return vocab.dump();
}

void checkMessage(const InputError& e) {
    const std::string m = e.message();
    check(!m.empty(), "an InputError without a message");
    check(m.size() <= kMaxMessage, "error message longer than 700 bytes", std::to_string(m.size()));
    check(isValidUtf8(m), "error message is not valid UTF-8");
    check(m.find_first_of("\n\r") == std::string::npos, "error message is more than one line", m);
}

// What a tokenizer.json promises of its texts: exact round trips, pieces that are the text.
struct Promises {
    bool roundTrip = true, pieces = true;
};
Promises promisesOf(std::string_view jsonText) {
    const nlohmann::json j = nlohmann::json::parse(jsonText, nullptr, false);
    if (!j.is_object()) return {};
    const auto has = [&](const char* key, const char* what) { return j.contains(key) && j[key].dump().find(what) != std::string::npos; };
    Promises p;
    p.pieces = !has("pre_tokenizer", "Metaspace");
    p.roundTrip = (!j.contains("normalizer") || j["normalizer"].is_null()) && has("pre_tokenizer", "ByteLevel") && p.pieces &&
                  !has("added_tokens", "\"lstrip\":true") && !has("added_tokens", "\"rstrip\":true") &&
                  !has("post_processor", "TemplateProcessing");
    return p;
}

void checkText(const ByteBpe& bpe, std::string_view text, const std::optional<Ranks>& ranks, const Promises& promises) {
    const std::vector<int> ids = bpe.encode(text);
    for (const int id : ids) check(bpe.hasId(id), "encode gave an id that is no token", std::to_string(id));
    if (const auto bos = bpe.bosId()) check(!ids.empty() && ids.front() == *bos, "the ids do not start with bosId()");
    if (promises.roundTrip) check(bpe.decode(ids) == text, "decode(encode(text)) is not the text");
    std::string joined;
    const std::vector<std::string> pieces = bpe.pieces(text);
    for (const std::string& p : pieces) joined += p;
    if (promises.pieces) check(joined == text, "the pieces do not concatenate to the text");
    // encoder.py's merges, piece by piece, where no special token can cut the text
    const auto eot = bpe.endOfText();
    if (!ranks || (eot && text.find("<|endoftext|>") != std::string_view::npos)) return;
    std::vector<int> want;
    for (const std::string& p : pieces) {
        if (p.size() > kMaxReferencePiece) return;
        for (const std::string& s : referenceBpe(p, *ranks)) {
            const auto id = bpe.idOf(s);
            check(id.has_value(), "encoder.py's loop made a symbol that is no token", s);
            want.push_back(*id);
        }
    }
    check(ids == want, "the ids are not those of encoder.py's bpe() loop");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    std::optional<ByteBpe> bpe;
    std::optional<Ranks> ranks;
    Promises promises;
    try {
        if (!input.empty() && input[0] == 'T') {
            bpe.emplace(ByteBpe::fromTokenizerJsonText(input.substr(1), "fuzz.json"));
            promises = promisesOf(input.substr(1));
        } else if (!input.empty() && input[0] == 'M') {
            const std::string_view merges = input.substr(1);
            bpe.emplace(ByteBpe::fromText(vocabularyFor(merges), merges, "vocab.json", "merges.txt"));
            ranks = mergeRanks(merges);
        } else {
            const std::size_t nul = input.find('\0');
            const std::string_view vocab = input.substr(0, nul);
            const std::string_view merges = nul == std::string_view::npos ? std::string_view() : input.substr(nul + 1);
            bpe.emplace(ByteBpe::fromText(vocab, merges, "vocab.json", "merges.txt"));
            ranks = mergeRanks(merges);
        }
    } catch (const InputError& e) {
        checkMessage(e);
        return 0;  // refused with a message: fine
    }
    // A tokenizer.json's own split pattern may backtrack past its budget: encoding then refuses
    // the text with one line (as the app shows it). GPT-2's fixed pattern never does.
    const auto checkOrRefused = [&](std::string_view text) {
        try {
            checkText(*bpe, text, ranks, promises);
        } catch (const InputError& e) {
            check(input[0] == 'T', "encoding with GPT-2's own pattern was refused", e.message());
            checkMessage(e);
        }
    };
    for (const char* text : {"Hello world", "I'm they'LL 12345 a   b\n\n\tx  ", "café 日本語 👩‍👩‍👧 \xe6\x97 \xff",
                             "ab<|endoftext|>ab", "hello hello", "aaaaaaaa"})
        checkOrRefused(text);
    checkOrRefused(input.substr(0, kMaxText));
    for (int id = 0; id < std::min(bpe->vocabSize(), 4096); ++id) {  // (ids may be sparse up to 2^20)
        if (!bpe->hasId(id)) continue;
        const std::string label = byteTokenLabel(bpe->tokenBytes(id));
        check(!label.empty() && isValidUtf8(label), "a token's label is empty or not valid UTF-8", std::to_string(id));
        check(!bpe->isSpecial(id) || bpe->tokenBytes(id) == bpe->tokenText(id), "a special token does not stand for its text");
    }
    return 0;
}
