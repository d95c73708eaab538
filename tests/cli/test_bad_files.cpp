// Files the command line cannot write or read. Outputs: a parent that is a regular file, a folder
// inside /proc, a write that fails halfway (a file-size limit, as a full disk), a folder in the
// way, an empty path, and outputs that are a pipe, a device or a link. Inputs: Latin-1 and UTF-16
// text, a byte order mark, named and anonymous pipes, a file whose read fails. Each is one error
// line with exit code 2 or a clean result: never a crash or a hang, and never a partial file, a
// temporary file left behind, or a damaged old file or device.
#include "cli_harness.hpp"

#include "core/text/tokenizer.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <csignal>
#include <iterator>
#include <sstream>
#include <streambuf>
#include <string>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

namespace attnviz::app {
namespace {

using namespace clitest;

// Every file export, each with the name of a file it could write.
const std::vector<std::pair<std::string, std::string>> kFileExports = {{"--export", "out.json"},
                                                                       {"--export-csv", "out.csv"},
                                                                       {"--export-heatmap", "out.png"},
                                                                       {"--export-heatmap", "out.svg"},
                                                                       {"--export-bars", "bars.svg"},
                                                                       {"--export-bars", "bars.png"},
                                                                       {"--export-heads", "heads.png"},
                                                                       {"--export-heads", "heads.svg"},
                                                                       {"--export-model-view", "model.png"},
                                                                       {"--export-model-view", "model.svg"}};

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

// Several outputs are all or nothing: each is checked before any is written, and a failure in
// one leaves every old file as it was. Before, `--export a.json --export-heatmap a.jpg`
// replaced a.json and only then refused the .jpg.
TEST_F(Cli, WritesSeveralOutputsAllOrNothing) {
    const std::string before = "old\n";
    writeFile(path("a.json"), before);
    EXPECT_EQ(expectError(runCli({"--export", path("a.json").string(), "--export-heatmap", path("a.jpg").string()})),
              path("a.jpg").string() + ": unknown image type; use .png or .svg");
    EXPECT_EQ(readFile(path("a.json")), before);
    const std::string missing = (path("missing") / "w.csv").string();
    EXPECT_EQ(expectError(runCli({"--export", path("a.json").string(), "--export-csv", missing})),
              missing + ": folder " + path("missing").string() + " does not exist");
    EXPECT_EQ(readFile(path("a.json")), before);
    EXPECT_EQ(listDir(), std::vector<fs::path>{"a.json"});
    // the same file twice, or standard output twice, is refused before anything is done
    EXPECT_EQ(expectError(runCli({"--export", path("a.json").string(), "--export-csv", path("a.json").string()})),
              "--export-csv: the same file as --export");
    EXPECT_EQ(expectError(runCli({"--export", "-", "--export-csv", "-"})), "--export-csv: standard output is already taken by --export");
}

// A folder of .npy files is replaced as a whole: a file that cannot be written leaves every old
// file; an export without X (explicit Q, K, V) removes the X.npy of an earlier one.
TEST_F(Cli, WritesNpyFolderAllOrNothingAndNeverMixed) {
    const fs::path dir = path("npy");
    ASSERT_EQ(runCli({"--preset", "default", "--export-npy", dir.string()}).code, 0);
    const std::string oldQ = readFile(dir / "Q.npy"), oldX = readFile(dir / "X.npy");
    fs::remove(dir / "weights.npy");
    fs::create_directory(dir / "weights.npy");  // in the way
    EXPECT_EQ(expectError(runCli({"--preset", "random-heads", "--export-npy", dir.string()})),
              (dir / "weights.npy").string() + ": is a directory, expected a file name");
    EXPECT_EQ(readFile(dir / "Q.npy"), oldQ);
    EXPECT_EQ(readFile(dir / "X.npy"), oldX);
    fs::remove(dir / "weights.npy");
    EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 9);  // no temporary
    ASSERT_EQ(runCli({"--preset", "seed003-exam", "--export-npy", dir.string()}).code, 0);
    EXPECT_FALSE(fs::exists(dir / "X.npy"));
    EXPECT_TRUE(fs::exists(dir / "weights.npy"));
    EXPECT_NE(readFile(dir / "Q.npy"), oldQ);
}

// Standard output that cannot take the data (a full disk, a closed descriptor, a reader gone)
// is exit 2, not a silent 0 with the data lost.
TEST_F(Cli, ExportToAFailingStandardOutputIsAnError) {
    struct Full : std::streambuf {
        int overflow(int) override { return traits_type::eof(); }
        std::streamsize xsputn(const char*, std::streamsize) override { return 0; }
    } full;
    std::ostream out(&full);
    std::ostringstream err;
    std::vector<const char*> argv{"attnviz", "--export", "-"};
    const int code = runMain(
        static_cast<int>(argv.size()), argv.data(), [](const GuiRequest&) { return 0; }, out, err);
    EXPECT_EQ(code, 2);
    EXPECT_EQ(err.str(), "attnviz: error: standard output: write failed (closed, full, or nothing reading it)\n");
}

TEST_F(Cli, ExportOverTheScenarioBeingReadIsRefused) {
    const std::string scenario = R"({"sentence": "the cat sat"})";
    writeFile(path("s.json"), scenario);
    for (const char* flag : {"--export", "--export-csv", "--export-heatmap"}) {
        const std::string line = expectError(runCli({"--scenario", path("s.json").string(), flag, path("s.json").string()}));
        EXPECT_EQ(line, std::string(flag) + " " + path("s.json").string() + ": is the scenario being read; write elsewhere");
    }
    EXPECT_EQ(readFile(path("s.json")), scenario);
}

TEST_F(Cli, ExportToANamedPipeWithoutAReaderIsAnErrorNotAHang) {
    const fs::path fifo = path("out.fifo");
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    EXPECT_EQ(expectError(runCli({"--export", fifo.string()})), fifo.string() + ": a named pipe that nothing reads from");
    EXPECT_TRUE(fs::is_fifo(fifo));
}

TEST_F(Cli, ExportToTheLongestLegalFileName) {
    const fs::path out = path(std::string(250, 'n') + ".json");
    const CliRun run = runCli({"--export", out.string()});
    ASSERT_EQ(run.code, 0) << run.err;
    EXPECT_EQ(readFile(out), runCli({"--export", "-"}).out);
    EXPECT_EQ(listDir().size(), 1u);
}

// Memory that runs out past the estimate (another process took it, a ulimit) is exit 2 with
// what was being done, not an abort: 300,000 tokens with --max-memory raised to 1 PiB ask for a
// 360 GB score matrix, which no allocator of this machine gives.
TEST_F(Cli, OutOfMemoryIsExitTwoWithWhatWasBeingDone) {
    const CliRun run = runCli({"--length", "300000", "--heads", "1", "--d-model", "1", "--max-tokens", "1000000", "--max-memory",
                               "1073741824", "--export", path("o.json").string()});
    EXPECT_EQ(expectError(run).rfind("out of memory while computing the forward pass (", 0), 0u) << run.err;
    EXPECT_FALSE(fs::exists(path("o.json")));
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

// Outputs that exist but are not regular files are written through, never replaced by one: run
// as root, --export /dev/null must not turn the device into a file.
TEST_F(Cli, ExportToANamedPipeWritesThroughIt) {
    const fs::path fifo = path("out.fifo");
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    // The read end is open before the export, so the export's open does not wait; the JSON is
    // smaller than the pipe's buffer, so its write does not either.
    const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
    ASSERT_GE(reader, 0);
    const CliRun run = runCli({"--preset", "seed000-three-tokens", "--export", fifo.string()});
    std::string received;
    char buffer[4096];
    for (ssize_t n; (n = ::read(reader, buffer, sizeof buffer)) > 0;) received.append(buffer, static_cast<std::size_t>(n));
    ::close(reader);
    EXPECT_EQ(run.code, 0) << run.err;
    EXPECT_EQ(received, runCli({"--preset", "seed000-three-tokens", "--export", "-"}).out);
    EXPECT_TRUE(fs::is_fifo(fifo));
    EXPECT_EQ(listDir(), std::vector<fs::path>{"out.fifo"});
}

TEST_F(Cli, ExportToADeviceKeepsTheDevice) {
    const fs::path device = path("null");
    if (::mknod(device.c_str(), S_IFCHR | 0600, makedev(1, 3)) != 0) GTEST_SKIP() << "cannot create a device node here";
    const int probe = ::open(device.c_str(), O_WRONLY);
    if (probe < 0) GTEST_SKIP() << "device nodes cannot be opened here (nodev)";
    ::close(probe);
    for (const char* flag : {"--export", "--export-csv"}) {
        const CliRun run = runCli({flag, device.string()});
        EXPECT_EQ(run.code, 0) << flag << ": " << run.err;
        EXPECT_TRUE(fs::is_character_file(device)) << flag;
    }
    EXPECT_EQ(listDir(), std::vector<fs::path>{"null"});
}

TEST_F(Cli, ExportThroughASymbolicLinkKeepsTheLink) {
    writeFile(path("real.json"), "{}\n");
    fs::create_symlink("real.json", path("link.json"));
    const CliRun run = runCli({"--preset", "seed000-three-tokens", "--export", path("link.json").string()});
    ASSERT_EQ(run.code, 0) << run.err;
    EXPECT_TRUE(fs::is_symlink(path("link.json")));
    EXPECT_EQ(fs::read_symlink(path("link.json")), "real.json");
    EXPECT_EQ(readFile(path("real.json")), runCli({"--preset", "seed000-three-tokens", "--export", "-"}).out);
    EXPECT_EQ(listDir().size(), 2u);
}

TEST_F(Cli, EmptyPathIsRefused) {
    for (const char* flag : {"--export", "--export-csv", "--export-heatmap", "--export-npy", "--scenario", "--screenshot"}) {
        const std::string line = expectError(runCli({flag, ""}));
        EXPECT_EQ(line, std::string(flag) + ": expected a path, got an empty one");
    }
}

// ---- the command line: values read whole, conflicts refused -------------------------------

// An empty list item made the parser take the next two arguments as tokens: `--tokens ,
// --export o.json` opened the window on the tokens "--export", "o.json" and never returned.
TEST_F(Cli, CommandLineEmptyListItemsAreErrors) {
    const std::string out = path("o.json").string();
    for (const char* list : {",", ",,,", "a,,b", "a,", ",a", "a, ,b"}) {
        SCOPED_TRACE(list);
        const std::string line = expectError(runCli({"--tokens", list, "--export", out}));
        EXPECT_EQ(line.rfind("--tokens: token ", 0), 0u) << line;
        EXPECT_NE(line.find(" is empty"), std::string::npos) << line;
        EXPECT_FALSE(fs::exists(out));
    }
    const CliRun ok = runCli({"--tokens", "a,b,c", "--export", "-"});
    ASSERT_EQ(ok.code, 0) << ok.err;
    EXPECT_EQ(nlohmann::json::parse(ok.out)["tokens"].get<std::vector<std::string>>(), (std::vector<std::string>{"a", "b", "c"}));
}

TEST_F(Cli, CommandLineConflictingFlagsAreRefused) {
    EXPECT_EQ(expectError(runCli({"--tokens", "a,b", "--sentence", "c d"})), "--tokens: give either --sentence or --tokens, not both");
    const std::string shot = expectError(runCli({"--export", path("o.json").string(), "--screenshot", path("s.png").string()}));
    EXPECT_EQ(shot.rfind("--screenshot: ", 0), 0u) << shot;
    EXPECT_FALSE(fs::exists(path("o.json")));
    const std::string bench = expectError(runCli({"--bench", "--export-csv", "-"}));
    EXPECT_EQ(bench.rfind("--bench: ", 0), 0u) << bench;
}

// Integers are read whole and in range: 4294967496x150 was read as 200x150, and a huge
// --max-memory wrapped to 0.
TEST_F(Cli, CommandLineIntegersRefuseOverflow) {
    EXPECT_EQ(expectError(runCli({"--size", "4294967496x150"})),
              "--size: expected WIDTHxHEIGHT between 200x150 and 16384x16384, got '4294967496x150'");
    for (const char* size : {"x", "800x", "x600", "800x600x", "+800x600", "800 x600", "-800x600"})
        EXPECT_EQ(expectError(runCli({"--size", size})).rfind("--size: ", 0), 0u) << size;
    EXPECT_EQ(runCli({"--size", "800x600"}).request.width, 800);
    EXPECT_EQ(expectError(runCli({"--max-memory", "17592186044416", "--export", "-"})),
              "--max-memory: expected a whole number from 1 to 1073741824, got '17592186044416'");
    EXPECT_EQ(expectError(runCli({"--seed", "99999999999999999999999"})).rfind("--seed: expected a whole number", 0), 0u);
    EXPECT_EQ(expectError(runCli({"--seed", "-1"})).rfind("--seed: ", 0), 0u);
    EXPECT_EQ(runCli({"--seed", "9223372036854775807"}).request.scenario.seed, 9223372036854775807ULL);
    for (const char* flag : {"--d-model", "--heads", "--d-k", "--d-v", "--length", "--head", "--cell-size", "--max-tokens", "--max-memory"})
        EXPECT_NE(expectError(runCli({flag, "99999999999999999999", "--export", "-"})).find(flag), std::string::npos) << flag;
}

TEST_F(Cli, CommandLineEmptyValuesAreErrors) {
    for (const char* flag : {"--preset", "--sentence", "--tokenizer", "--embedding", "--positional", "--temperature", "--colormap",
                             "--theme", "--lab", "--lesson", "--panel", "--size", "--seed", "--d-model", "--swap"}) {
        const std::string line = expectError(runCli({flag, ""}));
        EXPECT_EQ(line, std::string(flag) + ": expected a value, got an empty one");
    }
}

// A flag's value is quoted clipped: a 100,000-character value gives a short line.
TEST_F(Cli, ErrorMessagesNeverEchoUnboundedInputFromFlags) {
    const std::string huge(100000, '9');
    for (const char* flag : {"--tokenizer", "--d-model", "--theme", "--swap", "--size", "--preset", "--lesson", "--seed"}) {
        const std::string line = expectError(runCli({flag, huge}));
        EXPECT_LT(line.size(), 1000u) << flag;
        EXPECT_EQ(line.rfind(flag, 0) == 0 || line.find(flag) != std::string::npos, true) << line.substr(0, 200);
    }
}

// ---- inputs -----------------------------------------------------------------------------

TEST_F(Cli, Latin1ScenarioNamesTheByteAndItsPlace) {
    const fs::path file = path("latin1.json");
    writeFile(file, "{\n  \"sentence\": \"caf\xE9 au lait\"\n}\n");
    const CliRun run = runCli({"--scenario", file.string(), "--export", "-"});
    EXPECT_EQ(expectError(run), file.string() + ": not UTF-8 text: byte 0xE9 at line 2, column 19; save the file as UTF-8");
    EXPECT_EQ(core::sanitizeUtf8(run.err), run.err);  // the message itself is clean UTF-8
}

TEST_F(Cli, Utf16ScenarioIsRefused) {
    const fs::path file = path("utf16.json");
    writeFile(file, std::string("\xFF\xFE{\0}\0", 6));
    EXPECT_EQ(expectError(runCli({"--scenario", file.string()})),
              file.string() + ": not UTF-8 text: byte 0xFF at line 1, column 1; save the file as UTF-8");
}

TEST_F(Cli, ReplacementCharacterInAScenarioIsText) {
    const fs::path file = path("replacement.json");
    writeFile(file, "{\"sentence\": \"a \xEF\xBF\xBD b\"}");
    const CliRun run = runCli({"--scenario", file.string(), "--export", "-"});
    ASSERT_EQ(run.code, 0) << run.err;
    EXPECT_EQ(nlohmann::json::parse(run.out)["tokens"].get<std::vector<std::string>>(),
              (std::vector<std::string>{"a", "\xEF\xBF\xBD", "b"}));
}

TEST_F(Cli, ByteOrderMarkIsSkipped) {
    const std::string scenario = R"({"sentence": "the cat sat", "d_model": 4, "heads": 2})";
    writeFile(path("plain.json"), scenario);
    writeFile(path("bom.json"), "\xEF\xBB\xBF" + scenario);
    const CliRun plain = runCli({"--scenario", path("plain.json").string(), "--export", "-"});
    const CliRun bom = runCli({"--scenario", path("bom.json").string(), "--export", "-"});
    ASSERT_EQ(bom.code, 0) << bom.err;
    ASSERT_EQ(plain.code, 0) << plain.err;
    EXPECT_EQ(bom.out, plain.out);
    EXPECT_EQ(nlohmann::json::parse(bom.out)["tokens"].get<std::vector<std::string>>(), (std::vector<std::string>{"the", "cat", "sat"}));
}

// A named pipe nothing writes to: an error at once, not a wait for a writer that never comes.
TEST_F(Cli, NamedPipeWithoutAWriterIsAnErrorNotAHang) {
    const fs::path fifo = path("scenario.fifo");
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    // Nothing here times the call: had it waited for a writer, it would wait for ever, and the
    // test's own time limit (ctest) would fail it.
    const std::string line = expectError(runCli({"--scenario", fifo.string()}));
    EXPECT_EQ(line.rfind(fifo.string() + ": malformed JSON at line 1, column 1: ", 0), 0u) << line;
}

// An anonymous pipe that holds a scenario, as `--scenario <(generate)` passes one.
TEST_F(Cli, ScenarioFromAPipeIsRead) {
    int ends[2];
    ASSERT_EQ(::pipe(ends), 0);
    const std::string scenario = R"({"tokens": ["p", "q", "r"], "d_model": 2})";
    ASSERT_EQ(::write(ends[1], scenario.data(), scenario.size()), static_cast<ssize_t>(scenario.size()));
    ::close(ends[1]);
    const CliRun run = runCli({"--scenario", "/dev/fd/" + std::to_string(ends[0])});
    ::close(ends[0]);
    EXPECT_EQ(run.code, 0) << run.err;
    ASSERT_TRUE(run.request.scenario.tokens.has_value());
    EXPECT_EQ(*run.request.scenario.tokens, (std::vector<std::string>{"p", "q", "r"}));
}

// /proc/self/mem opens but its first page is unmapped: reading fails with EIO.
TEST_F(Cli, ReadErrorIsNamed) {
    EXPECT_EQ(expectError(runCli({"--scenario", "/proc/self/mem"})), "/proc/self/mem: read failed: Input/output error");
}

TEST_F(Cli, EndlessFileIsRefusedAtTheSizeLimit) {
    EXPECT_EQ(expectError(runCli({"--scenario", "/dev/zero"})),
              "/dev/zero: larger than 256 MiB, the most a scenario file may be (is it the right file?)");
}

}  // namespace
}  // namespace attnviz::app
