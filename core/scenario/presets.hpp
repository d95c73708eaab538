// Named presets: the scenario files under assets/scenarios/, compiled into the binary so the
// app and the command line work from any folder.
#pragma once

#include "core/scenario/scenario.hpp"

#include <string>
#include <vector>

namespace attnviz::core {

struct PresetSource {
    const char* id;    // file stem: "seed003-exam"
    const char* json;  // the file's text
};
const std::vector<PresetSource>& presetSources();

struct Preset {
    std::string id;
    Scenario scenario;
};
// Every preset, parsed once per process (menus and panels list them every frame).
const std::vector<Preset>& presets();

// The preset named `id`, or null.
const Preset* findPreset(const std::string& id);

std::vector<std::string> presetIds();
// Throws InputError("--preset", "unknown preset 'x' (known: …)").
Scenario loadPreset(const std::string& id);

}  // namespace attnviz::core
