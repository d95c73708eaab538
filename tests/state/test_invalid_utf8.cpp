// The session with text that is not valid UTF-8: saved and restored byte for byte, and a save
// that fails, for whatever reason, says so in one line and leaves the previous file as it was.
#include "app/state/session.hpp"
#include "core/scenario/presets.hpp"
#include "tests/test_folder.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <csignal>
#include <filesystem>
#include <string>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace attnviz;
using namespace attnviz::app;

namespace {

namespace fs = std::filesystem;

class InvalidUtf8 : public testfs::TestFolder {
protected:
    std::string sessionFile() const { return path("config/attnviz/session.json").string(); }
    static Session session(const std::string& sentence, const std::string& name = "\xff name") {
        Session s;
        s.scenario = core::loadPreset("default");
        s.scenario.tokens.reset();
        s.scenario.sentence = sentence;
        s.scenario.name = name;
        s.presetId = "default";
        return s;
    }
};

TEST_F(InvalidUtf8, SessionRoundTripKeepsTheExactBytes) {
    const Session s = session("caf\xc3 \xff\xfe the end");
    ASSERT_EQ(trySaveSession(sessionFile(), s), "");
    const std::string text = testfs::readFile(sessionFile());
    EXPECT_NO_THROW(nlohmann::json::parse(text));  // valid UTF-8
    const std::optional<Session> back = loadSession(sessionFile());
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(back->scenario.sentence, s.scenario.sentence);
    EXPECT_EQ(back->scenario.name, s.scenario.name);
    EXPECT_EQ(back->presetId, "default");

    // A model folder whose name holds 0xFF comes back too: the session reopens the same folder.
    Session m = s;
    m.scenario = core::Scenario{};
    m.scenario.model = path("tiny\xff").string();
    m.scenario.sentence = "\xff";
    m.scenario.causal = true;
    ASSERT_EQ(trySaveSession(sessionFile(), m), "");
    EXPECT_EQ(loadSession(sessionFile())->scenario.model, m.scenario.model);
    EXPECT_EQ(loadSession(sessionFile())->scenario.sentence, m.scenario.sentence);
}

// Past the file size limit the write fails (SIGXFSZ is ignored while writing): the save returns
// one line, throws nothing, and the session saved before is intact. In a child process, whose
// limit does not reach the other tests.
TEST_F(InvalidUtf8, FailedSaveReportsAndKeepsTheOldFile) {
    ASSERT_EQ(trySaveSession(sessionFile(), session("old", "old")), "");
    const std::string old = testfs::readFile(sessionFile());
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        testfs::limitFileSize(64);
        try {
            const std::string line = trySaveSession(sessionFile(), session("new \xff\xfe"));
            ::_exit(!line.empty() && line.find('\n') == std::string::npos && line.find("File too large") != std::string::npos ? 3 : 4);
        } catch (...) {
            ::_exit(5);  // what the app's exit would abort on
        }
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 3) << status;
    EXPECT_EQ(testfs::readFile(sessionFile()), old);
    EXPECT_EQ(listDir(), std::vector<fs::path>{"config"});
    EXPECT_EQ(std::distance(fs::directory_iterator(path("config/attnviz")), fs::directory_iterator()), 1);  // no temporary left
}

// A session path that is a folder, or under a file: an error line, nothing thrown, nothing changed.
TEST_F(InvalidUtf8, SaveToAPathThatCannotBeAFileReports) {
    ASSERT_TRUE(fs::create_directories(path("folder")));
    std::string line;
    EXPECT_NO_THROW(line = trySaveSession(path("folder").string(), session("\xff")));
    EXPECT_NE(line, "");
    EXPECT_TRUE(fs::is_directory(path("folder")));
    testfs::writeFile(path("file"), "kept");
    EXPECT_NO_THROW(line = trySaveSession(path("file/session.json").string(), session("\xff")));
    EXPECT_NE(line.find("cannot create the folder"), std::string::npos) << line;
    EXPECT_EQ(testfs::readFile(path("file")), "kept");
}

}  // namespace
