// What a loaded ByteBpe holds, shared by the encoder (byte_bpe.cpp) and the loaders
// (byte_bpe_files.cpp); nothing outside the text room includes it.
#pragma once

#include "core/text/byte_bpe.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace attnviz::core {

namespace bpe {

// Limits on what a file may hold, each far above any real tokenizer's (GPT-2: 50,257 tokens of at
// most 256 bytes; the largest vocabularies in use hold about 262,000). Ids are stored densely, so
// an id is below the token limit too.
inline constexpr std::size_t kMaxTokens = std::size_t{1} << 20;  // ids 0 … 2^20 − 1, and so tokens; merges
inline constexpr std::size_t kMaxTokenBytes = 1024;              // one token's spelling
// A tokenizer file is read whole: GPT-2's tokenizer.json is 1.4 MB, a 262k-token one about 33 MB.
inline constexpr std::size_t kMaxFileBytes = std::size_t{64} << 20;

// The byte-to-unicode table of GPT-2's encoder.py: bytes 33–126, 161–172 and 174–255 stand for
// themselves; the other 68 (the controls, the space, DEL, the C1 range, NBSP, the soft hyphen)
// become U+0100, U+0101, … in byte order, so that every symbol is a printable character.
inline constexpr int kByteSymbols = 256 + 68;  // the code points the table uses: 0 … U+0143
constexpr std::array<char32_t, 256> makeByteToUnicode() {
    std::array<char32_t, 256> table{};
    char32_t next = 256;
    for (unsigned b = 0; b < 256; ++b) {
        const bool itself = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
        table[b] = itself ? b : next++;
    }
    return table;
}
inline constexpr std::array<char32_t, 256> kByteToUnicode = makeByteToUnicode();
static_assert(kByteToUnicode[32] == 0x120 && kByteToUnicode[173] == 0x143 && kByteToUnicode[255] == 255);
// The table backwards: code point → byte, −1 for a code point no byte stands for.
constexpr std::array<short, kByteSymbols> makeUnicodeToByte() {
    std::array<short, kByteSymbols> table{};
    for (short& b : table) b = -1;
    for (unsigned b = 0; b < 256; ++b) table[kByteToUnicode[b]] = static_cast<short>(b);
    return table;
}
inline constexpr std::array<short, kByteSymbols> kUnicodeToByte = makeUnicodeToByte();

// Spellings looked up by std::string_view without a copy.
struct TextHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

struct Merge {
    int rank;    // the merge's line among the merges, 0 first (a pair given twice: the later line)
    int result;  // the id of the two symbols joined
};

inline std::uint64_t pairKey(int left, int right) { return (std::uint64_t(std::uint32_t(left)) << 32) | std::uint32_t(right); }

}  // namespace bpe

struct ByteBpe::Impl {
    std::vector<std::string> texts;  // [vocabSize] a token's spelling ("Ġcat"); "" where no token has the id
    std::vector<std::string> bytes;  // [vocabSize] the bytes it stands for (" cat")
    std::unordered_map<std::string, int, bpe::TextHash, std::equal_to<>> ids;  // spelling → id
    // (left id, right id) → rank and result. Every symbol a merge can meet is a token: the 256
    // byte symbols are checked at load, and so is every merge's result.
    std::unordered_map<std::uint64_t, bpe::Merge> merges;
    std::array<int, 256> byteIds{};                     // byte → the id of its one-symbol token
    std::vector<std::pair<std::string, int>> specials;  // cut out of the text literally, longest first at a place
};

}  // namespace attnviz::core
