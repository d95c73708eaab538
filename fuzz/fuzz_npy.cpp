// libFuzzer target: bytes as a .npy file. A file is either refused with core::InputError or
// decoded into a tensor whose data matches its shape and is finite; that tensor encodes to a
// file that decodes back to the same shape and the same bits, and encodes again to the same bytes.
#include "core/base/error.hpp"
#include "core/io/npy.hpp"
#include "fuzz/check.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace {

using namespace attnviz::core;
using attnviz::fuzz::check;

// Elements a shape holds, or -1 when the product does not fit (no such tensor can exist).
long long elementCount(const Tensor& t) {
    long long n = 1;
    for (long long d : t.shape) {
        if (d == 0) return 0;
    }
    for (long long d : t.shape) {
        if (d < 0 || __builtin_mul_overflow(n, d, &n)) return -1;
    }
    return n;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string bytes(reinterpret_cast<const char*>(data), size);
    Tensor t;
    try {
        t = decodeNpy(bytes, "fuzz.npy");
    } catch (const InputError&) {
        return 0;  // refused with a message: fine
    }
    // 1. the decoded tensor is consistent
    check(elementCount(t) >= 0 && static_cast<std::size_t>(elementCount(t)) == t.data.size(), "data size does not match the shape");
    for (float v : t.data) check(std::isfinite(v), "decoded a non-finite value");

    // 2. encode, decode: same shape, same bits; encoding is stable
    const std::string encoded = encodeNpy(t);
    check(encoded.size() >= 10, "encoded file is shorter than its preamble");
    const std::size_t headerLen =
        static_cast<unsigned char>(encoded[8]) | (static_cast<std::size_t>(static_cast<unsigned char>(encoded[9])) << 8);
    check((10 + headerLen) % 64 == 0, "encoded header is not 64-byte aligned");
    check(encoded.size() == 10 + headerLen + 4 * t.data.size(), "encoded file has the wrong size");
    Tensor back;
    try {
        back = decodeNpy(encoded, "re-encoded.npy");
    } catch (const InputError& e) {
        check(false, "a re-encoded tensor does not decode", e.message());
    }
    check(back.shape == t.shape, "shape changed in the round trip");
    check(back.data.size() == t.data.size() && (t.data.empty() || std::memcmp(back.data.data(), t.data.data(), 4 * t.data.size()) == 0),
          "data changed in the round trip");
    check(encodeNpy(back) == encoded, "encoding is not stable");
    return 0;
}
