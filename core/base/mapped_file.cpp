#include "core/base/mapped_file.hpp"

#include "core/base/error.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <mutex>
#include <utility>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace attnviz::core {

namespace {

// The guarded ranges, read by the signal handler without a lock: a range is published by storing
// its end, then its begin (the handler reads begin first, so it never sees a begin with a stale
// end), and withdrawn by clearing its begin before the pages are unmapped.
struct Guarded {
    std::atomic<char*> begin{nullptr}, end{nullptr};
    std::atomic<bool> faulted{false};
    bool taken = false;  // by a MappedFile (under g_slotsMutex)
};
constexpr int kSlots = 1024;
std::array<Guarded, kSlots> g_guarded;
std::mutex g_slotsMutex;  // taking and giving back slots (never in the handler)
struct sigaction g_previous {};

static_assert(std::atomic<char*>::is_always_lock_free && std::atomic<bool>::is_always_lock_free,
              "the signal handler reads these without a lock");

void onBusError(int signal, siginfo_t* info, void* context) {
    const auto at = reinterpret_cast<std::uintptr_t>(info->si_addr);
    for (Guarded& g : g_guarded) {
        char* begin = g.begin.load(std::memory_order_acquire);
        char* end = g.end.load(std::memory_order_acquire);
        if (begin == nullptr || at < reinterpret_cast<std::uintptr_t>(begin) || at >= reinterpret_cast<std::uintptr_t>(end)) continue;
        // The file shrank under the mapping: zeros in place of all of it (one call, so that a
        // file truncated to nothing costs one fault, not one per page), and the read that faulted
        // is retried on them. mmap is a system call; errno is the interrupted code's.
        const int savedErrno = errno;
        void* zeros = ::mmap(begin, static_cast<std::size_t>(end - begin), PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        errno = savedErrno;
        if (zeros == MAP_FAILED) break;
        g.faulted.store(true, std::memory_order_release);
        return;
    }
    // Not ours: whatever handled SIGBUS before (a sanitizer's report), else the default action,
    // which the faulting instruction meets again when this handler returns.
    if ((g_previous.sa_flags & SA_SIGINFO) != 0 && g_previous.sa_sigaction != nullptr) {
        g_previous.sa_sigaction(signal, info, context);
        return;
    }
    if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
        g_previous.sa_handler(signal);
        return;
    }
    std::signal(signal, SIG_DFL);
}

void installHandler() {
    static std::once_flag once;
    std::call_once(once, [] {
        struct sigaction action {};
        action.sa_sigaction = onBusError;
        action.sa_flags = SA_SIGINFO | SA_ONSTACK;
        sigemptyset(&action.sa_mask);
        ::sigaction(SIGBUS, &action, &g_previous);
    });
}

MappedFile::Stamp stampOf(const struct stat& info) {
    return {static_cast<std::int64_t>(info.st_size), static_cast<std::int64_t>(info.st_mtim.tv_sec),
            static_cast<std::int64_t>(info.st_mtim.tv_nsec)};
}

}  // namespace

std::unique_ptr<MappedFile> MappedFile::open(const std::string& path, const std::string& expected, const std::string& layout) {
    // O_NONBLOCK: a FIFO opens at once instead of waiting for a writer, and is refused below.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        const int err = errno;
        throw InputError(path, err == ENOENT ? std::string("no such file") : std::string("cannot open: ") + std::strerror(err));
    }
    struct stat info {};
    const int statted = ::fstat(fd, &info);
    const int statErr = errno;
    std::string problem;
    if (statted != 0) problem = std::string("cannot stat: ") + std::strerror(statErr);
    else if (S_ISDIR(info.st_mode)) problem = "is a directory, expected " + expected;
    else if (!S_ISREG(info.st_mode)) problem = "is not a regular file (a pipe or a device cannot be mapped)";
    else if (info.st_size == 0) problem = "is empty, expected " + expected + (layout.empty() ? "" : " (" + layout + ")");
    if (!problem.empty()) {
        ::close(fd);
        throw InputError(path, problem);
    }
    return map(fd, static_cast<std::size_t>(info.st_size), path);
}

