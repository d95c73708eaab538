// The saved session: what it keeps, and sessions written before a field existed.
#include "app/state/session.hpp"
#include "core/presets.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

using namespace attnviz;
using namespace attnviz::app;

TEST(Session, KeepsTheViewAndTheLab) {
    Session s;
    s.scenario = core::loadPreset("default");
    s.presetId = "default";
    s.view.theme = Theme::Light;
    s.view.selectedHead = 2;
    s.view.lab = Lab::Cost;
    s.windowWidth = 1280;
    const Session back = decodeSession(encodeSession(s), "session.json");
    EXPECT_EQ(back.presetId, "default");
    EXPECT_EQ(back.view.theme, Theme::Light);
    EXPECT_EQ(back.view.selectedHead, 2);
    EXPECT_EQ(back.view.lab, Lab::Cost);
    EXPECT_EQ(back.windowWidth, 1280);
}

TEST(Session, OneWrittenBeforeTheLabsOpensWithoutOne) {
    Session s;
    s.scenario = core::loadPreset("default");
    s.view.lab = Lab::Linear;
    nlohmann::json j = nlohmann::json::parse(encodeSession(s));
    j["view"].erase("lab");
    EXPECT_EQ(decodeSession(j.dump(), "session.json").view.lab, Lab::None);
    j["view"]["lab"] = 77;  // out of range: clamped, never an invalid enum
    EXPECT_EQ(decodeSession(j.dump(), "session.json").view.lab, Lab::Train);  // the last lab
}
