// libFuzzer target: bytes as the saved session ($XDG_CONFIG_HOME/attnviz/session.json), through
// decodeSession as the app's start does. Expected outcomes: a session, or core::InputError with
// one bounded line of valid UTF-8 (the app shows it and starts on the defaults). A decoded
// session has its window size, UI scale, theme, stage and lab clamped to what the app can show;
// it encodes to a file that decodes, and that file encodes again to the same bytes.
#include "app/state/actions.hpp"
#include "app/state/session.hpp"
#include "core/base/error.hpp"
#include "fuzz/check.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

namespace {

using namespace attnviz;
using app::Session;
using fuzz::check;

// InputError's place (240) and text (400) after clipping, "…" and "… (N bytes)", and ": ".
constexpr std::size_t kMaxMessage = 700;

void checkMessage(const core::InputError& e) {
    const std::string m = e.message();
    check(!m.empty(), "an InputError without a message");
    check(m.size() <= kMaxMessage, "error message longer than 700 bytes", std::to_string(m.size()));
    check(fuzz::isValidUtf8(m), "error message is not valid UTF-8");
    check(m.find_first_of("\n\r") == std::string::npos, "error message is more than one line", m);
}

// The bounds decodeSession clamps to (app/state/session.cpp).
void checkBounds(const Session& s) {
    check(s.windowWidth >= 320 && s.windowWidth <= 16384, "window width not clamped", std::to_string(s.windowWidth));
    check(s.windowHeight >= 240 && s.windowHeight <= 16384, "window height not clamped", std::to_string(s.windowHeight));
    check(std::isfinite(s.view.uiScale) && s.view.uiScale >= app::kMinUiScale && s.view.uiScale <= app::kMaxUiScale, "UI scale not clamped",
          std::to_string(s.view.uiScale));
    check(static_cast<int>(s.view.theme) <= 2, "theme out of range");
    check(s.view.stage >= 0 && s.view.stage < app::kStageCount, "stage out of range", std::to_string(s.view.stage));
    check(static_cast<int>(s.view.lab) <= 3, "lab out of range");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    Session session;
    try {
        session = app::decodeSession(text, "session.json");
    } catch (const core::InputError& e) {
        checkMessage(e);
        return 0;
    }
    checkBounds(session);

    // the app saves what it restored: that file restores the same session
    const std::string saved = app::encodeSession(session);
    Session back;
    try {
        back = app::decodeSession(saved, "saved.json");
    } catch (const core::InputError& e) {
        check(false, "a saved session does not load", e.message() + "\n" + saved);
    }
    check(app::encodeSession(back) == saved, "a saved session loads differently", saved);
    return 0;
}
