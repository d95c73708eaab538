// Dark, light and high-contrast styles, scaled for the screen and the room.
#pragma once

#include "app/state/app_state.hpp"

namespace attnviz::app {

void applyTheme(Theme theme, float scale);

}  // namespace attnviz::app
