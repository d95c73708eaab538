// Outputs the command line cannot write: a parent that is a regular file, a folder inside /proc,
// a write that fails halfway (a file-size limit, as a full disk), a folder in the way, an empty
// path. Each is one error line with exit code 2, never a crash, and never a partial file, a
// temporary file left behind, or a damaged old file.
#include "cli_harness.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include <sys/resource.h>
#include <unistd.h>

namespace attnviz::app {
namespace {

using namespace clitest;

// Every file export, each with the name of a file it could write.
const std::vector<std::pair<std::string, std::string>> kFileExports = {
    {"--export", "out.json"}, {"--export-csv", "out.csv"}, {"--export-heatmap", "out.png"}, {"--export-heatmap", "out.svg"}};

// While alive, no file this process writes may grow past `bytes`: write() fails with EFBIG as it
// would on a full disk (SIGXFSZ, which would end the process, is ignored meanwhile).
class FileSizeLimit {
public:
    explicit FileSizeLimit(rlim_t bytes) {
        ::getrlimit(RLIMIT_FSIZE, &m_old);
        m_oldHandler = std::signal(SIGXFSZ, SIG_IGN);
        rlimit limit = m_old;
        limit.rlim_cur = bytes;
        m_set = ::setrlimit(RLIMIT_FSIZE, &limit) == 0;
    }
    ~FileSizeLimit() {
        ::setrlimit(RLIMIT_FSIZE, &m_old);
        std::signal(SIGXFSZ, m_oldHandler);
    }
    FileSizeLimit(const FileSizeLimit&) = delete;
    FileSizeLimit& operator=(const FileSizeLimit&) = delete;
    bool set() const { return m_set; }

private:
    rlimit m_old{};
    void (*m_oldHandler)(int) = SIG_DFL;
    bool m_set = false;
};

// ---- outputs ----------------------------------------------------------------------------

TEST_F(Cli, ExportUnderARegularFileIsRefused) {
    const fs::path file = path("notes.txt");
    writeFile(file, "notes\n");
    for (const auto& [flag, name] : kFileExports) {
        const fs::path out = file / name;
        const std::string line = expectError(runCli({flag, out.string()}));
        EXPECT_EQ(line, out.string() + ": " + file.string() + " is not a folder") << flag;
    }
    const fs::path npy = file / "npy";
    const std::string line = expectError(runCli({"--export-npy", npy.string()}));
    EXPECT_EQ(line.rfind(npy.string() + ": cannot create the folder: ", 0), 0u) << line;
    EXPECT_EQ(readFile(file), "notes\n");
    EXPECT_EQ(listDir(), std::vector<fs::path>{"notes.txt"});
}

// Root may write almost anywhere, but no file can be created in /proc.
TEST_F(Cli, ExportIntoProcIsRefused) {
    const std::string base = "/proc/attnviz-" + std::to_string(::getpid());
    for (const auto& [flag, name] : kFileExports) {
        const std::string out = base + "-" + name;
        const std::string line = expectError(runCli({flag, out}));
        EXPECT_EQ(line.rfind(out + ": cannot create a file here: ", 0), 0u) << line;
        EXPECT_FALSE(fs::exists(out));
    }
    const std::string npy = base + "-npy";
    const std::string line = expectError(runCli({"--export-npy", npy}));
    EXPECT_EQ(line.rfind(npy + ": cannot create the folder: ", 0), 0u) << line;
    EXPECT_FALSE(fs::exists(npy));
}

TEST_F(Cli, WriteFailingHalfwayLeavesTheOldFileAndNoTemporary) {
    const std::string before = "{\"keep\": \"me\"}\n";
    for (const auto& [flag, name] : kFileExports) writeFile(path(name), before);
    ASSERT_TRUE(fs::create_directory(path("npy")));
    writeFile(path("npy") / "X.npy", before);

    std::vector<CliRun> runs;
    {
        const FileSizeLimit limit(64);  // every export is larger; the old files are smaller
        ASSERT_TRUE(limit.set());
        for (const auto& [flag, name] : kFileExports) runs.push_back(runCli({flag, path(name).string()}));
        runs.push_back(runCli({"--export-npy", path("npy").string()}));
    }
    for (std::size_t i = 0; i < kFileExports.size(); ++i) {
        const fs::path out = path(kFileExports[i].second);
        EXPECT_EQ(expectError(runs[i]), out.string() + ": write failed: File too large");
        EXPECT_EQ(readFile(out), before) << out;
    }
    EXPECT_EQ(expectError(runs.back()), (path("npy") / "X.npy").string() + ": write failed: File too large");
    EXPECT_EQ(readFile(path("npy") / "X.npy"), before);
    EXPECT_EQ(listDir().size(), kFileExports.size() + 1);  // no temporary file beside the old ones
    EXPECT_EQ(std::distance(fs::directory_iterator(path("npy")), fs::directory_iterator()), 1);
}

TEST_F(Cli, ExportOntoAFolderLeavesItIntact) {
    for (const auto& [flag, name] : kFileExports) {
        const fs::path out = path(name);
        fs::create_directories(out);
        writeFile(out / "inside.txt", "inside\n");
        const std::string line = expectError(runCli({flag, out.string()}));
        EXPECT_EQ(line, out.string() + ": is a directory, expected a file name");
        EXPECT_EQ(readFile(out / "inside.txt"), "inside\n");
        EXPECT_EQ(std::distance(fs::directory_iterator(out), fs::directory_iterator()), 1);
    }
    EXPECT_EQ(listDir().size(), kFileExports.size());  // no temporary file beside the folders
}

TEST_F(Cli, EmptyPathIsRefused) {
    for (const char* flag : {"--export", "--export-csv", "--export-heatmap", "--export-npy", "--scenario", "--screenshot"}) {
        const std::string line = expectError(runCli({flag, ""}));
        EXPECT_EQ(line, std::string(flag) + ": expected a path, got an empty one");
    }
}

}  // namespace
}  // namespace attnviz::app
