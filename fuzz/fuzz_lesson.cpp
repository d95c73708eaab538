// libFuzzer target: bytes as a lesson file (docs/lessons.md), through parseLesson and then
// buildModel for every step, as opening the lesson and paging through it does.
// Expected outcomes: the lesson loads, or core::InputError refuses it with one bounded line of
// valid UTF-8. A loaded lesson has at least one step; every step has a title, at least one line
// of text, at most 4 known panels with none twice, a lab and a head in range, a quick check in
// range, and a scenario that builds or is refused with an InputError.
#include "core/base/error.hpp"
#include "core/io/lesson.hpp"
#include "core/scenario/model.hpp"
#include "fuzz/check.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

namespace {

using namespace attnviz::core;
using attnviz::fuzz::check;
using attnviz::fuzz::isValidUtf8;

// As fuzz_scenario: a step costs at most a few MiB and milliseconds.
constexpr Limits kLimits{64, 4096, 4ULL << 20};
// InputError's place (240) and text (400) after clipping, "…" and "… (N bytes)", and ": ".
constexpr std::size_t kMaxMessage = 700;

void checkMessage(const InputError& e) {
    const std::string m = e.message();
    check(!m.empty(), "an InputError without a message");
    check(m.size() <= kMaxMessage, "error message longer than 700 bytes", std::to_string(m.size()));
    check(isValidUtf8(m), "error message is not valid UTF-8");
    check(m.find_first_of("\n\r") == std::string::npos, "error message is more than one line", m);
}

void checkStep(const LessonStep& step, std::size_t i) {
    const std::string at = "steps[" + std::to_string(i) + "]";
    check(!step.title.empty(), "a step without a title", at);
    check(!step.text.empty(), "a step without text", at);
    check(step.panels.size() <= 4, "more than 4 panels", at);
    const auto& known = lessonPanelIds();
    for (const std::string& id : step.panels) {
        check(std::find(known.begin(), known.end(), id) != known.end(), "unknown panel", at);
        check(std::count(step.panels.begin(), step.panels.end(), id) == 1, "a panel twice", at + ": " + id);
    }
    check(step.lab.empty() || step.lab == "linear" || step.lab == "cost" || step.lab == "train", "unknown lab", at);
    check(!step.head || (*step.head >= -1 && *step.head < 4096), "head outside -1 (the mean) … 4095", at);
    if (step.check) {
        const QuickCheck& c = *step.check;
        check(c.head >= 1 && c.query >= 1 && c.key >= 1, "a quick check's head, query or key below 1", at);
        check(c.tolerance >= 0.0 && c.tolerance <= 1e6, "a quick check's tolerance outside [0, 1e6]", at);
    }
    // the step's scenario builds, or says why not
    try {
        const Model model = buildModel(step.scenario, true, kLimits);
        check(model.tq() >= 1 && model.tk() >= 1, "a step's model has no tokens", at);
    } catch (const InputError& e) {
        checkMessage(e);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    Lesson lesson;
    try {
        lesson = parseLesson(text, "fuzz.json");
    } catch (const InputError& e) {
        checkMessage(e);
        return 0;
    }
    check(!lesson.steps.empty(), "a lesson without steps");
    for (std::size_t i = 0; i < lesson.steps.size(); ++i) checkStep(lesson.steps[i], i);
    return 0;
}
