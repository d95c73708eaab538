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

void writeFileAtomic(const std::string& path, std::string_view bytes) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (fs::is_directory(path, ec)) throw InputError(path, "is a directory, expected a file name");
    const fs::path target(path);
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
    std::size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0) {
            if (errno == EINTR) continue;
            fail("write failed");
        }
        done += static_cast<std::size_t>(n);
    }
    if (::fsync(fd) != 0) fail("write failed");
    // Keep an existing file's permissions; a new file gets the usual 0666 less the umask.
    struct stat old {};
    if (::stat(path.c_str(), &old) == 0) {
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
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
        const int err = errno;
        ::unlink(tmp.c_str());
        throw InputError(path, std::string("cannot replace the file: ") + std::strerror(err));
    }
}

}  // namespace attnviz::core
