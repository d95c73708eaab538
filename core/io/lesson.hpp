// Lessons: a file of steps a lecturer walks through (presenter mode, PageUp / PageDown). Each
// step is a scenario, the panels to show, a title and a few lines of text, and optionally a
// quick check whose answer is checked against the live numbers. The format is documented in
// docs/lessons.md.
#pragma once

#include "core/scenario/scenario.hpp"

#include <optional>
#include <string>
#include <vector>

namespace attnviz::core {

// What a quick check's answer is compared with, computed from the numbers on screen.
enum class CheckQuantity {
    ScoreEntries,  // entries of Q Kᵀ: T_q x T_k
    Weight,        // α_{query, key} of a head (1-based, as the seeds write α₂,₃)
    Equivariance,  // ‖Y′ − P·Y‖ of the token-swap panel
};

struct QuickCheck {
    std::string question;
    CheckQuantity quantity = CheckQuantity::ScoreEntries;
    int head = 1, query = 1, key = 1;  // for Weight, 1-based
    double tolerance = 1e-3;           // |answer − live value| allowed
};

struct LessonStep {
    std::string title;
    std::vector<std::string> text;  // lines
    Scenario scenario;
    std::string presetId;             // when the step names a preset ("" for an inline scenario)
    std::vector<std::string> panels;  // panel ids to show; empty = the usual layout
    std::string lab;                  // "", "linear", "cost" or "train"
    std::optional<int> head;          // the head to select (1-based in the file; stored 0-based, -1 = mean)
    std::optional<QuickCheck> check;
};

struct Lesson {
    std::string id;  // file stem of a shipped lesson, or the file's path
    std::string title;
    std::vector<LessonStep> steps;
};

// The panel ids a step may name (the app's panels but its controls and the lesson strip; a test
// holds them to the app's panel table).
const std::vector<std::string>& lessonPanelIds();
// The labs a step may open (a test holds them to the app's lab table).
const std::vector<std::string>& lessonLabNames();

// Throws InputError naming the field: "steps[2].check.quantity: expected …".
Lesson parseLesson(const std::string& text, const std::string& where);

// Shipped lessons (assets/lessons/*.json), compiled in.
struct LessonSource {
    const char* id;
    const char* json;
};
const std::vector<LessonSource>& lessonSources();
std::vector<std::string> lessonIds();
// Every shipped lesson, parsed once per process (the Lessons menu lists them every frame).
const std::vector<Lesson>& lessons();
// A shipped lesson by id, or a lesson file by path. Throws InputError("--lesson", …).
Lesson loadLesson(const std::string& nameOrPath);

}  // namespace attnviz::core
