// A file mapped read-only and guarded against being changed while it is mapped.
//
// A mapping reads the file's current pages, not a snapshot: a file truncated while mapped (a
// `cp` over it truncates it first) makes every read past its new end a SIGBUS, which would end
// the process, and a file rewritten in place changes what later reads see. The guard:
//   * a SIGBUS inside a guarded mapping replaces the whole mapping by zero pages, marks it
//     changed and returns, so the read that faulted (on any thread) goes on with zeros;
//   * changed() is also true once the file's size or modification time differ from those at
//     mapping (checked with fstat on the file, kept open; not the change time, which an unlink
//     moves too);
// and whoever read the mapping asks checkUnchanged() before trusting what it computed: an
// InputError "changed while it was read; open it again" instead of a signal or silently wrong
// numbers. A file replaced by rename (mv, an editor's save) is not changed: the mapping and the
// open file keep the old one. A SIGBUS outside every guarded mapping goes to the handler that
// was there before (or ends the process as it would have).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace attnviz::core {

class MappedFile {
public:
    // Maps the first `length` bytes (> 0) of the open regular file `fd`, which the mapping owns
    // from here on (it is closed with it, or at once when mapping fails). Throws
    // InputError(path, "cannot map: …").
    static std::unique_ptr<MappedFile> map(int fd, std::size_t length, const std::string& path);
    // Opens `path` and maps all of it. Throws InputError(path, …) when it is missing, unreadable,
    // a directory, not a regular file (a pipe, a device) or empty: "is a directory, expected
    // <expected>", "is empty, expected <expected> (<layout>)" (without the brackets when layout
    // is empty).
    static std::unique_ptr<MappedFile> open(const std::string& path, const std::string& expected, const std::string& layout = {});

    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;
    ~MappedFile();

    const std::string& path() const { return m_path; }
    std::span<const std::byte> bytes() const { return {static_cast<const std::byte*>(m_address), m_length}; }

    // True once a read faulted inside the mapping or the file's size or modification time changed.
    bool changed() const;
    // Throws InputError(path, "changed while it was read; open it again") when changed().
    void checkUnchanged() const;

    // Reads the pages of bytes [offset, offset + n) in a few large calls rather than a fault per
    // 4 KiB page. Advice only (nothing happens where the system lacks it).
    void populate(std::uint64_t offset, std::uint64_t n) const;
    // Gives the whole pages inside [offset, offset + n) back to the system: they are read from
    // the file again if read again. Advice only.
    void release(std::uint64_t offset, std::uint64_t n) const;

    struct Stamp {
        std::int64_t size = 0, mtimeSec = 0, mtimeNsec = 0;
        bool operator==(const Stamp&) const = default;
    };

private:
    MappedFile(int fd, void* address, std::size_t length, std::string path, Stamp stamp, int slot);

    int m_fd;
    void* m_address;
    std::size_t m_length;
    std::string m_path;
    Stamp m_stamp;  // the file as it was when mapped
    int m_slot;     // its entry among the guarded ranges
};

}  // namespace attnviz::core
