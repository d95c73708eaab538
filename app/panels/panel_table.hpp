// Every panel the app has: the view table's rows (app/views/view_table.hpp: id, title, tab, figure)
// in its order, each with how to make its panel. The one list that the app builds its panels
// from, the layout places, --panel checks and the lesson format is tested against.
#pragma once

#include "app/panels/panel.hpp"
#include "app/views/view_table.hpp"

#include <memory>
#include <string_view>
#include <vector>

namespace attnviz::app {

struct PanelInfo {
    std::string_view id;
    const char* title;  // the window's title
    const char* tab;    // its short name, on a tab when panels share a place (a small screen)
    std::unique_ptr<Panel> (*make)(const PanelInfo&);
};

const std::vector<PanelInfo>& panelTable();
// The table's entry for `id`; nullptr when no panel has it.
const PanelInfo* findPanel(std::string_view id);

}  // namespace attnviz::app
