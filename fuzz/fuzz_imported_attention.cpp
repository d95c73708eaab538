// libFuzzer target: bytes as a file of imported attention (.npy or safetensors of maps, or of
// queries and keys). A file is either refused with core::InputError (at open or by the value
// checks) or every map it holds reads back as [T_q, T_k] finite weights >= 0 whose rows sum to 1
// within the tolerance or are zero, and the bytes written back (mapBytes) are the file's own; each
// map holds some weight, and the same file one byte short, or (maps) with every map zeroed, is
// refused.
#include "core/base/error.hpp"
#include "core/io/imported_attention.hpp"
#include "fuzz/check.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

using namespace attnviz::core;
using attnviz::fuzz::check;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::vector<std::byte> bytes(reinterpret_cast<const std::byte*>(data), reinterpret_cast<const std::byte*>(data) + size);
    Limits limits;
    limits.maxTokens = 512;  // a tiny header may promise a huge map: the checks stay fast
    std::shared_ptr<const ImportedAttention> a;
    try {
        a = ImportedAttention::fromBytes(bytes, "fuzz.npy", {}, limits);
        a->checkAll();
    } catch (const InputError&) {
        return 0;  // refused with a message: fine
    }
    check(a->layers() > 0 && a->heads() > 0 && a->queries() > 0 && a->queries() <= a->keys(), "accepted maps without a size");
    check(static_cast<Eigen::Index>(a->labels().size()) == a->keys(), "one label a key");
    // Truncated by a byte, or every map zeroed (what an interrupted export leaves): refused.
    const auto refused = [&](const std::vector<std::byte>& other) {
        try {
            ImportedAttention::fromBytes(other, "fuzz.npy", {}, limits)->checkAll();
        } catch (const InputError&) {
            return true;
        }
        return false;
    };
    check(refused(std::vector<std::byte>(bytes.begin(), bytes.end() - 1)), "a truncated file was accepted");
    // (queries and keys of zeros are a file's too: every query reads its keys alike)
    if (!a->queriesAndKeys()) {
        std::vector<std::byte> zeroed = bytes;
        for (int l = 0; l < a->layers(); ++l)
            for (int h = 0; h < a->heads(); ++h) {
                const auto raw = a->mapBytes(l, h);
                std::fill_n(zeroed.begin() + (raw.data() - bytes.data()), raw.size(), std::byte{0});
            }
        check(refused(zeroed), "a file of zeros was accepted");
    }
    std::vector<float> scratch;
    for (int l = 0; l < a->layers(); ++l)
        for (int h = 0; h < a->heads(); ++h) {
            const MatRef w = a->weights(l, h, scratch);
            check(w.rows() == a->queries() && w.cols() == a->keys(), "a map of the wrong shape");
            check(w.cwiseAbs().maxCoeff() > 0, "a checked map holds no weight");
            for (Eigen::Index i = 0; i < w.rows(); ++i) {
                double sum = 0;
                for (Eigen::Index j = 0; j < w.cols(); ++j) {
                    check(std::isfinite(w(i, j)) && w(i, j) >= 0, "a checked map holds a bad weight");
                    sum += w(i, j);
                }
                check(sum == 0 || std::abs(sum - 1) <= rowSumTolerance(a->dtype(), true, a->keys()), "a checked row does not sum to 1");
            }
            if (a->queriesAndKeys()) continue;  // made from queries and keys: no bytes of its own
            const auto raw = a->mapBytes(l, h);
            check(raw.data() >= bytes.data() && raw.data() + raw.size() <= bytes.data() + bytes.size(), "a map outside the file");
        }
    return 0;
}
