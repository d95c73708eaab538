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
    attnviz::platform::preferSleepingWorkers(argv);
    return attnviz::app::runMain(argc, argv, attnviz::app::runGui, std::cout, std::cerr);
}
