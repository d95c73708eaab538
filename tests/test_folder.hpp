// A fresh folder for each test under the system temp folder, removed afterwards, and the file
// helpers the tests of writes and reads share.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <csignal>

#include <sys/resource.h>
#include <unistd.h>

namespace attnviz::testfs {

namespace fs = std::filesystem;

inline std::string readFile(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void writeFile(const fs::path& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary);
    out << text;
}

// In a forked child: no file it writes may grow past `bytes` (the write that would fails, and
// SIGXFSZ is left to the code under test to ignore while it writes).
inline void limitFileSize(rlim_t bytes) {
    std::signal(SIGXFSZ, SIG_DFL);
    rlimit limit{};
    ::getrlimit(RLIMIT_FSIZE, &limit);
    limit.rlim_cur = bytes;
    ::setrlimit(RLIMIT_FSIZE, &limit);
}

class TestFolder : public ::testing::Test {
protected:
    void SetUp() override {
        static std::atomic<int> counter{0};
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        m_dir = fs::temp_directory_path() /
                ("attnviz-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + "-" + info->name());
        fs::remove_all(m_dir);
        ASSERT_TRUE(fs::create_directories(m_dir));
    }
    void TearDown() override {
        std::error_code ec;
        fs::remove_all(m_dir, ec);
    }
    fs::path path(const std::string& name) const { return m_dir / name; }
    // The names in the folder, sorted.
    std::vector<fs::path> listDir() const {
        std::vector<fs::path> entries;
        for (const auto& e : fs::directory_iterator(m_dir)) entries.push_back(e.path().filename());
        std::sort(entries.begin(), entries.end());
        return entries;
    }

    fs::path m_dir;
};

}  // namespace attnviz::testfs
