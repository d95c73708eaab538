// The saved session: what it keeps, and sessions written before a field existed.
#include "app/state/actions.hpp"
#include "app/state/launch.hpp"
#include "app/state/session.hpp"
#include "core/base/error.hpp"
#include "core/scenario/presets.hpp"
#include "tests/test_folder.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include <sys/stat.h>
#include <unistd.h>

using namespace attnviz;
using namespace attnviz::app;

TEST(Session, KeepsTheViewAndTheLab) {
    Session s;
    s.scenario = core::loadPreset("default");
    s.presetId = "default";
    s.view.theme = Theme::Light;
    s.view.selectedHead = 2;
    s.view.lab = Lab::Cost;
    s.windowWidth = 1280;
    const Session back = decodeSession(encodeSession(s), "session.json");
    EXPECT_EQ(back.presetId, "default");
    EXPECT_EQ(back.view.theme, Theme::Light);
    EXPECT_EQ(back.view.selectedHead, 2);
    EXPECT_EQ(back.view.lab, Lab::Cost);
    EXPECT_EQ(back.windowWidth, 1280);
}

TEST(Session, OneWrittenBeforeTheLabsOpensWithoutOne) {
    Session s;
    s.scenario = core::loadPreset("default");
    s.view.lab = Lab::Linear;
    nlohmann::json j = nlohmann::json::parse(encodeSession(s));
    j["view"].erase("lab");
    EXPECT_EQ(decodeSession(j.dump(), "session.json").view.lab, Lab::None);
    j["view"]["lab"] = 77;                                                    // out of range: clamped, never an invalid enum
    EXPECT_EQ(decodeSession(j.dump(), "session.json").view.lab, Lab::Train);  // the last lab
}

// ---- The session file: never destroy what could not be read ----

namespace {

namespace fs = std::filesystem;

class SessionFile : public attnviz::testfs::TestFolder {
protected:
    std::string path() const { return TestFolder::path("session.json").string(); }
    static std::string read(const std::string& p) { return attnviz::testfs::readFile(p); }
    static void write(const std::string& p, const std::string& text) { attnviz::testfs::writeFile(p, text); }
};

Session defaultSession() {
    Session s;
    s.scenario = core::loadPreset("default");
    s.presetId = "default";
    return s;
}

}  // namespace

// A broken file, or one from another version, is kept aside with a note naming it; the session
// saved at exit then writes a new file beside it instead of over it.
TEST_F(SessionFile, BrokenOrNewerIsKeptAsideNotOverwritten) {
    nlohmann::json newer = nlohmann::json::parse(encodeSession(defaultSession()));
    newer["version"] = kSessionVersion + 1;
    for (const std::string& text : {std::string("{\"version\": 1, \"scenario\": "), newer.dump(), std::string("\xff\xfe")}) {
        write(path(), text);
        const RestoredSession r = restoreSession(path());
        EXPECT_FALSE(r.session.has_value());
        EXPECT_NE(r.notice.find("the file is kept as " + path() + ".broken"), std::string::npos) << r.notice;
        EXPECT_EQ(r.notice.rfind("Ignored the saved session: " + path() + ": ", 0), 0u) << r.notice;
        EXPECT_EQ(read(path() + ".broken"), text);
        EXPECT_FALSE(fs::exists(path()));
        saveSession(path(), defaultSession());
        EXPECT_EQ(read(path() + ".broken"), text);  // the save at exit did not touch it
        fs::remove(path());
    }
    // none at all: nothing to say
    const RestoredSession none = restoreSession(path());
    EXPECT_FALSE(none.session.has_value());
    EXPECT_EQ(none.notice, "");
}

// A FIFO at the session path is reported at once, never opened (a read would wait for a
// writer, and the save at exit for a reader); it stays where it is.
TEST_F(SessionFile, FifoIsReportedWithoutBlocking) {
    ASSERT_EQ(::mkfifo(path().c_str(), 0600), 0);
    const RestoredSession r = restoreSession(path());
    EXPECT_FALSE(r.session.has_value());
    EXPECT_EQ(r.notice, "Ignored the saved session: " + path() + ": is not a regular file");
    EXPECT_TRUE(fs::is_fifo(path()));
    EXPECT_THROW(saveSession(path(), defaultSession()), core::InputError);
    EXPECT_TRUE(fs::is_fifo(path()));
}

