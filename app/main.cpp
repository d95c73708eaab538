// attnviz: parse the flags, then export or open the window.
#include "app/cli.hpp"
#include "app/gui.hpp"
#include "app/platform/process.hpp"

#include <csignal>
#include <iostream>

int main(int argc, char** argv) {
    // A reader that goes away (attnviz --export - | head) makes the write fail and the run exit
    // with code 2, instead of SIGPIPE ending it before it can say so.
    std::signal(SIGPIPE, SIG_IGN);
    // Only the window wants OpenMP's workers asleep between parallel regions (they would take the
    // cores from the software rasterizer); the exports and --bench keep the runtime's short spin.
    const auto window = [argv](const attnviz::app::GuiRequest& request) {
        attnviz::platform::preferSleepingWorkers(argv);
        return attnviz::app::runGui(request);
    };
    return attnviz::app::runMain(argc, argv, window, std::cout, std::cerr);
}
