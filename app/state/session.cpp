#include "app/state/session.hpp"
#include "core/base/json_text.hpp"

#include "app/state/actions.hpp"

#include "core/base/error.hpp"
#include "core/base/files.hpp"
#include "core/base/utf8.hpp"
#include "core/io/export.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace attnviz::app {

std::string sessionPath() {
    namespace fs = std::filesystem;
    if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg && *xdg) return (fs::path(xdg) / "attnviz" / "session.json").string();
    if (const char* home = std::getenv("HOME"); home && *home) return (fs::path(home) / ".config" / "attnviz" / "session.json").string();
    return "";
}

std::string encodeSession(const Session& s) {
    nlohmann::json j;
    j["version"] = kSessionVersion;
    j["scenario"] = core::scenarioToJson(s.scenario);
    j["preset"] = s.presetId;
    j["view"] = {{"theme", static_cast<int>(s.view.theme)},
                 {"colormap", core::colormapName(s.view.colormap)},
                 {"colour_scale", core::colourScaleName(s.view.colourScale)},
                 {"ui_scale", s.view.uiScale},
                 {"presenter", s.view.presenter},
                 {"small_multiples", s.view.smallMultiples},
                 {"head", s.view.selectedHead},
                 {"query", s.view.selectedQuery},
                 {"stage", s.view.stage},
                 {"lab", static_cast<int>(s.view.lab)}};
    j["window"] = {{"width", s.windowWidth}, {"height", s.windowHeight}};
    return core::prettyJson(j);
}

namespace {

// A whole number of a session field, clamped to [lo, hi]. Read as long long or as a whole
// double and clamped before any narrowing: get<int>() of 1e10 would be undefined behaviour, and
// of 4294967297 would wrap to 1. A fraction or another type is an error naming the field.
int wholeNumber(const nlohmann::json& v, const char* field, int lo, int hi) {
    if (v.is_number_unsigned()) return v.get<std::uint64_t>() > static_cast<std::uint64_t>(hi) ? hi : std::clamp(v.get<int>(), lo, hi);
    if (v.is_number_integer()) return static_cast<int>(std::clamp<long long>(v.get<long long>(), lo, hi));
    if (v.is_number_float()) {
        const double d = v.get<double>();
        if (std::isfinite(d) && d == std::floor(d)) return static_cast<int>(std::clamp<double>(d, lo, hi));
    }
    throw core::InputError(field, "expected a whole number");
}

}  // namespace

Session decodeSession(const std::string& text, const std::string& where) {
    nlohmann::json j;
    try {
        j = core::parseJson(text, where);
    } catch (const nlohmann::json::exception&) {
        throw core::InputError(where, "not valid JSON");
    }
    if (!j.is_object()) throw core::InputError(where, "not a session object");
    if (!j.contains("version") || !j["version"].is_number_integer() || j["version"].get<long long>() != kSessionVersion)
        throw core::InputError(where, "written by another version of attnviz");
    Session s;
    try {
        s.scenario = core::scenarioFromJson(j.at("scenario"));
        s.presetId = j.value("preset", "");
        const auto& v = j.at("view");
        constexpr int kAny = 1 << 30;  // head and query: clamped to the model by SelectHead / SelectQuery
        s.view.theme = static_cast<Theme>(wholeNumber(v.at("theme"), "view.theme", 0, 2));
        s.view.colormap = core::parseColormap(v.at("colormap").get<std::string>(), "view.colormap");
        // sessions from before the colour scales have none
        if (v.contains("colour_scale"))
            s.view.colourScale = core::parseColourScale(v.at("colour_scale").get<std::string>(), "view.colour_scale");
        // clamped as a double first: a float conversion of 1e300 is undefined
        s.view.uiScale = static_cast<float>(std::clamp<double>(v.at("ui_scale").get<double>(), kMinUiScale, kMaxUiScale));
        s.view.presenter = v.at("presenter").get<bool>();
        s.view.smallMultiples = v.at("small_multiples").get<bool>();
        s.view.selectedHead = wholeNumber(v.at("head"), "view.head", -1, kAny);
        s.view.selectedQuery = wholeNumber(v.at("query"), "view.query", 0, kAny);
        s.view.stage = wholeNumber(v.at("stage"), "view.stage", 0, kStageCount - 1);
        // sessions from before the labs have none
        s.view.lab = static_cast<Lab>(v.contains("lab") ? wholeNumber(v.at("lab"), "view.lab", 0, 3) : 0);
        s.windowWidth = wholeNumber(j.at("window").at("width"), "window.width", 320, 16384);
        s.windowHeight = wholeNumber(j.at("window").at("height"), "window.height", 240, 16384);
    } catch (const core::InputError& e) {
        throw e.within(where);
    } catch (const nlohmann::json::exception& e) {
        throw core::InputError(where, std::string("malformed session: ") + e.what());
    }
    return s;
}

std::optional<Session> loadSession(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (path.empty()) return std::nullopt;
    const fs::file_status status = fs::status(path, ec);
    if (!fs::exists(status)) return std::nullopt;
    if (!fs::is_regular_file(status)) throw core::InputError(path, "is not a regular file");
    return decodeSession(core::readTextFile(path), path);
}

std::string setAsideSession(const std::string& path, const std::string& why) {
    const std::string aside = path + ".broken";
    if (::rename(path.c_str(), aside.c_str()) != 0)
        return why + "; it could not be kept aside (" + std::strerror(errno) + ") and is left as it is";
    return why + "; the file is kept as " + aside;
}

RestoredSession restoreSession(const std::string& path) {
    namespace fs = std::filesystem;
    RestoredSession r;
    try {
        r.session = loadSession(path);
    } catch (const core::InputError& e) {
        std::error_code ec;
        const bool regular = fs::is_regular_file(fs::symlink_status(path, ec));
        r.notice = "Ignored the saved session: " + (regular ? setAsideSession(path, e.message()) : e.message());
    }
    return r;
}

AppState startingState(const core::Scenario& requested, const std::string& requestedPreset, const RestoredSession& restored,
                       bool explicitScenario, const core::Limits& limits, const std::string& sessionFile, std::string& notice) {
    notice = restored.notice;
    const auto fromRequest = [&] {
        AppState state = makeState(requested, limits);
        state.presetId = requestedPreset;
        return state;
    };
    if (!restored.session || explicitScenario) return fromRequest();
    try {
        AppState state = makeState(restored.session->scenario, limits);
        state.presetId = restored.session->presetId;
        return state;
    } catch (const core::InputError& e) {
        notice = "The saved session's scenario does not open (" + e.message() + "), so attnviz started on " +
                 (requested.name.empty() ? std::string("the default") : "'" + core::clipText(requested.name, 60) + "'") + "; " +
                 setAsideSession(sessionFile, "start with --fresh to skip a saved session");
        return fromRequest();
    }
}

void saveSession(const std::string& path, const Session& session) {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
    if (ec) throw core::InputError(path, "cannot create the folder: " + ec.message());
    core::writeFileAtomic(path, encodeSession(session));
}

std::string trySaveSession(const std::string& path, const Session& session) {
    try {
        saveSession(path, session);
        return "";
    } catch (const core::InputError& e) {
        return e.message();
    } catch (const std::exception& e) {  // out of memory, or anything else: reported, never an abort
        return path + ": " + core::oneLine(core::clipText(core::sanitizeUtf8(e.what()), 200));
    }
}

}  // namespace attnviz::app
