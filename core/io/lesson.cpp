#include "core/io/lesson.hpp"

#include "core/base/error.hpp"
#include "core/base/format.hpp"
#include "core/base/json_text.hpp"
#include "core/scenario/presets.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <initializer_list>

namespace attnviz::core {
namespace {

using json = nlohmann::json;

std::string lineColumnOf(const std::string& text, std::size_t byte) {
    std::size_t line = 1, column = 1;
    for (std::size_t i = 0; i < std::min(byte, text.size()); ++i) {
        if (text[i] == '\n') ++line, column = 1;
        else ++column;
    }
    return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

// Lesson files are as strict as scenario files: a key this format does not know is a mistake
// (a typo such as "panel" for "panels" would otherwise be silently ignored).
// `prefix` is the place of the object with its separator: "file.json: " or "...steps[2].".
void requireKnownKeys(const json& j, std::initializer_list<const char*> known, const std::string& prefix) {
    for (const auto& item : j.items()) {
        if (std::none_of(known.begin(), known.end(), [&](const char* k) { return item.key() == k; })) {
            std::string list;
            for (const char* k : known) list += (list.empty() ? "" : ", ") + std::string(k);
            throw InputError(prefix + item.key(), "unknown key (known: " + list + ")");
        }
    }
}

const json& member(const json& j, const char* key, const std::string& where) {
    if (!j.contains(key)) throw InputError(where, std::string("missing \"") + key + "\"");
    return j.at(key);
}

std::string stringField(const json& j, const char* key, const std::string& where) {
    const json& v = member(j, key, where);
    if (!v.is_string()) throw InputError(where + "." + key, "expected text");
    return v.get<std::string>();
}

int positiveInt(const json& j, const char* key, const std::string& where) {
    const json& v = member(j, key, where);
    if (!v.is_number_integer() || v.get<long long>() < 1 || v.get<long long>() > 1000000)
        throw InputError(where + "." + key, "expected a whole number from 1 (the first), got " + describeJson(v));
    return v.get<int>();
}

QuickCheck parseCheck(const json& j, const std::string& where) {
    if (!j.is_object()) throw InputError(where, "expected an object with \"question\" and \"quantity\"");
    requireKnownKeys(j, {"question", "quantity", "head", "query", "key", "tolerance"}, where + ".");
    QuickCheck c;
    c.question = stringField(j, "question", where);
    const std::string quantity = stringField(j, "quantity", where);
    if (quantity == "score_entries") {
        c.quantity = CheckQuantity::ScoreEntries;
    } else if (quantity == "weight") {
        c.quantity = CheckQuantity::Weight;
        c.head = positiveInt(j, "head", where);
        c.query = positiveInt(j, "query", where);
        c.key = positiveInt(j, "key", where);
    } else if (quantity == "equivariance") {
        c.quantity = CheckQuantity::Equivariance;
    } else {
        throw InputError(where + ".quantity", "expected score_entries, weight or equivariance, got " + quoteValue(quantity));
    }
    if (j.contains("tolerance")) {
        const json& t = j.at("tolerance");
        if (!t.is_number() || !(t.get<double>() >= 0.0) || t.get<double>() > 1e6)
            throw InputError(where + ".tolerance", "expected a number from 0 to 1e6, got " + describeJson(t));
        c.tolerance = t.get<double>();
    }
    return c;
}

LessonStep parseStep(const json& j, const std::string& where) {
    if (!j.is_object()) throw InputError(where, "expected an object with \"title\", \"text\" and a preset or scenario");
    requireKnownKeys(j, {"title", "text", "preset", "scenario", "panels", "lab", "head", "check"}, where + ".");
    LessonStep step;
    step.title = stringField(j, "title", where);
    if (step.title.empty()) throw InputError(where + ".title", "is empty (a step needs a heading)");
    const json& text = member(j, "text", where);
    if (text.is_string()) {
        step.text.push_back(text.get<std::string>());
    } else if (text.is_array() && std::all_of(text.begin(), text.end(), [](const json& l) { return l.is_string(); })) {
        for (const json& l : text) step.text.push_back(l.get<std::string>());
    } else {
        throw InputError(where + ".text", "expected text or a list of lines");
    }
    if (step.text.empty()) throw InputError(where + ".text", "has no lines (a step needs its text)");
    if (j.contains("preset") == j.contains("scenario"))
        throw InputError(where, "needs exactly one of \"preset\" (a preset's name) and \"scenario\" (a scenario object)");
    if (j.contains("preset")) {
        step.presetId = stringField(j, "preset", where);
        try {
            step.scenario = loadPreset(step.presetId);
        } catch (const InputError& e) {
            throw InputError(where + ".preset", e.what());
        }
    } else {
        try {
            step.scenario = scenarioFromJson(j.at("scenario"));
        } catch (const InputError& e) {
            throw e.within(where + ".scenario");
        } catch (const json::exception& e) {
            throw InputError(where + ".scenario", e.what());
        }
    }
    if (j.contains("panels")) {
        const json& panels = j.at("panels");
        if (!panels.is_array() || panels.empty() || panels.size() > 4)
            throw InputError(where + ".panels", "expected a list of 1 to 4 panel names");
        for (std::size_t i = 0; i < panels.size(); ++i) {
            const std::string at = where + ".panels[" + std::to_string(i) + "]";
            if (!panels[i].is_string()) throw InputError(at, "expected a panel name");
            const std::string id = panels[i].get<std::string>();
            const auto& known = lessonPanelIds();
            if (std::find(known.begin(), known.end(), id) == known.end())
                throw InputError(at, "unknown panel " + quoteValue(id) + " (known: " + joinStrings(known, ", ") + ")");
            if (std::find(step.panels.begin(), step.panels.end(), id) != step.panels.end())
                throw InputError(at, "panel '" + id + "' is already in this step's list");
            step.panels.push_back(id);
        }
    }
    if (j.contains("lab")) {
        step.lab = stringField(j, "lab", where);
        const auto& labs = lessonLabNames();
        if (std::find(labs.begin(), labs.end(), step.lab) == labs.end())
            throw InputError(where + ".lab", "expected " + joinChoices(labs) + ", got " + quoteValue(step.lab));
    }
    if (j.contains("head")) {
        const json& h = j.at("head");
        if (!h.is_number_integer() || h.get<long long>() < 0 || h.get<long long>() > 4096)
            throw InputError(where + ".head", "expected a head number from 1, or 0 for the mean, got " + describeJson(h));
        step.head = h.get<int>() - 1;
    }
    if (j.contains("check")) step.check = parseCheck(j.at("check"), where + ".check");
    return step;
}

}  // namespace

const std::vector<std::string>& lessonLabNames() {
    static const std::vector<std::string> names = {"linear", "cost", "train", "flash"};
    return names;
}

const std::vector<std::string>& lessonPanelIds() {
    static const std::vector<std::string> ids = {
        "heatmap", "bars",    "heads",  "swap", "stages", "positional", "model",          "stats",    "head-view",  "neuron",     "qk-map",
        "compare", "what-if", "linear", "cost", "train",  "flash",      "value-weighted", "distance", "logit-lens", "attribution"};
    return ids;
}

Lesson parseLesson(const std::string& text, const std::string& where) {
    json j;
    try {
        j = parseJson(text, where);
    } catch (const json::parse_error& e) {
        throw InputError(where, "malformed JSON at " + lineColumnOf(text, e.byte == 0 ? 0 : e.byte - 1));
    } catch (const json::exception&) {
        throw InputError(where, "malformed JSON");
    }
    if (!j.is_object()) throw InputError(where, "expected a lesson object with \"title\" and \"steps\"");
    requireKnownKeys(j, {"title", "steps"}, where + ": ");
    Lesson lesson;
    lesson.title = stringField(j, "title", where);
    const json& steps = member(j, "steps", where);
    if (!steps.is_array() || steps.empty()) throw InputError(where + ": steps", "expected a list of at least one step");
    for (std::size_t i = 0; i < steps.size(); ++i)
        lesson.steps.push_back(parseStep(steps[i], where + ": steps[" + std::to_string(i) + "]"));
    return lesson;
}

std::vector<std::string> lessonIds() {
    std::vector<std::string> ids;
    for (const LessonSource& l : lessonSources()) ids.emplace_back(l.id);
    return ids;
}

const std::vector<Lesson>& lessons() {
    static const std::vector<Lesson> parsed = [] {
        std::vector<Lesson> out;
        for (const LessonSource& l : lessonSources()) {
            out.push_back(parseLesson(l.json, std::string("lesson ") + l.id));
            out.back().id = l.id;
        }
        return out;
    }();
    return parsed;
}

Lesson loadLesson(const std::string& nameOrPath) {
    for (const Lesson& lesson : lessons())
        if (nameOrPath == lesson.id) return lesson;
    std::error_code ec;
    if (!std::filesystem::exists(nameOrPath, ec))
        throw InputError("--lesson",
                         quoteValue(nameOrPath) + " is neither a lesson (" + joinStrings(lessonIds(), ", ") + ") nor an existing file");
    Lesson lesson = parseLesson(readTextFile(nameOrPath), nameOrPath);
    lesson.id = nameOrPath;
    return lesson;
}

}  // namespace attnviz::core
