// Lesson files: the shipped lesson loads and every step builds; malformed lessons name the
// problem and where.
#include "core/base/error.hpp"
#include "core/io/lesson.hpp"
#include "core/scenario/model.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace attnviz::core {
namespace {

std::string lessonError(const std::string& text) {
    try {
        parseLesson(text, "l.json");
    } catch (const InputError& e) {
        return e.message();
    }
    return "(no error)";
}

TEST(Lesson, ShippedLessonFollowsTheSeedsAndEveryStepBuilds) {
    ASSERT_FALSE(lessonIds().empty());
    const Lesson lesson = loadLesson("attention");
    EXPECT_EQ(lesson.id, "attention");
    ASSERT_EQ(lesson.steps.size(), 9u);
    int checks = 0;
    for (const LessonStep& step : lesson.steps) {
        SCOPED_TRACE(step.title);
        EXPECT_FALSE(step.text.empty());
        const Model model = buildModel(step.scenario);
        buildSettings(step.scenario, model);
        checks += step.check.has_value();
    }
    EXPECT_EQ(checks, 3);  // seed 004's three quick checks
    const QuickCheck& entries = *lesson.steps[1].check;
    EXPECT_EQ(entries.quantity, CheckQuantity::ScoreEntries);
    EXPECT_EQ(buildModel(lesson.steps[1].scenario).tq(), 4);
    const QuickCheck& alpha = *lesson.steps[3].check;
    EXPECT_EQ(alpha.quantity, CheckQuantity::Weight);
    EXPECT_EQ(alpha.query, 2);
    EXPECT_EQ(alpha.key, 3);
    EXPECT_TRUE(lesson.steps[3].scenario.causal);
    EXPECT_EQ(lesson.steps[4].check->quantity, CheckQuantity::Equivariance);
    EXPECT_EQ(lesson.steps[7].lab, "linear");
    EXPECT_EQ(lesson.steps[6].head, 0);  // "head": 1 in the file
}

TEST(Lesson, MalformedLessonsSayWhatAndWhere) {
    EXPECT_EQ(lessonError("{\"title\": \"t\"}"), "l.json: missing \"steps\"");
    EXPECT_EQ(lessonError("{\"title\": \"t\", \"steps\": []}"), "l.json: steps: expected a list of at least one step");
    EXPECT_EQ(lessonError("{\"title\": \"t\",\n \"steps\": [}"), "l.json: malformed JSON at line 2, column 12");
    const std::string step = R"({"title": "s", "text": "x", "preset": "default"})";
    EXPECT_EQ(lessonError(R"({"title": "t", "steps": [)" + step + R"(, {"title": "s", "text": "x", "preset": "nope"}]})")
                  .rfind("l.json: steps[1].preset: unknown preset 'nope' (known: ", 0),
              0u);
    EXPECT_EQ(lessonError(R"({"title": "t", "steps": [{"title": "s", "text": "x"}]})"),
              "l.json: steps[0]: needs exactly one of \"preset\" (a preset's name) and \"scenario\" (a scenario object)");
    EXPECT_EQ(lessonError(R"({"title": "t", "steps": [{"title": "s", "text": "x", "preset": "default", "panels": ["heatmap", "chart"]}]})")
                  .rfind("l.json: steps[0].panels[1]: unknown panel 'chart' (known: heatmap, ", 0),
              0u);
    EXPECT_EQ(
        lessonError(
            R"({"title": "t", "steps": [{"title": "s", "text": "x", "preset": "default", "check": {"question": "q", "quantity": "entropy"}}]})"),
        "l.json: steps[0].check.quantity: expected score_entries, weight or equivariance, got 'entropy'");
    EXPECT_EQ(
        lessonError(
            R"({"title": "t", "steps": [{"title": "s", "text": "x", "preset": "default", "check": {"question": "q", "quantity": "weight", "head": 1, "query": 0, "key": 1}}]})"),
        "l.json: steps[0].check.query: expected a whole number from 1 (the first), got 0");
    EXPECT_EQ(lessonError(R"({"title": "t", "steps": [{"title": "s", "text": "x", "scenario": {"heads": "two"}}]})")
                  .rfind("l.json: steps[0].scenario: heads", 0),
              0u);
    EXPECT_EQ(lessonError(R"({"title": "t", "steps": [{"title": "s", "text": 3, "preset": "default"}]})"),
              "l.json: steps[0].text: expected text or a list of lines");
}

// Error messages never echo unbounded input: a bad value is described by its type and size.
// Before, the message held the value's dump(), which recursed 60,000 levels into a crash and
// wrote a million-element value out whole.
TEST(ErrorMessagesNeverEchoUnboundedInput, DeepAndHugeLessonValues) {
    const auto withHead = [](const std::string& head) {
        return R"({"title": "t", "steps": [{"title": "s", "text": "x", "preset": "default", "head": )" + head + "}]}";
    };
    // nested 60,000 deep: refused while it is parsed, before any tree or message is made of it
    const std::size_t depth = 60000;
    const std::string deep = lessonError(withHead(std::string(depth, '[') + std::string(depth, ']')));
    EXPECT_EQ(deep, "l.json: nested deeper than 64 levels of objects and lists; no file attnviz reads nests so deep");
    EXPECT_EQ(lessonError(withHead("[[[1]]]")),
              "l.json: steps[0].head: expected a head number from 1, or 0 for the mean, got an array of 1 item");
    std::string huge = "[1";
    for (int i = 1; i < 1000000; ++i) huge += ",1";
    huge += "]";
    EXPECT_EQ(lessonError(withHead(huge)),
              "l.json: steps[0].head: expected a head number from 1, or 0 for the mean, got an array of 1000000 items");
    const std::string longText(100000, 'q');
    const std::string quantity = lessonError(
        R"({"title": "t", "steps": [{"title": "s", "text": "x", "preset": "default", "check": {"question": "q", "quantity": ")" + longText +
        R"("}}]})");
    EXPECT_LT(quantity.size(), 200u) << quantity.size();
    EXPECT_NE(quantity.find("got 'qqqq"), std::string::npos) << quantity;
    EXPECT_NE(quantity.find("(100000 bytes)"), std::string::npos) << quantity;
    const std::string tolerance = lessonError(
        R"({"title": "t", "steps": [{"title": "s", "text": "x", "preset": "default", "check": {"question": "q", "quantity": "score_entries", "tolerance": {"a": [1, 2]}}}]})");
    EXPECT_EQ(tolerance, "l.json: steps[0].check.tolerance: expected a number from 0 to 1e6, got an object of 1 key");
}

