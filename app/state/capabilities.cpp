#include "app/state/capabilities.hpp"

namespace attnviz::app {

Capabilities capabilities(const AppState& state) {
    if (state.imported) return {.manyLayers = true, .givenMaps = true};
    if (state.loaded) return {.manyLayers = true, .weights = true, .rerun = true, .editable = true, .ownPass = true};
    return {.weights = true, .editable = true};
}

}  // namespace attnviz::app
