#include "app/state/session.hpp"

#include "app/state/actions.hpp"

#include "core/error.hpp"
#include "core/export.hpp"
#include "core/files.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <cstdlib>
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

Session decodeSession(const std::string& text, const std::string& where) {
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception&) {
        throw core::InputError(where, "not valid JSON");
    }
    if (!j.is_object()) throw core::InputError(where, "not a session object");
    if (!j.contains("version") || !j["version"].is_number_integer() || j["version"].get<int>() != kSessionVersion)
        throw core::InputError(where, "written by another version of attnviz");
    Session s;
    try {
        s.scenario = core::scenarioFromJson(j.at("scenario"));
        s.presetId = j.value("preset", "");
        const auto& v = j.at("view");
        s.view.theme = static_cast<Theme>(std::clamp(v.at("theme").get<int>(), 0, 2));
        s.view.colormap = core::parseColormap(v.at("colormap").get<std::string>(), "view.colormap");
        s.view.uiScale = std::clamp(v.at("ui_scale").get<float>(), kMinUiScale, kMaxUiScale);
        s.view.presenter = v.at("presenter").get<bool>();
        s.view.smallMultiples = v.at("small_multiples").get<bool>();
        s.view.selectedHead = v.at("head").get<int>();
        s.view.selectedQuery = v.at("query").get<int>();
        s.view.stage = std::clamp(v.at("stage").get<int>(), 0, kStageCount - 1);
        s.view.lab = static_cast<Lab>(std::clamp(v.value("lab", 0), 0, 3));  // sessions from before the labs have none
        s.windowWidth = std::clamp(j.at("window").at("width").get<int>(), 320, 16384);
        s.windowHeight = std::clamp(j.at("window").at("height").get<int>(), 240, 16384);
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
                 (requested.name.empty() ? std::string("the default") : "'" + core::clipText(requested.name, 60) + "'") +
                 "; " + setAsideSession(sessionFile, "start with --fresh to skip a saved session");
        return fromRequest();
    }
}

void saveSession(const std::string& path, const Session& session) {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
    if (ec) throw core::InputError(path, "cannot create the folder: " + ec.message());
    core::writeFileAtomic(path, encodeSession(session));
}

}  // namespace attnviz::app
