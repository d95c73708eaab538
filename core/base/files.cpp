#include "core/base/files.hpp"

#include "core/base/error.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <mutex>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace attnviz::core {
namespace {

constexpr std::size_t kBufferBytes = std::size_t{1} << 20;

// ---- named temporaries, removed by a signal handler -------------------------------------
// The handler may only call async-signal-safe functions, so the names live in fixed slots
// that it reads without a lock: a slot's name is written before `used` is set.

struct TemporarySlot {
    std::atomic<bool> used{false};
    char path[4096] = {};
};
constexpr int kSlots = 64;
TemporarySlot g_slots[kSlots];
constexpr int kCleanupSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
struct sigaction g_previous[sizeof kCleanupSignals / sizeof kCleanupSignals[0]];

extern "C" void removeTemporariesAndResignal(int sig) {
    for (TemporarySlot& slot : g_slots)
        if (slot.used.load()) ::unlink(slot.path);
    for (std::size_t i = 0; i < sizeof kCleanupSignals / sizeof kCleanupSignals[0]; ++i)
        if (kCleanupSignals[i] == sig) ::sigaction(sig, &g_previous[i], nullptr);
    ::raise(sig);  // delivered with the previous action once this handler returns
}

// Called before every batch: a handler that someone replaced since (or a process forked from
// one that had it) gets it back; the action it replaces is what follows the cleanup.
void installHandlers() {
    static std::mutex mutex;
    const std::lock_guard lock(mutex);
    for (std::size_t i = 0; i < sizeof kCleanupSignals / sizeof kCleanupSignals[0]; ++i) {
        struct sigaction current {};
        ::sigaction(kCleanupSignals[i], nullptr, &current);
        if (current.sa_handler == SIG_IGN || current.sa_handler == removeTemporariesAndResignal) continue;  // nohup: stays ignored
        g_previous[i] = current;
        struct sigaction cleanup {};
        cleanup.sa_handler = removeTemporariesAndResignal;
        sigemptyset(&cleanup.sa_mask);
        ::sigaction(kCleanupSignals[i], &cleanup, nullptr);
    }
    // Past the file size limit, write() fails with EFBIG and is reported, instead of the default
    // action of SIGXFSZ killing the process with its temporary in place.
    std::signal(SIGXFSZ, SIG_IGN);
}

// A slot for `path`, or -1 when every slot is taken or the name does not fit. Only batches
// register names, and each installed the handlers when it was made.
int registerTemporary(const std::string& path) {
    if (path.size() >= sizeof g_slots[0].path) return -1;
    static std::mutex mutex;  // writers only; the handler reads without it
    const std::lock_guard lock(mutex);
    for (int i = 0; i < kSlots; ++i) {
        if (g_slots[i].used.load()) continue;
        std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
        g_slots[i].used.store(true);
        return i;
    }
    return -1;
}

void unregisterTemporary(int slot) {
    if (slot >= 0) g_slots[slot].used.store(false);
}

// Writes every byte, retrying after signals; false with errno set on failure.
bool writeAll(int fd, std::string_view bytes) {
    std::size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return false;
        done += static_cast<std::size_t>(n);
    }
    return true;
}

std::string errnoText(const char* step, int err) { return std::string(step) + ": " + std::strerror(err); }

}  // namespace

// One file of a batch: its temporary (or, for a device or a pipe, the target itself) and the
// bytes not yet written.
struct FileBatch::Entry : ByteSink {
    std::string path;    // as given, for messages
    std::string target;  // a link followed
    int fd = -1;
    bool inPlace = false;  // a device or a pipe
    FileIdentity id;       // of the target, before it is written
    std::string tempName;  // the visible temporary, when there is one
    int slot = -1;         // its signal-handler slot
    std::string buffer;

    ~Entry() override { discard(); }

    void write(std::string_view bytes) override {
        if (buffer.size() + bytes.size() < kBufferBytes) {
            buffer.append(bytes);
            return;
        }
        flush();
        if (bytes.size() >= kBufferBytes) put(bytes);  // large pieces go straight through
        else buffer.append(bytes);
    }
    void flush() {
        put(buffer);
        buffer.clear();
    }
    void put(std::string_view bytes) const {
        if (!writeAll(fd, bytes)) throw InputError(path, errnoText("write failed", errno));
    }
    void nameTemporary(const std::string& name) {
        tempName = name;
        slot = registerTemporary(name);
    }
    void discard() {
        if (fd >= 0) ::close(fd), fd = -1;
        if (!tempName.empty()) ::unlink(tempName.c_str()), tempName.clear();
        unregisterTemporary(slot), slot = -1;
    }
};

