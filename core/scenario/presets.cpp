#include "core/scenario/presets.hpp"

#include "core/base/error.hpp"
#include "core/base/format.hpp"

#include <algorithm>

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
    // The ids whose start matches the name given (a typo's neighbours), else all of them; a list
    // too long for one error line ends with where the rest are.
    const std::vector<std::string>& ids = presetIds();
    std::vector<std::string> near;
    for (const std::string& known : ids)
        if (!id.empty() && known.compare(0, std::min<std::size_t>(id.size(), 7), id, 0, std::min<std::size_t>(id.size(), 7)) == 0)
            near.push_back(known);
    const std::vector<std::string>& shown = near.empty() ? ids : near;
    std::string list;
    std::size_t listed = 0;
    for (; listed < shown.size() && list.size() + shown[listed].size() < 280; ++listed) list += (listed ? ", " : "") + shown[listed];
    if (listed < shown.size()) list += " and " + std::to_string(shown.size() - listed) + " more: attnviz --list-presets";
    throw InputError("--preset", "unknown preset " + quoteValue(id) + " (" + (near.empty() ? "known: " : "did you mean: ") + list + ")");
}

}  // namespace attnviz::core
