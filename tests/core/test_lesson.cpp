// Lesson files: the shipped lesson loads and every step builds; malformed lessons name the
// problem and where.
#include "core/error.hpp"
#include "core/lesson.hpp"
#include "core/model.hpp"

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
    EXPECT_EQ(lessonError(R"({"title": "t", "steps": [{"title": "s", "text": "x", "preset": "default", "check": {"question": "q", "quantity": "entropy"}}]})"),
              "l.json: steps[0].check.quantity: expected score_entries, weight or equivariance, got 'entropy'");
    EXPECT_EQ(lessonError(R"({"title": "t", "steps": [{"title": "s", "text": "x", "preset": "default", "check": {"question": "q", "quantity": "weight", "head": 1, "query": 0, "key": 1}}]})"),
              "l.json: steps[0].check.query: expected a whole number from 1 (the first), got 0");
    EXPECT_EQ(lessonError(R"({"title": "t", "steps": [{"title": "s", "text": "x", "scenario": {"heads": "two"}}]})")
                  .rfind("l.json: steps[0].scenario: heads", 0),
              0u);
    EXPECT_EQ(lessonError(R"({"title": "t", "steps": [{"title": "s", "text": 3, "preset": "default"}]})"),
              "l.json: steps[0].text: expected text or a list of lines");
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