// A saved scenario that no longer builds (here: over --max-tokens) does not stop the start: the
// app starts on what was asked for, and the note names the file and --fresh.
TEST_F(SessionFile, SavedScenarioThatNoLongerBuildsStartsOnTheRequest) {
    saveSession(path(), defaultSession());  // six tokens
    const RestoredSession r = restoreSession(path());
    ASSERT_TRUE(r.session.has_value());
    core::Scenario requested = core::loadPreset("seed003-exam");  // two queries
    core::Limits limits;
    limits.maxTokens = 3;
    std::string notice;
    const AppState state = startingState(requested, "seed003-exam", r, false, limits, path(), notice);
    EXPECT_EQ(state.presetId, "seed003-exam");
    EXPECT_EQ(state.model.tq(), 2);
    EXPECT_NE(notice.find("--fresh"), std::string::npos) << notice;
    EXPECT_NE(notice.find(path() + ".broken"), std::string::npos) << notice;
    EXPECT_TRUE(fs::exists(path() + ".broken"));
    // the session's scenario when it builds, and the request's when the command line named one
    std::string quiet;
    EXPECT_EQ(startingState(requested, "seed003-exam", RestoredSession{defaultSession(), ""}, false, {}, path(), quiet).presetId,
              "default");
    EXPECT_EQ(quiet, "");
    EXPECT_EQ(startingState(requested, "seed003-exam", RestoredSession{defaultSession(), ""}, true, {}, path(), quiet).presetId,
              "seed003-exam");
    // an error in the request itself is the caller's to report
    EXPECT_THROW(startingState(core::loadPreset("default"), "default", r, false, limits, path(), quiet), core::InputError);
}

// fuzz_session: a view or window number past int (1e10) was converted with get<int>(), which is
// undefined; a version past int wrapped to 1. Each is clamped, or refused when not whole.
TEST(Session, NumbersPastIntAreClampedNotWrapped) {
    const nlohmann::json base = nlohmann::json::parse(encodeSession(defaultSession()));
    for (const char* field : {"theme", "head", "query", "stage", "lab"}) {
        nlohmann::json j = base;
        j["view"][field] = 1e10;
        EXPECT_NO_THROW(decodeSession(j.dump(), "s.json")) << field;
        j["view"][field] = 1.5;
        EXPECT_THROW(decodeSession(j.dump(), "s.json"), core::InputError) << field;
    }
    nlohmann::json j = base;
    j["window"]["width"] = 1e10;
    j["window"]["height"] = -1e300;
    j["view"]["ui_scale"] = 1e300;
    const Session s = decodeSession(j.dump(), "s.json");
    EXPECT_EQ(s.windowWidth, 16384);
    EXPECT_EQ(s.windowHeight, 240);
    EXPECT_EQ(s.view.uiScale, kMaxUiScale);
    j = base;
    j["view"]["stage"] = 4294967297LL;  // 2^32 + 1: wrapped to 1 as an int
    EXPECT_EQ(decodeSession(j.dump(), "s.json").view.stage, kStageCount - 1);
    j = base;
    j["version"] = 4294967297LL;
    EXPECT_THROW(decodeSession(j.dump(), "s.json"), core::InputError);
}

TEST(RequestedView, SetsWhatTheRequestNamesAndKeepsTheRest) {
    ViewState saved;
    saved.theme = Theme::Light;
    saved.uiScale = 1.5f;
    saved.selectedHead = 2;
    GuiRequest request;
    EXPECT_EQ(requestedView(request, saved).theme, Theme::Light);
    EXPECT_FLOAT_EQ(requestedView(request, saved).uiScale, 1.5f);
    EXPECT_EQ(requestedView(request, saved).selectedHead, 2);
    request.theme = "high-contrast";
    request.uiScale = 2.0f;
    request.head = -1;
    request.lab = "cost";
    request.presenter = true;
    const ViewState view = requestedView(request, saved);
    EXPECT_EQ(view.theme, Theme::HighContrast);
    EXPECT_FLOAT_EQ(view.uiScale, 2.0f);
    EXPECT_EQ(view.selectedHead, -1);
    EXPECT_EQ(view.lab, Lab::Cost);
    EXPECT_TRUE(view.presenter);
    request.stage = 7;
    request.smallMultiples = true;
    EXPECT_EQ(requestedView(request, saved).stage, 7);
    EXPECT_TRUE(requestedView(request, saved).smallMultiples);
}

// The rest of a request goes through the action layer once the state is built: the query
// (checked against the sentence), the lesson at its step, and a lab's run.
TEST(StartRequested, SelectsOpensAndStartsWhatTheRequestAsks) {
    GuiRequest request;
    request.query = 4;
    AppState s = makeState(core::loadPreset("default"));
    EXPECT_EQ(startRequested(s, request), "");
    EXPECT_EQ(s.view.selectedQuery, 4);
    request.query = 6;  // "The cat sat on the mat": 6 queries
    EXPECT_EQ(startRequested(s, request), "--query: expected 0 to 5 (6 queries), got 6");

    GuiRequest lesson;
    lesson.lesson = core::loadLesson("attention");
    lesson.lessonStep = 4;
    AppState l = makeState(core::loadPreset("default"));
    EXPECT_EQ(startRequested(l, lesson), "");
    ASSERT_TRUE(l.lesson);
    EXPECT_EQ(l.lesson->step, 4);
    EXPECT_EQ(l.scenario.name, lesson.lesson->steps[4].scenario.name);

    GuiRequest train;
    train.trainSteps = 20;
    AppState t = makeState(core::loadPreset("default"));
    EXPECT_EQ(startRequested(t, train), "");
    while (labsRunning(t)) std::this_thread::yield();
    const TrainSnapshot done = trainSnapshot(t);
    ASSERT_EQ(done.runs.size(), 2u);
    EXPECT_EQ(done.runs[0].losses.size(), 20u);
}
