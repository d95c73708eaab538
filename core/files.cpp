#include "core/files.hpp"

#include "core/error.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace attnviz::core {
namespace {

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

// A device or a pipe (/dev/null, a FIFO) is written in place: renaming a file over it would put
// a regular file where the device was.
void writeInPlace(const std::string& path, const std::string& target, std::string_view bytes) {
    const int fd = ::open(target.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) throw InputError(path, std::string("cannot open: ") + std::strerror(errno));
    const bool written = writeAll(fd, bytes);
    const int writeError = errno;
    const bool closed = ::close(fd) == 0;
    if (!written || !closed) throw InputError(path, std::string("write failed: ") + std::strerror(written ? errno : writeError));
}

}  // namespace

void writeFileAtomic(const std::string& path, std::string_view bytes) {
    namespace fs = std::filesystem;
    std::error_code ec;
    // A symbolic link is followed: the file it names is replaced and the link stays a link.
    fs::path target(path);
    if (fs::is_symlink(target, ec)) {
        target = fs::weakly_canonical(target, ec);
        if (ec) throw InputError(path, "cannot follow the link: " + ec.message());
    }
    const fs::file_status status = fs::status(target, ec);
    if (fs::is_directory(status)) throw InputError(path, "is a directory, expected a file name");
    if (fs::exists(status) && !fs::is_regular_file(status)) {
        writeInPlace(path, target.string(), bytes);
        return;
    }
    const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
    if (!fs::is_directory(dir, ec)) {
        if (fs::exists(dir, ec)) throw InputError(path, dir.string() + " is not a folder");  // ENOTDIR
        throw InputError(path, "folder " + dir.string() + " does not exist");
    }

    std::string tmp = (dir / ("." + target.filename().string() + ".XXXXXX")).string();
    const int fd = ::mkstemp(tmp.data());
    if (fd < 0) throw InputError(path, std::string("cannot create a file here: ") + std::strerror(errno));
    const auto fail = [&](const char* step) {
        const int err = errno;
        ::close(fd);
        ::unlink(tmp.c_str());
        throw InputError(path, std::string(step) + ": " + std::strerror(err));
    };
    if (!writeAll(fd, bytes) || ::fsync(fd) != 0) fail("write failed");
    // Keep an existing file's permissions; a new file gets the usual 0666 less the umask.
    struct stat old {};
    if (::stat(target.c_str(), &old) == 0) {
        ::fchmod(fd, old.st_mode & 07777);
    } else {
        const mode_t mask = ::umask(0);
        ::umask(mask);
        ::fchmod(fd, 0666 & ~mask);
    }
    if (::close(fd) != 0) {
        const int err = errno;
        ::unlink(tmp.c_str());
        throw InputError(path, std::string("write failed: ") + std::strerror(err));
    }
    if (::rename(tmp.c_str(), target.c_str()) != 0) {
        const int err = errno;
        ::unlink(tmp.c_str());
        throw InputError(path, std::string("cannot replace the file: ") + std::strerror(err));
    }
}

}  // namespace attnviz::core