FileIdentity fileIdentity(const std::string& path) {
    namespace fs = std::filesystem;
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) return {st.st_dev, st.st_ino, ""};
    std::error_code ec;
    const fs::path resolved = fs::weakly_canonical(fs::absolute(path, ec), ec);  // links and `..` of what exists
    const fs::path folder = resolved.has_parent_path() ? resolved.parent_path() : fs::path("/");
    if (::stat(folder.c_str(), &st) == 0) return {st.st_dev, st.st_ino, resolved.filename().string()};
    return {0, 0, resolved.lexically_normal().string()};  // nothing of it exists: its normal form
}

bool sameFile(const std::string& a, const std::string& b) { return fileIdentity(a) == fileIdentity(b); }

FileBatch::FileBatch(Temporaries kind) : m_kind(kind) { installHandlers(); }

FileBatch::~FileBatch() {
    m_entries.clear();  // temporaries first, so that the folders made for them are empty
    for (auto it = m_madeFolders.rbegin(); it != m_madeFolders.rend(); ++it) ::rmdir(it->c_str());
}

void FileBatch::protect(const std::string& path, std::string what) {
    struct stat st {};
    if (path.empty() || ::stat(path.c_str(), &st) != 0) return;
    m_inputs.emplace_back(FileIdentity{st.st_dev, st.st_ino, ""}, std::move(what));
}

void FileBatch::refuseInput(const std::string& path, const FileIdentity& id) const {
    for (const auto& [input, what] : m_inputs)
        if (input == id) throw InputError(path, "is " + what + ", an input of this run; write elsewhere");
}

void FileBatch::makeFolder(const std::string& dir) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) throw InputError(dir, "exists and is not a folder");
    std::vector<fs::path> missing;  // innermost first
    for (fs::path p = fs::path(dir).lexically_normal(); !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
        if (p.filename().empty()) {  // "out/": the same folder
            p = p.parent_path();
            if (p.empty() || fs::exists(p, ec)) break;
        }
        missing.push_back(p);
        if (!p.has_parent_path() || p.parent_path() == p) break;
    }
    for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
        if (!fs::create_directory(*it, ec) && ec) throw InputError(dir, "cannot create the folder: " + ec.message());
        m_madeFolders.push_back(it->string());
    }
}

ByteSink& FileBatch::open(const std::string& path) {
    namespace fs = std::filesystem;
    auto entry = std::make_unique<Entry>();
    entry->path = path;
    std::error_code ec;
    // A symbolic link is followed: the file it names is replaced and the link stays a link.
    fs::path target(path);
    if (fs::is_symlink(target, ec)) {
        target = fs::weakly_canonical(target, ec);
        if (ec) throw InputError(path, "cannot follow the link: " + ec.message());
    }
    entry->target = target.string();
    entry->id = fileIdentity(entry->target);
    refuseInput(path, entry->id);
    for (const auto& other : m_entries)
        if (other->id == entry->id) throw InputError(path, "is the same file as " + other->path + ", written once already");
    const fs::file_status status = fs::status(target, ec);
    if (fs::is_directory(status)) throw InputError(path, "is a directory, expected a file name");
    if (fs::exists(status) && !fs::is_regular_file(status)) {
        // O_NONBLOCK: a FIFO without a reader fails at once (ENXIO) instead of waiting for one.
        entry->fd = ::open(entry->target.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
        if (entry->fd < 0 && errno == ENXIO) throw InputError(path, "a named pipe that nothing reads from");
        if (entry->fd < 0) throw InputError(path, errnoText("cannot open", errno));
        ::fcntl(entry->fd, F_SETFL, ::fcntl(entry->fd, F_GETFL) & ~O_NONBLOCK);
        entry->inPlace = true;
        m_entries.push_back(std::move(entry));
        return *m_entries.back();
    }
    const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
    if (!fs::is_directory(dir, ec)) {
        if (fs::exists(dir, ec)) throw InputError(path, dir.string() + " is not a folder");  // ENOTDIR
        throw InputError(path, "folder " + dir.string() + " does not exist");
    }
    // An unnamed file first: nothing can be left behind while it is written.
    if (m_kind == Temporaries::Unnamed) entry->fd = ::open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
    if (entry->fd < 0) {  // no O_TMPFILE on this file system: a short hidden name instead
        std::string name = (dir / ".attnviz-XXXXXX").string();
        entry->fd = ::mkstemp(name.data());
        if (entry->fd < 0) throw InputError(path, errnoText("cannot create a file here", errno));
        entry->nameTemporary(name);
    }
    m_entries.push_back(std::move(entry));
    return *m_entries.back();
}

void FileBatch::removeOnCommit(const std::string& path) {
    refuseInput(path, fileIdentity(path));
    m_removals.push_back(path);
}

void FileBatch::commit() {
    namespace fs = std::filesystem;
    static std::atomic<unsigned> counter{0};
    // 1. every file complete, synced and named beside its target; nothing replaced yet
    for (const auto& e : m_entries) {
        e->flush();
        if (e->inPlace) {
            const int fd = e->fd;
            e->fd = -1;
            if (::close(fd) != 0) throw InputError(e->path, errnoText("write failed", errno));
            continue;
        }
        if (::fsync(e->fd) != 0) throw InputError(e->path, errnoText("write failed", errno));
        // Keep an existing file's permissions; a new file gets the usual 0666 less the umask.
        struct stat old {};
        if (::stat(e->target.c_str(), &old) == 0) {
            ::fchmod(e->fd, old.st_mode & 07777);
        } else {
            const mode_t mask = ::umask(0);
            ::umask(mask);
            ::fchmod(e->fd, 0666 & ~mask);
        }
        if (e->tempName.empty()) {  // the unnamed file gets a short hidden name for the rename
            const fs::path dir = fs::path(e->target).has_parent_path() ? fs::path(e->target).parent_path() : fs::path(".");
            const std::string self = "/proc/self/fd/" + std::to_string(e->fd);
            for (;;) {
                const std::string name = (dir / (".attnviz-" + std::to_string(::getpid()) + "-" + std::to_string(counter++))).string();
                e->nameTemporary(name);
                if (::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, name.c_str(), AT_SYMLINK_FOLLOW) == 0) break;
                const int err = errno;
                unregisterTemporary(e->slot), e->slot = -1, e->tempName.clear();
                if (err != EEXIST) throw InputError(e->path, errnoText("cannot create a file here", err));
            }
        }
        const int fd = e->fd;
        e->fd = -1;
        if (::close(fd) != 0) throw InputError(e->path, errnoText("write failed", errno));
    }
    // 2. each renamed over its target
    for (const auto& e : m_entries) {
        if (e->inPlace) continue;
        if (::rename(e->tempName.c_str(), e->target.c_str()) != 0) throw InputError(e->path, errnoText("cannot replace the file", errno));
        unregisterTemporary(e->slot), e->slot = -1, e->tempName.clear();
    }
    for (const std::string& path : m_removals) ::unlink(path.c_str());
    m_entries.clear();
    m_removals.clear();
    m_madeFolders.clear();  // they hold the outputs now
}

