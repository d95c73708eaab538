// libFuzzer target: the input is a recipe for a tokenizer.json whose pipelines nest and repeat
// (which of normalizer, pre_tokenizer and post_processor; how deep each Sequence nests, up to
// 100,000; how many steps each level repeats, up to 64; a split pattern from the input's bytes
// with a chosen repeat count), and a sentence to encode, up to 4,096 bytes. The file is read and
// the sentence encoded, and:
//   * the time this takes (the thread's CPU time) stays within a budget linear in the file and
//     the sentence, 0.25 s plus 2 µs a byte of the file and 100 µs a byte of the sentence: a
//     reader that copies each level's place or tree, or a pattern that backtracks across the
//     sentence, needs seconds to minutes for the largest recipes;
//   * a pipeline nested past 64 levels of JSON is refused as nested too deep, whatever the rest;
//   * anything else is read or refused with an InputError, and what is read encodes to ids that
//     decode back to the sentence's bytes (byte-level: every byte is a token).
#include "core/base/error.hpp"
#include "core/base/json_text.hpp"
#include "core/text/byte_bpe.hpp"
#include "fuzz/check.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace attnviz::core;
using attnviz::fuzz::check;
using attnviz::fuzz::cpuSeconds;

struct Recipe {
    unsigned which = 0;  // bit 0: normalizer, 1: pre_tokenizer, 2: post_processor nested
    std::size_t depth = 0, repeat = 1, patternRepeat = 1;
    std::string atom, sentence;  // the pattern's atom (letters only) and the text
};

Recipe readRecipe(const std::uint8_t* data, std::size_t size) {
    Recipe r;
    const auto at = [&](std::size_t i) -> unsigned { return i < size ? data[i] : 0U; };
    r.which = at(0) & 7U;
    r.depth = (at(1) | (at(2) << 8) | ((at(3) & 1U) << 16)) % 100001;
    r.repeat = 1 + at(4) % 64;
    r.patternRepeat = 1 + at(5) % 32;
    for (std::size_t i = 6; i < size && i < 10; ++i) r.atom += static_cast<char>('a' + data[i] % 3);
    if (r.atom.empty()) r.atom = "a";
    for (std::size_t i = 10; i < size && r.sentence.size() < 4096; ++i) r.sentence += static_cast<char>('a' + data[i] % 4);
    return r;
}

// A step nested `depth` Sequences deep, each level holding `repeat` copies of what is inside.
std::string nested(const char* list, std::size_t depth, std::size_t repeat, const std::string& leaf) {
    std::string open, close;
    for (std::size_t d = 0; d < depth; ++d) {
        open += std::string(R"({"type":"Sequence",")") + list + "\":[";
        close += "]}";
    }
    std::string inner = leaf;
    for (std::size_t k = 1; k < repeat; ++k) inner += "," + leaf;
    return open + inner + close;
}

std::string build(const Recipe& r) {
    // the 256 byte symbols at their byte's id, no merges
    std::string vocab;
    for (int b = 0; b < 256; ++b) {
        const char32_t cp = ByteBpe::byteToUnicode(static_cast<unsigned char>(b));
        std::string s;
        if (cp < 0x80) s += static_cast<char>(cp);
        else s += static_cast<char>(0xC0 | (cp >> 6)), s += static_cast<char>(0x80 | (cp & 0x3F));
        if (s == "\"" || s == "\\") s = "\\" + s;
        vocab += (b ? "," : "") + ("\"" + s + "\":" + std::to_string(b));
    }
    // (?:atom|atom){1,n}c|atom: a pattern that backtracks when n is large and no c follows
    std::string alternation = "(?:" + r.atom + "|" + r.atom + "){1," + std::to_string(r.patternRepeat) + "}c|" + r.atom;
    const std::string split = R"({"type":"Split","pattern":{"Regex":")" + alternation + R"("},"behavior":"Isolated","invert":false})";
    const std::string bytes = R"({"type":"ByteLevel","add_prefix_space":false,"use_regex":false})";
    std::string file = "{";
    file += R"("normalizer":)" + ((r.which & 1U) ? nested("normalizers", r.depth, r.repeat, R"({"type":"NFC"})") : "null");
    const std::string pre = R"({"type":"Sequence","pretokenizers":[)" +
                            ((r.which & 2U) ? nested("pretokenizers", r.depth, 1, split) : split) + "," + bytes + "]}";
    file += R"(,"pre_tokenizer":)" + pre;
    file += R"(,"post_processor":)" + ((r.which & 4U) ? nested("processors", r.depth, r.repeat, R"({"type":"ByteLevel"})") : "null");
    file += R"(,"model":{"type":"BPE","vocab":{)" + vocab + R"(},"merges":[]}})";
    return file;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const Recipe r = readRecipe(data, size);
    const std::string file = build(r);
    const double start = cpuSeconds();
    std::string error;
    std::vector<int> ids;
    try {
        const ByteBpe bpe = ByteBpe::fromTokenizerJsonText(file, "fuzz.json");
        ids = bpe.encode(r.sentence);
        check(bpe.decode(ids) == r.sentence, "the ids do not decode to the sentence");
    } catch (const InputError& e) {
        error = e.message();
    }
    const double seconds = cpuSeconds() - start;
    const double budget = 0.25 + 2e-6 * static_cast<double>(file.size()) + 1e-4 * static_cast<double>(r.sentence.size());
    check(seconds <= budget, "reading the file and encoding took more than a time linear in their size",
          std::to_string(seconds) + " s for " + std::to_string(file.size()) + " bytes, depth " + std::to_string(r.depth));
    // each level of a Sequence is two of JSON (its object and its list): 32 levels are past 64
    const bool tooDeep = r.which != 0 && 2 * r.depth >= static_cast<std::size_t>(kMaxJsonDepth);
    if (tooDeep) check(error.find("nested deeper than") != std::string::npos, "a pipeline nested too deep was not refused as such", error);
    return 0;
}
