#include "core/presets.hpp"

#include "core/error.hpp"
#include "core/format.hpp"

namespace attnviz::core {

std::vector<std::string> presetIds() {
    std::vector<std::string> ids;
    for (const PresetSource& p : presetSources()) ids.emplace_back(p.id);
    return ids;
}

Scenario loadPreset(const std::string& id) {
    for (const PresetSource& p : presetSources())
        if (id == p.id) return parseScenario(p.json, std::string("preset ") + p.id);
    throw InputError("--preset", "unknown preset '" + id + "' (known: " + joinStrings(presetIds(), ", ") + ")");
}

}  // namespace attnviz::core