void writeFileAtomic(const std::string& path, std::string_view bytes) {
    FileBatch batch;
    batch.add(path, bytes);
    batch.commit();
}

int visibleTemporaries() {
    int n = 0;
    for (const TemporarySlot& slot : g_slots) n += slot.used.load() ? 1 : 0;
    return n;
}

std::string readTextFile(const std::string& path, std::size_t maxBytes, std::string_view kind) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const auto status = fs::status(path, ec);
    if (ec || !fs::exists(status)) throw InputError(path, "no such file");
    if (fs::is_directory(status)) throw InputError(path, "is a directory, expected a file");
    const auto tooLarge = [&] {
        return InputError(path, "larger than " + std::to_string(maxBytes >> 20) + " MiB, the most " + std::string(kind) +
                                    " may be (is it the right file?)");
    };
    // O_NONBLOCK: opening a named pipe that nothing writes to would otherwise wait forever. Reads
    // block again once it is open, so a pipe with a writer (--scenario <(…)) is read to its end.
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) throw InputError(path, std::string("cannot open: ") + std::strerror(errno));
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    std::string text;
    // A regular file says its size: one over the limit is refused unread, and one under it is
    // read into a string of its size (appending would double the string, and copy it, as it grows).
    struct stat info {};
    if (::fstat(fd, &info) == 0 && S_ISREG(info.st_mode)) {
        if (static_cast<std::uint64_t>(info.st_size) > maxBytes) {
            ::close(fd);
            throw tooLarge();
        }
        text.reserve(static_cast<std::size_t>(info.st_size));
    }
    char buffer[1 << 16];
    for (;;) {
        // never past one byte over the limit: /dev/zero, or a pipe that does not end
        const std::size_t want = std::min(sizeof buffer, maxBytes + 1 - text.size());
        const ssize_t n = ::read(fd, buffer, want);
        if (n == 0) break;
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            const int err = errno;  // e.g. EIO from /proc/self/mem
            ::close(fd);
            throw InputError(path, std::string("read failed: ") + std::strerror(err));
        }
        text.append(buffer, static_cast<std::size_t>(n));
        if (text.size() > maxBytes) {
            ::close(fd);
            throw tooLarge();
        }
    }
    ::close(fd);
    return text;
}

std::string lowerExtension(const std::string& path) {
    std::string ext = std::filesystem::path(path).extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return ext;
}

}  // namespace attnviz::core
