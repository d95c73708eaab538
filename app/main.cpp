// attnviz: parse the flags, then export or open the window.
#include "app/cli.hpp"
#include "app/gui.hpp"

#include <iostream>

int main(int argc, char** argv) {
    attnviz::app::preferSleepingWorkers(argv);
    return attnviz::app::runMain(argc, argv, attnviz::app::runGui, std::cout, std::cerr);
}
