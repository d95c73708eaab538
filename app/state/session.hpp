// The last session, restored on start: scenario, view (theme, scale, colours, selection) and
// window size, in the user's config folder ($XDG_CONFIG_HOME/attnviz/session.json).
#pragma once

#include "app/state/app_state.hpp"

#include <optional>
#include <string>

namespace attnviz::app {

struct Session {
    core::Scenario scenario;
    std::string presetId;
    ViewState view;
    int windowWidth = 1600, windowHeight = 1000;
};

inline constexpr int kSessionVersion = 1;

// $XDG_CONFIG_HOME/attnviz/session.json, or ~/.config/attnviz/session.json; "" if neither is known.
std::string sessionPath();

std::string encodeSession(const Session& session);
// Throws core::InputError naming the field when the text is not a valid session of this version.
Session decodeSession(const std::string& text, const std::string& where);

// Reads the session file; nullopt when there is none. A broken or old file throws InputError
// (the caller reports it and carries on with the defaults).
std::optional<Session> loadSession(const std::string& path);
// Writes atomically, creating the folder; throws InputError on failure.
void saveSession(const std::string& path, const Session& session);

}  // namespace attnviz::app
