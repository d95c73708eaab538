// Named presets: the scenario files under assets/scenarios/, compiled into the binary so the
// app and the command line work from any folder.
#pragma once

#include "core/scenario.hpp"

#include <string>
#include <vector>

namespace attnviz::core {

struct PresetSource {
    const char* id;    // file stem: "seed003-exam"
    const char* json;  // the file's text
};
const std::vector<PresetSource>& presetSources();

std::vector<std::string> presetIds();
// Throws InputError("--preset", "unknown preset 'x' (known: …)").
Scenario loadPreset(const std::string& id);

}  // namespace attnviz::core
