// Writes: a signal, a file size limit or a failing second file never leaves a temporary, a
// half-written file or a mix of old and new files; a FIFO with no reader is an error, not a wait.
#include "core/base/error.hpp"
#include "core/base/files.hpp"
#include "tests/test_folder.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace attnviz::core {
namespace {

namespace fs = std::filesystem;
using Kind = FileBatch::Temporaries;

class Writes : public attnviz::testfs::TestFolder {
protected:
    static std::string read(const fs::path& p) { return attnviz::testfs::readFile(p); }
    static void write(const fs::path& p, const std::string& text) { attnviz::testfs::writeFile(p, text); }
};

// A child process writes 2 MiB over an old file and is interrupted by `sig` half-way: it dies
// of that signal, and the folder holds the old file alone.
TEST_F(Writes, SignalDuringAWriteLeavesTheOldFileAndNoTemporary) {
    for (const Kind kind : {Kind::Unnamed, Kind::Named}) {
        for (const int sig : {SIGINT, SIGTERM, SIGHUP}) {  // (SIGQUIT too, but its default dumps core)
            SCOPED_TRACE(std::to_string(static_cast<int>(kind)) + " " + std::to_string(sig));
            write(path("out.bin"), "old\n");
            const pid_t child = ::fork();
            ASSERT_GE(child, 0);
            if (child == 0) {
                std::signal(sig, SIG_DFL);
                FileBatch batch(kind);
                ByteSink& sink = batch.open(path("out.bin").string());
                sink.write(std::string(2 << 20, 'x'));  // past the buffer: on disk already
                ::raise(sig);
                ::_exit(0);
            }
            int status = 0;
            ASSERT_EQ(::waitpid(child, &status, 0), child);
            EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig) << status;
            EXPECT_EQ(listDir(), std::vector<fs::path>{"out.bin"});
            EXPECT_EQ(read(path("out.bin")), "old\n");
        }
    }
}

// Past the file size limit the write fails and says so; SIGXFSZ does not kill the process with
// its temporary in place.
TEST_F(Writes, FileSizeLimitIsAnErrorNotADeath) {
    for (const Kind kind : {Kind::Unnamed, Kind::Named}) {
        write(path("out.bin"), "old\n");
        const pid_t child = ::fork();
        ASSERT_GE(child, 0);
        if (child == 0) {
            attnviz::testfs::limitFileSize(1 << 20);
            try {
                FileBatch batch(kind);
                batch.add(path("out.bin").string(), std::string(2 << 20, 'x'));
                batch.commit();
            } catch (const InputError& e) {
                ::_exit(std::string(e.what()) == "write failed: File too large" && visibleTemporaries() == 0 ? 3 : 4);
            }
            ::_exit(5);
        }
        int status = 0;
        ASSERT_EQ(::waitpid(child, &status, 0), child);
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 3) << status;
        EXPECT_EQ(listDir(), std::vector<fs::path>{"out.bin"});
        EXPECT_EQ(read(path("out.bin")), "old\n");
    }
}

// Several files are all or nothing: when the third cannot be written, the first two keep their
// old contents and no temporary is left.
TEST_F(Writes, BatchIsAllOrNothing) {
    for (const Kind kind : {Kind::Unnamed, Kind::Named}) {
        write(path("a.txt"), "old a\n");
        write(path("b.txt"), "old b\n");
        fs::create_directory(path("c.txt"));  // a folder in the way
        {
            FileBatch batch(kind);
            batch.add(path("a.txt").string(), "new a\n");
            batch.add(path("b.txt").string(), "new b\n");
            EXPECT_THROW(batch.add(path("c.txt").string(), "new c\n"), InputError);
        }
        EXPECT_EQ(read(path("a.txt")), "old a\n");
        EXPECT_EQ(read(path("b.txt")), "old b\n");
        EXPECT_EQ(listDir(), (std::vector<fs::path>{"a.txt", "b.txt", "c.txt"}));
        EXPECT_EQ(visibleTemporaries(), 0);
        fs::remove(path("c.txt"));
        {
            FileBatch batch(kind);
            batch.add(path("a.txt").string(), "new a\n");
            batch.add(path("c.txt").string(), "new c\n");
            batch.removeOnCommit(path("b.txt").string());  // a stale output of an earlier run
            batch.commit();
        }
        EXPECT_EQ(read(path("a.txt")), "new a\n");
        EXPECT_EQ(read(path("c.txt")), "new c\n");
        EXPECT_EQ(listDir(), (std::vector<fs::path>{"a.txt", "c.txt"}));
        EXPECT_EQ(visibleTemporaries(), 0);
        fs::remove(path("a.txt"));
        fs::remove(path("c.txt"));
    }
}

// A FIFO nothing reads from is refused at once (before, the open waited for a reader for ever).
TEST_F(Writes, NamedPipeWithoutAReaderIsAnErrorNotAWait) {
    ASSERT_EQ(::mkfifo(path("p").c_str(), 0600), 0);
    try {
        writeFileAtomic(path("p").string(), "x");
        FAIL() << "no error";
    } catch (const InputError& e) {
        EXPECT_EQ(e.message(), path("p").string() + ": a named pipe that nothing reads from");
    }
    EXPECT_TRUE(fs::is_fifo(path("p")));
}

// The longest name a folder may hold: the temporary's own name must not be longer.
TEST_F(Writes, LongestLegalFileNameWorks) {
    for (const Kind kind : {Kind::Unnamed, Kind::Named}) {
        const std::string name(255, 'n');
        FileBatch batch(kind);
        batch.add(path(name).string(), "long\n");
        batch.commit();
        EXPECT_EQ(read(path(name)), "long\n");
        EXPECT_EQ(listDir(), std::vector<fs::path>{name});
        fs::remove(path(name));
    }
}

// A new file gets 0666 less the umask; a replaced one keeps its mode.
TEST_F(Writes, ModesAreKept) {
    const mode_t mask = ::umask(022);
    writeFileAtomic(path("new").string(), "x");
    EXPECT_EQ(fs::status(path("new")).permissions(), fs::perms(0644));
    ::chmod(path("new").c_str(), 0600);
    writeFileAtomic(path("new").string(), "y");
    EXPECT_EQ(fs::status(path("new")).permissions(), fs::perms(0600));
    ::umask(mask);
}

}  // namespace
}  // namespace attnviz::core
