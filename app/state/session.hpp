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
// (the caller reports it and carries on with the defaults). Only a regular file is read: a FIFO
// or a device at the path is an error at once, never a wait.
std::optional<Session> loadSession(const std::string& path);
// Writes atomically, creating the folder; throws InputError on failure. Text that is not valid
// UTF-8 is written repaired with its exact bytes beside it (scenarioToJson), so it is no failure.
void saveSession(const std::string& path, const Session& session);
// saveSession for the app's exit, which must not abort: "" when saved, else one line saying why
// (whatever failed); the file saved before, if any, is left as it was.
std::string trySaveSession(const std::string& path, const Session& session);

// What restoring found: the session, or a note of why there is none that the app shows.
struct RestoredSession {
    std::optional<Session> session;
    std::string notice;  // "" when the file was read, or when there was none
};
// loadSession, and never destroy what could not be read: a regular file that is broken,
// unreadable or from another version is kept aside as `path` + ".broken" (so the session saved
// at exit does not overwrite it), and the notice names it. A FIFO or a device at the path is
// reported and left alone.
RestoredSession restoreSession(const std::string& path);
// Keeps a session file aside as `path` + ".broken" (replacing an older one); returns the note:
// "<why>; the file is kept as <path>.broken". When it cannot be moved, the note says so.
std::string setAsideSession(const std::string& path, const std::string& why);

// The state the app starts on: the restored session's scenario (unless the command line named
// one), else `requested`. A restored scenario that no longer builds (say, over --max-tokens)
// does not stop the start: the file is set aside, the app starts on `requested`, and `notice`
// says so, naming the file and --fresh. An error in `requested` itself is thrown.
// The state's presetId is the session's or `requestedPreset`, with the scenario it holds.
AppState startingState(const core::Scenario& requested, const std::string& requestedPreset, const RestoredSession& restored,
                       bool explicitScenario, const core::Limits& limits, const std::string& sessionFile, std::string& notice);

}  // namespace attnviz::app
