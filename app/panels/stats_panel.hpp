// Every head's statistics as a sortable table (layer, head, its kv head in a grouped model, each
// score), the model's sink share at a threshold, the induction test, and the retrieval test with
// the selected head's depth × length grid: click a row to select that layer and head.
#pragma once

#include "app/panels/panel.hpp"

#include <vector>

namespace attnviz::app {

class StatsPanel : public Panel {
public:
    using Panel::Panel;
    void draw(PanelContext& ctx) override;

private:
    // The rows in the table's order (head indices), sorted when the sort or the numbers change.
    std::vector<int> m_rows;
    std::uint64_t m_sortedFor = 0;
    int m_retrievalLongest = 0;  // the retrieval test's longest filler (0: not chosen yet)
};

}  // namespace attnviz::app
