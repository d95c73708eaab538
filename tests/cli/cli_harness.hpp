// Shared by the command-line tests: runMain in-process with a fake GUI launcher that records
// the request, the one-line error check, and a fixture with a fresh folder per test.
#pragma once

#include "app/cli.hpp"
#include "core/io/npy.hpp"
#include "tests/test_folder.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

namespace attnviz::app::clitest {

namespace fs = std::filesystem;

// The result of one runMain call.
struct CliRun {
    int code = -1;
    std::string out, err;
    int guiCalls = 0;
    GuiRequest request;  // the last request the fake launcher saw
};

inline CliRun runCli(const std::vector<std::string>& args) {
    std::vector<const char*> argv{"attnviz"};
    for (const auto& a : args) argv.push_back(a.c_str());
    CliRun run;
    std::ostringstream out, err;
    const GuiLauncher gui = [&run](const GuiRequest& request) {
        ++run.guiCalls;
        run.request = request;
        return 0;
    };
    run.code = runMain(static_cast<int>(argv.size()), argv.data(), gui, out, err);
    run.out = out.str();
    run.err = err.str();
    return run;
}

using attnviz::testfs::readFile;
using attnviz::testfs::writeFile;

inline std::vector<std::string> splitLines(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

// An error run: exit 2, nothing on out, no window, and err exactly one line with the prefix.
// Returns the line without "attnviz: error: " and the newline.
inline std::string expectError(const CliRun& run) {
    EXPECT_EQ(run.code, 2);
    EXPECT_EQ(run.guiCalls, 0);
    EXPECT_EQ(run.out, "");
    const std::string prefix = "attnviz: error: ";
    EXPECT_EQ(run.err.rfind(prefix, 0), 0u) << run.err;
    EXPECT_FALSE(run.err.empty());
    if (run.err.empty()) return {};
    EXPECT_EQ(run.err.back(), '\n') << run.err;
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
    if (run.err.size() < prefix.size() + 1) return {};
    return run.err.substr(prefix.size(), run.err.size() - prefix.size() - 1);
}

// A [2, 2, 3, 3] file of causal maps as numpy writes it: head 0 uniform over the keys it may read,
// head 1 on the previous key.
inline void writeSmallImport(const fs::path& file) {
    std::string f = core::npyHeader({2, 2, 3, 3});
    const float v[] = {1, 0, 0, 0.5f, 0.5f, 0, 1 / 3.0f, 1 / 3.0f, 1 / 3.0f, 1, 0, 0, 1, 0, 0, 0, 1, 0,
                       1, 0, 0, 0.5f, 0.5f, 0, 1 / 3.0f, 1 / 3.0f, 1 / 3.0f, 1, 0, 0, 1, 0, 0, 0, 1, 0};
    f.append(reinterpret_cast<const char*>(v), sizeof v);
    writeFile(file, f);
}

// Each test gets its own fresh folder (see tests/test_folder.hpp).
using Cli = attnviz::testfs::TestFolder;

}  // namespace attnviz::app::clitest