// Whatever a caller puts into an InputError, its line stays a few hundred bytes, cut at a
// character boundary.
TEST(ErrorMessagesNeverEchoUnboundedInput, EveryInputErrorIsBounded) {
    std::string greek;
    for (int i = 0; i < 50000; ++i) greek += "α";
    const InputError e(greek, "got " + greek);
    EXPECT_LE(e.where().size(), InputError::kMaxWhere + 8);
    EXPECT_LE(std::string(e.what()).size(), InputError::kMaxWhat + 24);
    EXPECT_NE(std::string(e.what()).find("(100004 bytes)"), std::string::npos) << e.what();
    const std::string line = e.message();
    // no α is cut in half: the line is valid UTF-8
    for (std::size_t i = 0; i < line.size();) {
        const auto c = static_cast<unsigned char>(line[i]);
        const std::size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : 4;
        ASSERT_LE(i + n, line.size());
        for (std::size_t k = 1; k < n; ++k) ASSERT_EQ(static_cast<unsigned char>(line[i + k]) & 0xC0, 0x80) << i;
        i += n;
    }
    // a long place keeps both ends: the file and the field
    const InputError nested(std::string(1000, 'd') + "/lesson.json: steps[3].check.key", "bad");
    const std::string tail = "/lesson.json: steps[3].check.key";
    EXPECT_EQ(nested.where().substr(nested.where().size() - tail.size()), tail);
    EXPECT_EQ(nested.where().substr(0, 3), "ddd");
}

// Lesson files are as strict as scenario files.
TEST(Lesson, UnknownKeysAndRepeatedPanelsAreRefused) {
    EXPECT_EQ(lessonError(R"({"title": "t", "steps": [{"title": "s", "text": "x", "preset": "default", "pannels": ["heatmap"]}]})"),
              "l.json: steps[0].pannels: unknown key (known: title, text, preset, scenario, panels, lab, head, check)");
    EXPECT_EQ(lessonError(R"({"title": "t", "stepz": [], "steps": [{"title": "s", "text": "x", "preset": "default"}]})"),
              "l.json: stepz: unknown key (known: title, steps)");
    EXPECT_EQ(
        lessonError(
            R"({"title": "t", "steps": [{"title": "s", "text": "x", "preset": "default", "check": {"question": "q", "quantity": "score_entries", "tolerence": 1}}]})"),
        "l.json: steps[0].check.tolerence: unknown key (known: question, quantity, head, query, key, tolerance)");
    EXPECT_EQ(
        lessonError(
            R"({"title": "t", "steps": [{"title": "s", "text": "x", "preset": "default", "panels": ["heatmap", "bars", "heatmap"]}]})"),
        "l.json: steps[0].panels[2]: panel 'heatmap' is already in this step's list");
}

TEST(Lesson, UnknownNameListsTheShippedLessons) {
    try {
        loadLesson("no-such-lesson");
        FAIL() << "no error";
    } catch (const InputError& e) {
        EXPECT_EQ(e.message(), "--lesson: 'no-such-lesson' is neither a lesson (attention) nor an existing file");
    }
}

TEST(Lesson, LoadsFromAFile) {
    const auto path = std::filesystem::temp_directory_path() / "attnviz-lesson-test.json";
    std::ofstream(path) << R"({"title": "Mine", "steps": [{"title": "one", "text": ["a", "b"], "scenario": {"tokens": ["x", "y"]}}]})";
    const Lesson lesson = loadLesson(path.string());
    EXPECT_EQ(lesson.title, "Mine");
    ASSERT_EQ(lesson.steps.size(), 1u);
    EXPECT_EQ(lesson.steps[0].text.size(), 2u);
    EXPECT_EQ(lesson.steps[0].scenario.tokens->size(), 2u);
    std::filesystem::remove(path);
}

}  // namespace
}  // namespace attnviz::core