std::unique_ptr<MappedFile> MappedFile::map(int fd, std::size_t length, const std::string& path) {
    struct stat info {};
    if (::fstat(fd, &info) != 0) {
        const int err = errno;
        ::close(fd);
        throw InputError(path, std::string("cannot stat: ") + std::strerror(err));
    }
    installHandler();
    int slot = -1;
    {
        const std::lock_guard<std::mutex> lock(g_slotsMutex);
        for (int i = 0; i < kSlots && slot < 0; ++i)
            if (!g_guarded[static_cast<std::size_t>(i)].taken) slot = i;
        if (slot >= 0) g_guarded[static_cast<std::size_t>(slot)].taken = true;
    }
    if (slot < 0) {
        ::close(fd);
        throw InputError(path, "cannot map: " + std::to_string(kSlots) + " files are mapped already");
    }
    Guarded& g = g_guarded[static_cast<std::size_t>(slot)];
    void* address = ::mmap(nullptr, length, PROT_READ, MAP_PRIVATE, fd, 0);
    if (address == MAP_FAILED) {
        const int err = errno;
        ::close(fd);
        const std::lock_guard<std::mutex> lock(g_slotsMutex);
        g.taken = false;
        throw InputError(path, std::string("cannot map: ") + std::strerror(err));
    }
    g.faulted.store(false);
    g.end.store(static_cast<char*>(address) + length, std::memory_order_release);
    g.begin.store(static_cast<char*>(address), std::memory_order_release);
    return std::unique_ptr<MappedFile>(new MappedFile(fd, address, length, path, stampOf(info), slot));
}

MappedFile::MappedFile(int fd, void* address, std::size_t length, std::string path, Stamp stamp, int slot)
    : m_fd(fd), m_address(address), m_length(length), m_path(std::move(path)), m_stamp(stamp), m_slot(slot) {}

MappedFile::~MappedFile() {
    Guarded& g = g_guarded[static_cast<std::size_t>(m_slot)];
    g.begin.store(nullptr, std::memory_order_release);
    ::munmap(m_address, m_length);
    ::close(m_fd);
    const std::lock_guard<std::mutex> lock(g_slotsMutex);
    g.taken = false;
}

bool MappedFile::changed() const {
    if (g_guarded[static_cast<std::size_t>(m_slot)].faulted.load(std::memory_order_acquire)) return true;
    struct stat info {};
    return ::fstat(m_fd, &info) != 0 || !(stampOf(info) == m_stamp);
}

void MappedFile::checkUnchanged() const {
    if (changed()) throw InputError(m_path, "changed while it was read; open it again");
}

void MappedFile::populate(std::uint64_t offset, std::uint64_t n) const {
#ifdef MADV_POPULATE_READ
    // From the page holding `offset`: one call maps them all (a fault per page costs a second for
    // GPT-2 small on a virtual machine).
    const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    const std::uint64_t from = offset / page * page, to = std::min<std::uint64_t>(offset + n, m_length);
    if (to <= from) return;
    ::madvise(static_cast<std::byte*>(m_address) + from, to - from, MADV_POPULATE_READ);  // a hint: EFAULT past a shrunk end
#else
    (void)offset, (void)n;
#endif
}

void MappedFile::release(std::uint64_t offset, std::uint64_t n) const {
    // The whole pages inside the range (the mapping starts on a page): a neighbour's bytes on a
    // shared page stay.
    const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    const std::uint64_t from = (offset + page - 1) / page * page, to = std::min<std::uint64_t>(offset + n, m_length) / page * page;
    if (to <= from) return;
    ::madvise(static_cast<std::byte*>(m_address) + from, to - from, MADV_DONTNEED);  // a hint: nothing to do if it fails
}

}  // namespace attnviz::core
