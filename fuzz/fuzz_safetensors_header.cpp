// libFuzzer target: the input is a recipe for a large safetensors header (how many entries, up to
// 65,535; metadata before or after them; a key or a field repeated at a chosen place; bytes after
// the last tensor; entries in reverse order; an unknown nested field; names from the input's
// bytes). The file built from it is read and every tensor found by name, and:
//   * the time this takes (the thread's CPU time) stays within a budget linear in the header's
//     size, 0.25 s plus 2 µs a byte: a reader that rescans its object per entry, or a find that
//     walks every tensor, needs tens of seconds for the largest recipes;
//   * a planted repeat is refused, naming the repeated key (or the entry of the repeated field);
//   * planted trailing bytes are refused; anything else opens with every entry.
#include "core/base/error.hpp"
#include "core/models/safetensors.hpp"
#include "fuzz/check.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

namespace {

using namespace attnviz::core;
using attnviz::fuzz::check;
using attnviz::fuzz::cpuSeconds;

struct Recipe {
    std::size_t entries = 0, repeatAt = 0, trailing = 0;
    bool metadataFirst = false, metadataLast = false, repeatKey = false, repeatField = false, reverse = false, nested = false;
    std::string stem;  // printable ASCII from the input, no quote or backslash
};

Recipe readRecipe(const std::uint8_t* data, std::size_t size) {
    Recipe r;
    const auto at = [&](std::size_t i) -> unsigned { return i < size ? data[i] : 0U; };
    r.entries = at(0) | (at(1) << 8);
    const unsigned flags = at(2);
    r.metadataFirst = flags & 1U, r.metadataLast = flags & 2U, r.repeatKey = flags & 4U, r.repeatField = flags & 8U;
    r.reverse = flags & 16U, r.nested = flags & 32U;
    r.repeatAt = r.entries ? (at(3) | (at(4) << 8)) % r.entries : 0;
    r.trailing = (flags & 64U) ? 1 + at(5) : 0;
    for (std::size_t i = 6; i < size && r.stem.size() < 24; ++i) {
        const char c = static_cast<char>(' ' + data[i] % 95);
        if (c != '"' && c != '\\') r.stem += c;
    }
    return r;
}

std::string entryName(const Recipe& r, std::size_t i) { return r.stem + "." + std::to_string(i); }

std::string build(const Recipe& r, std::size_t& headerBytes) {
    std::string header = "{", data;
    bool first = true;
    const auto add = [&](const std::string& text) {
        header += (first ? "" : ",") + text;
        first = false;
    };
    if (r.metadataFirst) add(R"("__metadata__":{"format":"pt"})");
    for (std::size_t k = 0; k < r.entries; ++k) {
        const std::size_t i = r.reverse ? r.entries - 1 - k : k;
        const std::string name = r.repeatKey && i == r.repeatAt && i > 0 ? entryName(r, 0) : entryName(r, i);
        std::string fields = R"("dtype":"F16",)";
        if (r.repeatField && i == r.repeatAt) fields += R"("dtype":"F16",)";
        if (r.nested) fields += R"("extra":[[1,{"a":[2]}],"x"],)";
        add("\"" + name + "\":{" + fields + "\"shape\":[1],\"data_offsets\":[" + std::to_string(2 * i) + "," + std::to_string(2 * i + 2) +
            "]}");
    }
    if (r.metadataLast) add(R"("__metadata__":{"format":"pt"})");
    header += "}";
    headerBytes = header.size();
    data.assign(2 * r.entries + r.trailing, '\0');
    std::string out(8, '\0');
    const std::uint64_t n = header.size();
    std::memcpy(out.data(), &n, 8);
    return out + header + data;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const Recipe r = readRecipe(data, size);
    std::size_t headerBytes = 0;
    const std::string file = build(r, headerBytes);
    const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(file.data()), file.size());

    const double start = cpuSeconds();
    std::string error;
    std::size_t found = 0;
    try {
        const SafetensorsFile f = SafetensorsFile::fromBytes(bytes, "fuzz.safetensors");
        for (std::size_t i = 0; i < r.entries; ++i) found += f.find(entryName(r, i)) != nullptr;
        check(f.tensors().size() == r.entries, "not every entry was read");
    } catch (const InputError& e) {
        error = e.message();
    }
    const double seconds = cpuSeconds() - start, budget = 0.25 + 2e-6 * static_cast<double>(headerBytes);
    check(seconds <= budget, "reading the header took more than a time linear in its size",
          std::to_string(seconds) + " s for " + std::to_string(headerBytes) + " bytes, " + std::to_string(r.entries) + " entries");

    const bool keyRepeated = r.repeatKey && r.repeatAt > 0, fieldRepeated = r.repeatField && r.entries > 0;
    const bool metadataTwice = r.metadataFirst && r.metadataLast;
    if (keyRepeated || fieldRepeated || metadataTwice) {
        check(!error.empty(), "a repeated key or field was accepted");
        if (!fieldRepeated && !metadataTwice)
            check(error == "fuzz.safetensors: " + entryName(r, 0) + ": appears twice in the header",
                  "the repeated key is not the one named", error);
        return 0;
    }
    if (r.trailing > 0) {
        check(error.find("bytes follow the last tensor's end") != std::string::npos, "trailing bytes were accepted", error);
        return 0;
    }
    check(error.empty(), "a valid header was refused", error);
    check(found == r.entries, "an entry was not found by its name");
    return 0;
}
