// The safetensors format (Hugging Face): an 8-byte little-endian header length N, N bytes of
// JSON, then the tensors' bytes. The header maps each tensor's name to
//   {"dtype": "F32", "shape": [768, 2304], "data_offsets": [begin, end]}
// with offsets relative to the first byte after the header, and may hold "__metadata__" (a map
// of strings to strings).
//
// The file is mapped, never copied: a tensor's bytes are read where they lie. The header is
// checked before anything in it is trusted:
//   * the file holds at least 8 bytes, and the header length fits in the file and under
//     kMaxHeaderBytes;
//   * the header is a JSON object of objects (nothing after it but the spaces writers pad it
//     with, no key twice), each with a known dtype, a shape of at most 8 non-negative integers
//     and two data_offsets, begin <= end;
//   * every tensor lies inside the data, no two overlap, and shape × dtype size = end - begin
//     (the product computed without overflow); the data ends where the last tensor does.
// Reading the header is linear in its size (its entries are taken one by one as they are parsed)
// and opening touches the header's pages only.
// Every problem is an InputError naming the file and the tensor (or the field) at fault.
#pragma once

#include "core/base/float16.hpp"  // halfToFloat, bfloat16ToFloat
#include "core/base/mapped_file.hpp"
#include "core/base/matrix.hpp"
#include "core/base/progress.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace attnviz::core {

enum class DType { Bool, U8, I8, I16, U16, F16, BF16, I32, U32, F32, F64, I64, U64, F8E4M3, F8E5M2 };
const char* dtypeName(DType dtype);   // "F32", as the header spells it
std::size_t dtypeBytes(DType dtype);  // 4 for F32
bool isFloatDType(DType dtype);       // F16, BF16, F32, F64: what toFloats converts

struct TensorInfo {
    std::string name;
    DType dtype = DType::F32;
    std::vector<std::int64_t> shape;
    std::uint64_t begin = 0, end = 0;  // byte offsets into the data (after the header)

    std::int64_t elements() const;  // the product of shape (1 for a scalar)
};

class SafetensorsFile {
public:
    static constexpr std::uint64_t kMaxHeaderBytes = 100ULL << 20;  // 100 MiB, the format's own limit

    // Maps `path` and checks its header; reads nothing else (populate reads a tensor's pages).
    // Throws InputError(path [: tensor], problem), or Cancelled once `progress` was stopped.
    static SafetensorsFile open(const std::string& path, Progress* progress = nullptr);
    // The same over bytes already in memory (tests and the fuzz target); `name` stands for the
    // file in messages. The bytes must outlive the object.
    static SafetensorsFile fromBytes(std::span<const std::byte> bytes, const std::string& name);

    SafetensorsFile(SafetensorsFile&&) noexcept;
    SafetensorsFile& operator=(SafetensorsFile&&) noexcept;
    ~SafetensorsFile();

    const std::string& path() const { return m_path; }
    std::uint64_t fileBytes() const { return m_bytes.size(); }
    // Every tensor, in the order of their data offsets.
    const std::vector<TensorInfo>& tensors() const { return m_tensors; }
    const std::map<std::string, std::string>& metadata() const { return m_metadata; }
    // The tensor called `name`, or null.
    const TensorInfo* find(std::string_view name) const;
    // Its bytes in the mapped file.
    std::span<const std::byte> bytes(const TensorInfo& tensor) const;
    // A float tensor's values as F32 (converted from F16, BF16 or F64; F32 copied), `out` must
    // hold tensor.elements() values. Throws InputError naming the tensor when its dtype is not
    // a float type.
    void toFloats(const TensorInfo& tensor, float* out) const;
    // Its F32 values where they lie, or null when the tensor is not F32 or its first byte is not
    // aligned for a float (then toFloats copies them).
    const float* floatsInPlace(const TensorInfo& tensor) const;
    // Reads the tensor's pages of the mapped file in a few large calls (advice: nothing for
    // fromBytes).
    void populate(const TensorInfo& tensor) const;
    // Gives the tensor's pages of the mapped file back to the system (they are read from the
    // file again if the tensor is read again): for a tensor copied elsewhere (packed for the
    // kernels), so that a checkpoint is not resident twice. Nothing for fromBytes.
    void release(const TensorInfo& tensor) const;
    // The file changed since it was mapped (core/base/mapped_file.hpp): what was read from it may
    // be zeros or another file's bytes. Never for fromBytes.
    bool changed() const;
    // Throws InputError(path, "changed while it was read; open it again") when changed().
    void checkUnchanged() const;

private:
    SafetensorsFile() = default;
    void parse();
    void takeEntry(const std::string& name, const nlohmann::json& entry, std::uint64_t dataSize);

    std::string m_path;
    std::unique_ptr<MappedFile> m_mapping;  // null for fromBytes
    std::span<const std::byte> m_bytes;     // the whole file
    std::uint64_t m_dataStart = 0;          // 8 + header length
    std::vector<TensorInfo> m_tensors;
    std::vector<std::size_t> m_byName;  // m_tensors' indices in the order of their names
    std::map<std::string, std::string> m_metadata;
};

}  // namespace attnviz::core
