#include "core/scenario/presets.hpp"

#include "core/base/error.hpp"
#include "core/base/format.hpp"

namespace attnviz::core {

const std::vector<Preset>& presets() {
    static const std::vector<Preset> parsed = [] {
        std::vector<Preset> out;
        for (const PresetSource& p : presetSources()) out.push_back({p.id, parseScenario(p.json, std::string("preset ") + p.id)});
        return out;
    }();
    return parsed;
}

std::vector<std::string> presetIds() {
    std::vector<std::string> ids;
    for (const PresetSource& p : presetSources()) ids.emplace_back(p.id);
    return ids;
}

const Preset* findPreset(const std::string& id) {
    for (const Preset& p : presets())
        if (id == p.id) return &p;
    return nullptr;
}

Scenario loadPreset(const std::string& id) {
    if (const Preset* p = findPreset(id)) return p->scenario;
    throw InputError("--preset", "unknown preset " + quoteValue(id) + " (known: " + joinStrings(presetIds(), ", ") + ")");
}

}  // namespace attnviz::core
