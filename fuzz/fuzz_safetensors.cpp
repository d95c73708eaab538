// libFuzzer target: bytes as a safetensors file. A file is either refused with core::InputError
// or read into tensors that lie inside the file in the order of their offsets, no two overlapping,
// each holding shape × dtype size bytes and found by its name; every float tensor of modest size
// converts to floats, and an F32 one read in place holds the same bits as its copy.
#include "core/base/error.hpp"
#include "core/models/safetensors.hpp"
#include "fuzz/check.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace {

using namespace attnviz::core;
using attnviz::fuzz::check;

constexpr std::int64_t kMaxConverted = 1 << 16;  // elements converted per tensor

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
    std::optional<SafetensorsFile> file;
    try {
        file.emplace(SafetensorsFile::fromBytes(bytes, "fuzz.safetensors"));
    } catch (const InputError& e) {
        check(e.message().find('\n') == std::string::npos && e.message().size() < 700, "an error is not one bounded line", e.message());
        return 0;  // refused with a message: fine
    }
    check(file->fileBytes() == size, "fileBytes is not the size given");

    // 1. the layout: in the file, in order, no overlap, the size the shape says, found by name
    const std::byte* reached = nullptr;  // the end of the last non-empty tensor
    const TensorInfo* previous = nullptr;
    for (const TensorInfo& t : file->tensors()) {
        const std::span<const std::byte> b = file->bytes(t);
        check(b.data() >= bytes.data() && b.data() + b.size() <= bytes.data() + bytes.size(), "a tensor lies outside the file", t.name);
        check(!previous || previous->begin <= t.begin, "tensors are not in the order of their offsets", t.name);
        check(t.elements() >= 0 && static_cast<std::uint64_t>(t.elements()) * dtypeBytes(t.dtype) == b.size(),
              "shape × size is not the byte count", t.name);
        check(file->find(t.name) == &t, "find does not give the tensor back", t.name);
        check(!t.name.empty() && t.name != "__metadata__", "a tensor has a reserved or empty name");
        if (!b.empty()) {
            check(!reached || b.data() >= reached, "two tensors overlap", t.name);
            reached = b.data() + b.size();
        }
        previous = &t;
    }

    // 2. conversions: float tensors convert, the others are refused; in place = copied
    for (const TensorInfo& t : file->tensors()) {
        if (t.elements() > kMaxConverted) continue;
        std::vector<float> out(static_cast<std::size_t>(t.elements()));
        if (!isFloatDType(t.dtype)) {
            bool refused = false;
            try {
                file->toFloats(t, out.data());
            } catch (const InputError&) {
                refused = true;
            }
            check(refused, "toFloats converted a tensor that is not a float type", t.name);
            check(file->floatsInPlace(t) == nullptr, "floatsInPlace gave a tensor that is not F32", t.name);
            continue;
        }
        file->toFloats(t, out.data());
        if (const float* inPlace = file->floatsInPlace(t)) {
            check(t.dtype == DType::F32, "floatsInPlace gave a tensor that is not F32", t.name);
            check(reinterpret_cast<std::uintptr_t>(inPlace) % alignof(float) == 0, "floatsInPlace gave a misaligned pointer", t.name);
            check(out.empty() || std::memcmp(inPlace, out.data(), 4 * out.size()) == 0, "in-place floats differ from the copy", t.name);
        }
    }
    return 0;
}
